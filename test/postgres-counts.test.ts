/**
 * Exact totals from the trigger-kept counts (store/postgres/counts.ts): every total the counts
 * answer equals the number of matching records, after concurrent creates through two gateways,
 * label and archive changes, deletes and compaction (also while creates go on), and after a
 * database of schema version 1 is migrated and its counts backfilled. The migration to version 5
 * (kind 'Interface', the class name in class_name) runs in one transaction: cut off before its
 * commit, it leaves version 4 as it was, and the next start migrates again.
 */
import { realpath } from 'node:fs/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresIndex } from '../packages/server/src/store/postgres/postgres-store.js';
import { migrate, MIGRATIONS, SCHEMA_VERSION } from '../packages/server/src/store/postgres/schema.js';
import { record } from '../packages/server/src/store/query.arbitraries.js';
import { seedPostgres } from '../bench/postgres-seed.mjs';
import { api, cleanup, gateway, tempProject } from './helpers.js';
import { expectExactTotals, startPostgres, type TestPostgres } from './support/postgres.js';

let postgres: TestPostgres;
let admin: pg.Client;

beforeAll(async () => {
  postgres = await startPostgres({ durable: false });
  admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
});

afterAll(async () => {
  await cleanup();
  await admin?.end();
  await postgres?.close();
});

/** Groups of one project that hold more than one count row (deltas not folded yet). */
async function unfoldedGroups(project: string): Promise<number> {
  const { rows } = await admin.query(
    'SELECT 1 FROM portico_counts WHERE project = $1 GROUP BY dimension, value, archived HAVING count(*) > 1',
    [project],
  );
  return rows.length;
}

/** Some records of one project with a spread of modules, classes, creators and labels. */
const varied = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) =>
    record(`${prefix}-${i}`, { i }, { module: `m${i % 3}`, class_name: `K${i % 2}`, created_by: ['ada', 'grace', 'alan'][i % 3]!, label: i % 4 ? null : `l${i % 8}`, archived: i % 5 === 0 }),
  );

