/**
 * Moving an index: `portico index copy` from a project's embedded store into PostgreSQL and back
 * keeps every record whole (uuid, created_by, created_at, label, archived), is idempotent and
 * resumable, and `portico reindex --store postgres://…` rebuilds a project's rows from its
 * interface directories. `portico get --store postgres://…` creates in the PostgreSQL index.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../packages/server/src/cli/main.js';
import { INDEX_DIR, LowdbStore } from '../packages/server/src/store/lowdb-store.js';
import { PostgresIndex } from '../packages/server/src/store/postgres/postgres-store.js';
import { record } from '../packages/server/src/store/query.arbitraries.js';
import type { InterfaceRecord } from '../packages/server/src/store/store.js';
import { cleanup, ROOT, tempProject } from './helpers.js';
import { allRecords, expectExactTotals, startPostgres, type TestPostgres } from './support/postgres.js';

let postgres: TestPostgres;
let index: PostgresIndex;
const dirs: string[] = [];

beforeAll(async () => {
  postgres = await startPostgres({ durable: false });
  index = PostgresIndex.connect(postgres.url);
});

afterAll(async () => {
  await cleanup();
  await index?.close();
  await postgres?.close();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function project(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'portico-copy-'));
  dirs.push(dir);
  return dir;
}

const RECORDS: InterfaceRecord[] = Array.from({ length: 1500 }, (_, i) =>
  record(`rec-${String(i).padStart(4, '0')}`, { i, tag: `t${i % 3}` }, {
    created_by: i % 2 ? 'ada' : 'grace',
    created_at: new Date(Date.UTC(2025, 0, 1, 0, 0, i)).toISOString(),
    label: i % 10 ? null : `run ${i}`,
    archived: i % 7 === 0,
  }),
);

async function embedded<T>(dir: string, body: (store: LowdbStore) => Promise<T>): Promise<T> {
  const store = await LowdbStore.open(dir);
  try {
    return await body(store);
  } finally {
    await store.close();
  }
}

describe('portico index copy', () => {
  it('copies an embedded index into PostgreSQL whole, again without changes, and picks up a changed label', async () => {
    const dir = await project();
    await embedded(dir, (store) => Promise.all(RECORDS.map((r) => store.insert(r))));

    expect(await main(['index', 'copy', '--from', dir, '--to', postgres.url])).toBe(0);
    const target = await index.open(dir);
    expect(await allRecords(target)).toEqual(RECORDS);

    expect(await main(['index', 'copy', '--from', dir, '--to', postgres.url])).toBe(0);
    expect(await allRecords(target)).toEqual(RECORDS);

    await embedded(dir, (store) => store.update('rec-0003', { label: 'renamed', archived: true }));
    expect(await main(['index', 'copy', '--from', dir, '--to', postgres.url])).toBe(0);
    expect(await target.get('rec-0003')).toEqual({ ...RECORDS[3], label: 'renamed', archived: true });
    await expectExactTotals(target);
  });

  it('resumes after an interruption: a partial copy is completed by running it again', async () => {
    const dir = await project();
    await embedded(dir, (store) => Promise.all(RECORDS.map((r) => store.insert(r))));
    // What an interrupted copy leaves: some records there already.
    const target = await index.open(dir);
    await Promise.all(RECORDS.slice(0, 400).map((r) => target.insert(r)));
    expect(await main(['index', 'copy', '--from', dir, '--to', postgres.url])).toBe(0);
    expect(await allRecords(target)).toEqual(RECORDS);
    await expectExactTotals(target);
  });

  it('copies back from PostgreSQL into an embedded index', async () => {
    const dir = await project();
    const source = await index.open(dir);
    await Promise.all(RECORDS.map((r) => source.insert(r)));
    await rm(path.join(dir, '.portico', INDEX_DIR), { recursive: true, force: true });
    expect(await main(['index', 'copy', '--from', postgres.url, '--to', dir])).toBe(0);
    expect(await embedded(dir, allRecords)).toEqual(RECORDS);
  });

  it('refuses two project directories, and two databases without --project', async () => {
    const [a, b] = [await project(), await project()];
    expect(await main(['index', 'copy', '--from', a, '--to', b])).toBe(2);
    expect(await main(['index', 'copy', '--from', postgres.url, '--to', postgres.url])).toBe(2);
  });
});

describe('portico reindex --store postgres://…', () => {
  it('rebuilds the project rows from the interface directories, keeping created_by, label and archived', async () => {
    const dir = await project();
    // The embedded store writes each record beside its data; reindex reads them back.
    await embedded(dir, (store) => Promise.all(RECORDS.slice(0, 200).map((r) => store.insert(r))));
    const target = await index.open(dir);
    // A row whose interface directory is gone: reindex drops it.
    await target.insert(record('stale', {}));
    await rm(path.join(dir, '.portico', 'interfaces', 'stale'), { recursive: true });
    expect(await main(['reindex', dir, '--store', postgres.url])).toBe(0);
    expect(await allRecords(target)).toEqual(RECORDS.slice(0, 200));
    await expectExactTotals(target);
  });
});

describe('portico get --store postgres://…', () => {
  const BIN = path.join(ROOT, 'packages/server/bin/portico.js');
  const run = promisify(execFile);

  it('creates the record in the PostgreSQL index (no embedded index), and finds it again', async () => {
    const dir = await tempProject();
    const first = await run(process.execPath, [BIN, 'get', 'counter', 'start=7', '--project', dir, '--store', postgres.url, '--user', 'cli-user']);
    const printed = JSON.parse(first.stdout);
    expect(printed).toMatchObject({ module: 'counter', config: { start: 7 }, created_by: 'cli-user' });
    const stored = await (await index.open(await realpath(dir))).get(printed.uuid);
    expect(stored).toMatchObject({ uuid: printed.uuid, created_by: 'cli-user', created_at: printed.created_at });
    expect(existsSync(path.join(dir, '.portico', INDEX_DIR))).toBe(false);
    // PORTICO_STORE works as --store; the same version finds the same record.
    const again = await run(process.execPath, [BIN, 'get', 'counter', 'start=7', '--project', dir], { env: { ...process.env, PORTICO_STORE: postgres.url } });
    expect(JSON.parse(again.stdout)).toEqual(printed);
  });

  it('says so when the database cannot be reached', async () => {
    const dir = await tempProject();
    const unreachable = `postgres://nobody@localhost/none?host=${encodeURIComponent(path.join(dir, 'no-socket-here'))}`;
    const res = await run(process.execPath, [BIN, 'get', 'counter', '--project', dir, '--store', unreachable]).catch((err) => err);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('portico get: store_unavailable');
  });
});
