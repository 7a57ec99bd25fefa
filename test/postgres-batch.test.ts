/**
 * Group commit in the PostgreSQL store (store/postgres/batch.ts): creates that arrive together
 * share one INSERT, and still give one record per uuid with every caller getting that record; a
 * record that fails on its own fails only its own create, not the others of its batch.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresIndex } from '../packages/server/src/store/postgres/postgres-store.js';
import { record } from '../packages/server/src/store/query.arbitraries.js';
import { startPostgres, type TestPostgres } from './support/postgres.js';

let postgres: TestPostgres;
let index: PostgresIndex;
let admin: pg.Client;

beforeAll(async () => {
  postgres = await startPostgres({ durable: false });
  index = PostgresIndex.connect(postgres.url);
  admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
});

afterAll(async () => {
  await admin?.end();
  await index?.close();
  await postgres?.close();
});

describe('creates that arrive together', () => {
  it('share a few INSERT statements, one record per uuid, every caller gets that record', async () => {
    const store = await index.open('/srv/batched');
    // 400 creates of 200 uuids, each uuid twice with different creation times.
    const records = Array.from({ length: 400 }, (_, i) =>
      record(`b-${i % 200}`, { i: i % 200 }, { created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() }),
    );
    const answers = await Promise.all(records.map((r) => store.insert(r)));
    for (let i = 0; i < 200; i++) {
      const [first, second] = [answers[i]!, answers[i + 200]!];
      expect(first.record).toEqual(second.record);
      expect([first.created, second.created].sort()).toEqual([false, true]);
      expect(await store.get(`b-${i}`)).toEqual(first.record);
    }
    expect((await store.search({ limit: 1 })).total).toBe(200);
    // Each INSERT that added rows appended one delta to the project's 'all' count.
    const { rows } = await admin.query("SELECT count(*)::int AS n FROM portico_counts WHERE project = '/srv/batched' AND dimension = 'all'");
    expect(rows[0].n).toBeGreaterThan(0);
    expect(rows[0].n).toBeLessThan(10);
  });

  it('a record that fails alone fails only its own create', async () => {
    const store = await index.open('/srv/isolated');
    // A created_at too long for the b-tree index newest first: PostgreSQL refuses that row. (The
    // gateway never writes one; a record copied from a damaged file could carry it. Labels of any
    // length fit since schema 3 indexes only their prefix.)
    const long = Array.from({ length: 3000 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20000))).join('');
    const good = Array.from({ length: 20 }, (_, i) => record(`ok-${i}`, { i }));
    const settled = await Promise.allSettled([...good.slice(0, 10), record('too-long', {}, { created_at: long }), ...good.slice(10)].map((r) => store.insert(r)));
    expect(settled.map((s) => s.status)).toEqual([...Array(10).fill('fulfilled'), 'rejected', ...Array(10).fill('fulfilled')]);
    expect((await store.search({ limit: 100 })).items.map((r) => r.uuid).sort()).toEqual(good.map((r) => r.uuid).sort());
  });
});

describe('a connection the server ends in the middle of a transaction', () => {
  it('fails that transaction as store_unavailable, leaves nothing unhandled, and the index answers again', async () => {
    let backend = 0;
    let ended!: () => void;
    const connectionEnded = new Promise<void>((resolve) => (ended = resolve));
    let inTransaction!: () => void;
    const started = new Promise<void>((resolve) => (inTransaction = resolve));
    const transaction = index.transaction(async (client) => {
      backend = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      // pg's own listener runs first: by the time this one runs, the client has reported the end.
      (client as unknown as { connection: NodeJS.EventEmitter }).connection.once('end', ended);
      inTransaction();
      await connectionEnded; // between two statements, as a compaction is while it waits for its lock
      await client.query('SELECT 1');
    });
    await started;
    // Awaited from before the end: the transaction may fail before pg_terminate_backend answers.
    const failed = expect(transaction).rejects.toMatchObject({ code: 'store_unavailable' });
    await admin.query('SELECT pg_terminate_backend($1)', [backend]);
    await failed;
    const store = await index.open('/srv/after-terminate');
    await store.insert(record('after', {}));
    expect((await store.search({ limit: 1 })).total).toBe(1);
  });
});