describe('schema migration', () => {
  // First in this file: it starts from an empty database, as an older gateway would have left it.
  it('migrates a version-1 database at start and backfills the counts of its rows', async () => {
    await admin.query('CREATE TABLE portico_schema (version integer NOT NULL); INSERT INTO portico_schema VALUES (1)');
    await admin.query(MIGRATIONS[0]!);
    await seedPostgres(admin, '/srv/old', 3000);
    await seedPostgres(admin, '/srv/other', 500);

    const index = PostgresIndex.connect(postgres.url);
    try {
      const store = await index.open('/srv/old');
      expect((await admin.query('SELECT version FROM portico_schema')).rows).toEqual([{ version: SCHEMA_VERSION }]);
      expect(await unfoldedGroups('/srv/old')).toBe(0);
      expect((await store.search({ limit: 1 })).total).toBe(3000 - 3000 / 50);
      // Version 5: the class names the seed put in kind (Model<i % 3>) are in class_name now.
      expect((await store.search({ kind: 'Interface', limit: 1 })).total).toBe(3000 - 3000 / 50);
      expect((await store.search({ class_name: 'Model1', include_archived: true, limit: 1 })).total).toBe(1000);
      expect((await store.search({ kind: 'Model1', limit: 1 })).total).toBe(0);
      expect((await store.get((await store.search({ limit: 1 })).items[0]!.uuid))).toMatchObject({ kind: 'Interface', class_name: expect.stringMatching(/^Model[012]$/) });
      await expectExactTotals(store);
      // Version 6: offset pages skip by the backfilled hour and minute counts, and land where the
      // same order walked (a second sort key: no skipping) does.
      for (const offset of [1, 59, 60, 999, 1500, 2935]) {
        const jumped = (await store.search({ offset, limit: 5 })).items.map((item) => item.uuid);
        const walked = (await store.search({ offset, limit: 5, sort: [{ by: 'created_at', direction: 'desc' }, { by: 'uuid', direction: 'asc' }] })).items.map((item) => item.uuid);
        expect(jumped, `offset ${offset}`).toHaveLength(5);
        expect(jumped, `offset ${offset}`).toEqual(walked);
      }
    } finally {
      await index.close();
    }
  });

  it('a migration to version 5 cut off before its commit leaves version 4 whole; the next start migrates it', async () => {
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(5);
    const name = `${new URL(postgres.url).pathname.slice(1)}_v4`;
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(postgres.url);
    url.pathname = `/${name}`;
    const old = new pg.Client({ connectionString: url.toString() });
    await old.connect();
    try {
      await old.query('CREATE TABLE portico_schema (version integer NOT NULL); INSERT INTO portico_schema VALUES (4)');
      for (const migration of MIGRATIONS.slice(0, 4)) await old.query(migration);
      await seedPostgres(old, '/srv/v4', 600);
      const kinds = async () => (await old.query('SELECT kind, count(*)::int AS n FROM portico_interfaces GROUP BY kind ORDER BY kind')).rows;
      const before = await kinds();
      expect(before).toHaveLength(3);

      // The whole migration runs, then its gateway dies before the commit (its backend ends).
      const cut = new pg.Client({ connectionString: url.toString() });
      await cut.connect();
      cut.on('error', () => undefined);
      const { pid } = (await cut.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!;
      await cut.query('BEGIN');
      await migrate(cut);
      expect((await cut.query('SELECT version FROM portico_schema')).rows).toEqual([{ version: SCHEMA_VERSION }]);
      await old.query('SELECT pg_terminate_backend($1)', [pid]);
      await cut.end().catch(() => undefined);

      expect((await old.query('SELECT version FROM portico_schema')).rows).toEqual([{ version: 4 }]);
      expect((await old.query(`SELECT 1 FROM information_schema.columns WHERE table_name = 'portico_interfaces' AND column_name = 'class_name'`)).rows).toEqual([]);
      expect(await kinds()).toEqual(before);

      const index = PostgresIndex.connect(url.toString());
      try {
        const store = await index.open('/srv/v4');
        expect((await old.query('SELECT version FROM portico_schema')).rows).toEqual([{ version: SCHEMA_VERSION }]);
        expect((await store.search({ class_name: 'Model2', include_archived: true, limit: 1 })).total).toBe(200);
        expect((await store.search({ kind: 'Interface', include_archived: true, limit: 1 })).total).toBe(600);
        await expectExactTotals(store);
      } finally {
        await index.close();
      }
    } finally {
      await old.end();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  });
});

describe('totals from the counts', () => {
  it('stay exact after concurrent creates, relabels and archive changes through two gateways', async () => {
    const project = await tempProject();
    const [a, b] = [await gateway({ project, store: postgres.url }), await gateway({ project, store: postgres.url })];
    // 300 configs, each raced from both gateways, while earlier ones are relabelled and archived through either.
    const work = Array.from({ length: 600 }, async (_, i) => {
      const via = i % 2 ? a : b;
      const created = await api(via, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: i >> 1 }] });
      expect(created.status).toBe(200);
      const uuid = created.body.uuid;
      if (i % 3 === 0) expect((await api(via, 'PATCH', `/v1/interfaces/${uuid}/label`, { label: `l${i % 4}` })).status).toBe(200);
      if (i % 7 === 0) expect((await api(via, 'POST', `/v1/interfaces/${uuid}/archive`)).status).toBe(200);
      if (i % 14 === 0) expect((await api(a, 'POST', `/v1/interfaces/${uuid}/archive?restore=true`)).status).toBe(200);
      if (i % 11 === 0) expect((await api(b, 'PATCH', `/v1/interfaces/${uuid}/label`, { label: null })).status).toBe(200);
    });
    await Promise.all(work);

    const index = PostgresIndex.connect(postgres.url);
    try {
      const store = await index.open(await realpath(project));
      const all = await store.search({ include_archived: true, limit: 1 });
      expect(all.total).toBe(300);
      await expectExactTotals(store);
      const viaGateway = await api(b, 'POST', '/v1/interfaces/search', { module: 'counter', limit: 1 });
      expect(viaGateway.body.total).toBe((await store.search({ module: 'counter', limit: 1 })).total);
    } finally {
      await index.close();
    }
  });

  it('stay exact through deletes, and compaction folds each group into one row without changing a total', async () => {
    const project = '/srv/compacted';
    const index = PostgresIndex.connect(postgres.url);
    try {
      const store = await index.open(project);
      const records = varied('c', 240);
      // One insert per statement: many delta rows per group.
      for (const r of records) await store.insert(r);
      for (const r of records.slice(0, 60)) await store.update(r.uuid, { label: `new${r.uuid.length % 3}`, archived: !r.archived });
      for (const r of records.slice(200)) expect(await store.delete(r.uuid)).toBe(true);
      expect(await unfoldedGroups(project)).toBeGreaterThan(0);
      await expectExactTotals(store);

      await index.compact();
      expect(await unfoldedGroups(project)).toBe(0);
      const { rows } = await admin.query('SELECT count(*)::int AS n FROM portico_counts WHERE project = $1 AND (NOT compacted OR delta = 0)', [project]);
      expect(rows).toEqual([{ n: 0 }]);
      expect((await store.search({ include_archived: true, limit: 1 })).total).toBe(200);
      await expectExactTotals(store);
    } finally {
      await index.close();
    }
  });

  it('stay exact while two gateways compact during concurrent creates and archive changes', async () => {
    const project = '/srv/racing';
    const [one, two] = [PostgresIndex.connect(postgres.url), PostgresIndex.connect(postgres.url)];
    try {
      const [a, b] = [await one.open(project), await two.open(project)];
      const records = varied('r', 400);
      const writes = records.map(async (r, i) => {
        await (i % 2 ? a : b).insert(r);
        if (i % 3 === 0) await (i % 2 ? b : a).update(r.uuid, { archived: !r.archived, label: i % 6 ? 'relabelled' : null });
      });
      const compactions = Array.from({ length: 12 }, (_, i) => (i % 2 ? one : two).compact());
      await Promise.all([...writes, ...compactions]);
      await expectExactTotals(a);
      await one.compact();
      await two.compact();
      expect(await unfoldedGroups(project)).toBe(0);
      await expectExactTotals(b);
    } finally {
      await one.close();
      await two.close();
    }
  });
});
