/**
 * Instance leases in a real PostgreSQL (store/postgres/leases.ts), the store alone: gateways
 * racing for one instance at once get one owner and are all told who it is, whether the lease was
 * free or had run out; a live lease is never taken from its holder; renew answers what a gateway
 * still holds, release gives leases back; a lease taken over names whom it was taken from, and
 * goes back to that gateway (handBack) only from its holder.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresIndex } from '../packages/server/src/store/postgres/postgres-store.js';
import { PostgresLeases } from '../packages/server/src/store/postgres/leases.js';
import { leaseKey, type LeaseHolder } from '../packages/server/src/store/leases.js';
import { startPostgres, type TestPostgres } from './support/postgres.js';

let postgres: TestPostgres;
/** Each "gateway" has a pool of its own, as separate gateway processes do. */
let indexes: PostgresIndex[] = [];
let gateways: PostgresLeases[] = [];
const GATEWAYS = 8;
const LONG = 60_000;

beforeAll(async () => {
  postgres = await startPostgres({ durable: false });
  indexes = Array.from({ length: GATEWAYS }, () => PostgresIndex.connect(postgres.url));
  gateways = indexes.map((index) => new PostgresLeases(index));
  await Promise.all(indexes.map((index) => index.ready()));
});

afterAll(async () => {
  await Promise.all(indexes.map((index) => index.close()));
  await postgres?.close();
});

const address = (i: number) => `http://127.0.0.1:${9000 + i}`;

/** Every gateway claims (project, uuid) at once, each under its own id. */
function race(project: string, uuid: string, leaseMs = LONG): Promise<LeaseHolder[]> {
  return Promise.all(gateways.map((leases, i) => leases.claim(project, uuid, `gateway-${i}`, address(i), leaseMs, 0)));
}

/** One owner, named alike in every answer, with its own address. */
function expectOneOwner(answers: LeaseHolder[]): string {
  const owners = new Set(answers.map((answer) => `${answer.owner} ${answer.address}`));
  expect(owners.size).toBe(1);
  const [owner] = answers.map((answer) => answer.owner);
  expect(answers[0]!.address).toBe(address(Number(owner!.split('-')[1])));
  for (const answer of answers) expect(answer.remainingMs).toBeGreaterThan(0);
  return owner!;
}

describe('instance leases (PostgreSQL)', () => {
  it('gateways racing for a free instance: exactly one owner, and every loser is told that owner', async () => {
    for (let round = 0; round < 25; round++) {
      const answers = await race('/projects/race', `free-${round}`);
      const owner = expectOneOwner(answers);
      // Nobody had it: nobody took it from anyone.
      expect(answers.filter((answer) => answer.previous)).toEqual([]);
      // …and the database agrees: the owner renews it, nobody else holds anything there.
      const i = Number(owner.split('-')[1]);
      expect(await gateways[i]!.renew(owner, LONG)).toEqual(new Set([leaseKey('/projects/race', `free-${round}`)]));
      await gateways[i]!.release(owner);
    }
  });

  it('gateways racing for a lease that ran out: exactly one takes it over, and every loser is told that one', async () => {
    for (let round = 0; round < 25; round++) {
      const uuid = `expired-${round}`;
      // A gateway that died: its lease (1 ms) has run out by the time the others ask.
      await gateways[0]!.claim('/projects/race', uuid, 'dead-gateway', 'http://127.0.0.1:1', 1, 0);
      await new Promise((resolve) => setTimeout(resolve, 5));
      const answers = await race('/projects/race', uuid);
      const owner = expectOneOwner(answers);
      expect(owner).not.toBe('dead-gateway');
      // The winner alone is told whom it took the lease from.
      expect(answers.filter((answer) => answer.previous)).toEqual([{ owner, address: address(Number(owner.split('-')[1])), remainingMs: expect.any(Number), previous: { owner: 'dead-gateway', address: 'http://127.0.0.1:1' } }]);
      // The dead gateway, were it to come back, holds nothing any more.
      expect(await gateways[0]!.renew('dead-gateway', LONG)).toEqual(new Set());
    }
  });

  it('a live lease is not taken from its holder; its holder claiming again keeps it', async () => {
    const held = await gateways[0]!.claim('/projects/live', 'u1', 'holder', address(0), LONG, 0);
    expect(held.owner).toBe('holder');
    const other = await gateways[1]!.claim('/projects/live', 'u1', 'other', address(1), LONG, 0);
    expect(other).toMatchObject({ owner: 'holder', address: address(0) });
    expect((await gateways[0]!.claim('/projects/live', 'u1', 'holder', address(0), LONG, 0)).owner).toBe('holder');
    // The same uuid in another project is another instance.
    expect((await gateways[1]!.claim('/projects/other', 'u1', 'other', address(1), LONG, 0)).owner).toBe('other');
  });

  it('renew answers the leases still held; release gives back some or all, and a released lease is free at once', async () => {
    const leases = gateways[2]!;
    for (const uuid of ['r1', 'r2', 'r3']) await leases.claim('/projects/renew', uuid, 'renewer', address(2), LONG, 0);
    expect(await leases.renew('renewer', LONG)).toEqual(new Set(['r1', 'r2', 'r3'].map((uuid) => leaseKey('/projects/renew', uuid))));
    await leases.release('renewer', [leaseKey('/projects/renew', 'r1')]);
    expect(await leases.renew('renewer', LONG)).toEqual(new Set(['r2', 'r3'].map((uuid) => leaseKey('/projects/renew', uuid))));
    expect((await gateways[3]!.claim('/projects/renew', 'r1', 'next', address(3), LONG, 0)).owner).toBe('next');
    await leases.release('renewer');
    expect(await leases.renew('renewer', LONG)).toEqual(new Set());
    expect((await gateways[3]!.claim('/projects/renew', 'r2', 'next', address(3), LONG, 0)).owner).toBe('next');
  });

  it('a lease taken over goes back to its holder before (handBack) only from the gateway that took it, for a lease time', async () => {
    await gateways[4]!.claim('/projects/back', 'b1', 'cut-off', address(4), 1, 0);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const taken = await gateways[5]!.claim('/projects/back', 'b1', 'taker', address(5), LONG, 0);
    expect(taken).toMatchObject({ owner: 'taker', previous: { owner: 'cut-off', address: address(4) } });
    // Only the holder can give it away.
    expect(await gateways[6]!.handBack('/projects/back', 'b1', 'stranger', { owner: 'stranger', address: address(6) }, LONG)).toBe(false);
    expect(await gateways[5]!.handBack('/projects/back', 'b1', 'taker', taken.previous!, LONG)).toBe(true);
    expect(await gateways[5]!.renew('taker', LONG)).toEqual(new Set());
    // Its holder before renews it as its own again, and it is live: nobody takes it.
    expect(await gateways[4]!.renew('cut-off', LONG)).toEqual(new Set([leaseKey('/projects/back', 'b1')]));
    const after = await gateways[7]!.claim('/projects/back', 'b1', 'late', address(7), LONG, 0);
    expect(after).toMatchObject({ owner: 'cut-off', address: address(4) });
    expect(after.previous).toBeUndefined();
  });
});
