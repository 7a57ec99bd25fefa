/**
 * Runs are one view (issue #30): two gateways serving one project (on a shared PostgreSQL index)
 * each see, report, follow and cancel every run of it, whichever gateway dispatched it, without a
 * restart. The run folder is the record: a uuid not known is read from its folder at once, and
 * listings read the executions folder again when their listing is older than RUNS_RESCAN_MS.
 * Faults: a half-written or unreadable run folder is left out of listings with a logged reason and
 * answers 409 execution_unreadable by uuid; a cancel of a run another gateway saw finish is 204.
 * Runs wait for a file the test writes, so nothing depends on timing.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, Client, gateway, tempProject } from './helpers.js';
import { startPostgres, type TestPostgres } from './support/postgres.js';
import { WAITER } from './support/waiter.js';

type Info = { uuid: string; status: string; cancelled: boolean; error: { exception: string } | null };

let postgres: TestPostgres;
let project: string;
let a: Awaited<ReturnType<typeof gateway>>;
let b: Awaited<ReturnType<typeof gateway>>;
const logsB: string[] = [];

beforeAll(async () => {
  postgres = await startPostgres({ durable: false });
  project = await tempProject(WAITER);
  a = await gateway({ project, store: postgres.url });
  b = await gateway({ project, store: postgres.url, log: (line) => logsB.push(line) });
});

afterAll(async () => {
  await cleanup();
  await postgres?.close();
});

const uuids = async (g: { url: string }): Promise<string[]> => {
  const res = await api(g, 'GET', '/v1/executions');
  expect(res.status).toBe(200);
  return res.body.map((e: Info) => e.uuid);
};
const statusOf = async (g: { url: string }, uuid: string): Promise<string> => (await api(g, 'GET', `/v1/executions/${uuid}`)).body.status;
const dispatch = async (g: { url: string }, name: string): Promise<string> => {
  const res = await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'waiter', version: [{ name }] }] });
  expect(res.status).toBe(200);
  return res.body.uuid;
};
const ENDED = ['finished', 'failed', 'interrupted'];

describe('runs are one view across gateways (local executor)', () => {
  for (const [from, to, label] of [
    ['a', 'b', 'A dispatches, B'],
    ['b', 'a', 'B dispatches, A'],
  ] as const) {
    it(`${label} lists it (after listing first), reports it, follows it on the socket and cancels it`, async () => {
      const via = from === 'a' ? a : b;
      const other = to === 'a' ? a : b;
      await uuids(other); // the other gateway has read the executions folder before the run exists
      const uuid = await dispatch(via, `never-${from}`);
      await expect.poll(() => uuids(other), { timeout: 5_000, interval: 50 }).toContain(uuid);
      await expect.poll(() => statusOf(other, uuid), { timeout: 15_000, interval: 50 }).toBe('running');
      await expect.poll(async () => (await api(other, 'GET', `/v1/executions/${uuid}/output`)).body.output, { timeout: 10_000, interval: 50 }).toContain(`waiting for never-${from}`);

      const c = await Client.open(other.url, { path: '/v1/executions/ws' });
      const connected = await c.request({ type: 'connect', target: uuid, offset: 0 });
      expect(connected).toMatchObject({ type: 'connected', payload: { uuid } });
      await c.waitFor((f) => f.type === 'output' && String(f.payload.output).includes('waiting for'), 10_000);

      expect((await api(other, 'POST', `/v1/executions/${uuid}/cancel`)).status).toBe(204);
      await expect.poll(() => statusOf(other, uuid), { timeout: 15_000, interval: 50 }).toBe('interrupted');
      expect(await statusOf(via, uuid)).toBe('interrupted');
      await c.waitFor((f) => f.type === 'status' && f.payload.status === 'interrupted', 10_000);
      c.close();
    });
  }

  it('a uuid dispatched elsewhere is found by uuid at once, before any listing sees it', async () => {
    await uuids(b);
    const uuid = await dispatch(a, 'go-at-once');
    expect((await api(b, 'GET', `/v1/executions/${uuid}`)).status).toBe(200);
    await writeFile(path.join(project, 'go-at-once'), '');
    await expect.poll(() => statusOf(b, uuid), { timeout: 15_000, interval: 50 }).toBe('finished');
  });

  it('fault: a cancel through B of a run A saw finish meanwhile answers 204 and changes nothing', async () => {
    await uuids(b);
    const uuid = await dispatch(a, 'go-finish');
    await expect.poll(() => statusOf(a, uuid), { timeout: 15_000, interval: 50 }).toBe('running');
    await writeFile(path.join(project, 'go-finish'), '');
    await expect.poll(() => statusOf(a, uuid), { timeout: 15_000, interval: 50 }).toBe('finished');
    expect((await api(b, 'POST', `/v1/executions/${uuid}/cancel`)).status).toBe(204);
    const info = (await api(b, 'GET', `/v1/executions/${uuid}`)).body as Info;
    expect(info).toMatchObject({ status: 'finished', cancelled: false, error: null });
    expect(existsSync(path.join(project, '.portico/executions', uuid, 'cancelled'))).toBe(false);
    expect(await statusOf(a, uuid)).toBe('finished');
  });

  it('fault: half-written or unreadable run folders are skipped with a logged reason and answer 409, never a crash', async () => {
    await uuids(b);
    const root = path.join(project, '.portico/executions');
    const truncated = 'f'.repeat(24);
    const empty = 'e'.repeat(24);
    await mkdir(path.join(root, truncated), { recursive: true });
    await writeFile(path.join(root, truncated, 'execution.json'), `{"uuid": "${truncated}", "created_at": "2026-`);
    await mkdir(path.join(root, empty), { recursive: true });

    const good = await dispatch(a, 'go-fault');
    await expect.poll(() => uuids(b), { timeout: 5_000, interval: 50 }).toContain(good);
    const listed = await uuids(b);
    expect(listed).not.toContain(truncated);
    expect(listed).not.toContain(empty);
    expect(logsB.some((line) => line.includes(truncated) && line.includes('not valid JSON'))).toBe(true);
    expect(logsB.some((line) => line.includes(empty) && line.includes('no execution.json'))).toBe(true);

    for (const uuid of [truncated, empty]) {
      const got = await api(b, 'GET', `/v1/executions/${uuid}`);
      expect(got.status).toBe(409);
      expect(got.body.code).toBe('execution_unreadable');
      expect((await api(b, 'GET', `/v1/executions/${uuid}/output`)).status).toBe(409);
      expect((await api(b, 'POST', `/v1/executions/${uuid}/cancel`)).status).toBe(409);
    }
    expect((await api(b, 'GET', '/v1/executions/nope')).status).toBe(404);

    // Once its execution.json is whole, the run folder is a run like any other.
    await writeFile(
      path.join(root, truncated, 'execution.json'),
      JSON.stringify({ uuid: truncated, project, created_at: new Date(Date.now() - 3_600_000).toISOString(), created_by: 'x', parent: null, interfaces: [] }),
    );
    await expect.poll(() => uuids(b), { timeout: 5_000, interval: 50 }).toContain(truncated);
    expect((await api(b, 'GET', `/v1/executions/${truncated}`)).status).toBe(200);

    // The gateway serves on: the good run is followed to its end.
    await writeFile(path.join(project, 'go-fault'), '');
    await expect.poll(() => statusOf(b, good), { timeout: 15_000, interval: 50 }).toBe('finished');
    expect(ENDED).toContain(await statusOf(a, good));
  });
});
