/**
 * Labels as long as the API accepts (LIMITS.labelMax, 1024 UTF-16 code units), ASCII, CJK and astral,
 * through create (REST and `connect`) and PATCH …/label, on the embedded store and on PostgreSQL:
 * stored, searched by equality, sorted and counted, with the same answers on both; one unit more
 * is refused alike on both (422 too_big, or invalid_frame on a socket) and changes nothing. First,
 * a PostgreSQL index of the previous schema version (2) migrates at start and keeps its records
 * and their totals.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../packages/server/src/config/constants.js';
import { codeText } from '../packages/server/src/store/postgres/coding.js';
import { PostgresIndex } from '../packages/server/src/store/postgres/postgres-store.js';
import { MIGRATIONS, SCHEMA_VERSION } from '../packages/server/src/store/postgres/schema.js';
import { seedPostgres } from '../bench/postgres-seed.mjs';
import { api, cleanup, Client, gateway, tempProject } from './helpers.js';
import { expectExactTotals, incompressibleText, startPostgres, type TestPostgres } from './support/postgres.js';

const ASCII = incompressibleText(LIMITS.labelMax, 0x21, 94, 1);
/** 1024 CJK characters; the twin shares the first 1023 (far beyond any index prefix) and sorts before it. */
const CJK = `${incompressibleText(LIMITS.labelMax - 1, 0x4e00, 20_000, 2)}中`;
const CJK_TWIN = `${CJK.slice(0, -1)}一`;
/** 512 astral characters from every plane: 1024 UTF-16 units. */
const ASTRAL = incompressibleText(LIMITS.labelMax / 2, 0x10000, 0x100000, 3);
const TOO_LONG = 'a'.repeat(LIMITS.labelMax + 1);
/** A creator far longer than any index row (it arrives in a header, which bounds it only at 16 KiB). */
const LONG_USER = incompressibleText(4000, 0x21, 94, 4);

let postgres: TestPostgres;

beforeAll(async () => {
  postgres = await startPostgres({ durable: false });
});

afterAll(async () => {
  await cleanup();
  await postgres?.close();
});

describe('schema migration', () => {
  // First in this file: the database is still empty, as a gateway of schema version 2 would leave it.
  it('migrates a version-2 database at start, keeping its records and totals', async () => {
    // Migration 3 (bounded label indexes) is what this test is about; later ones run after it.
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(3);
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    try {
      await admin.query('CREATE TABLE portico_schema (version integer NOT NULL); INSERT INTO portico_schema VALUES (2)');
      await admin.query(MIGRATIONS[0]!);
      await admin.query(MIGRATIONS[1]!);
      await seedPostgres(admin, '/srv/old', 2000);
      // Version 2 indexed whole labels: this one's index row is over PostgreSQL's b-tree limit.
      await expect(admin.query("UPDATE portico_interfaces SET label = $1 WHERE project = '/srv/old' AND label IS NULL", [codeText(ASTRAL)])).rejects.toThrow(/index row size/);
      const before = (await admin.query('SELECT count(*)::int AS n FROM portico_interfaces')).rows[0].n;

      const index = PostgresIndex.connect(postgres.url);
      try {
        const store = await index.open('/srv/old');
        expect((await admin.query('SELECT version FROM portico_schema')).rows).toEqual([{ version: SCHEMA_VERSION }]);
        expect((await admin.query('SELECT count(*)::int AS n FROM portico_interfaces')).rows[0].n).toBe(before);
        expect((await store.search({ limit: 1 })).total).toBe(2000 - 2000 / 50);
        expect((await store.search({ label: 'run-120', limit: 1 })).total).toBe(1);
        await expectExactTotals(store);
        // What version 2 refused with a 500: a long label on a migrated record.
        const [first] = (await store.search({ limit: 1 })).items;
        await store.update(first!.uuid, { label: ASTRAL });
        expect((await store.search({ label: ASTRAL })).items.map((r) => r.uuid)).toEqual([first!.uuid]);
        await expectExactTotals(store);
      } finally {
        await index.close();
      }
    } finally {
      await admin.end();
    }
  });
});

/** What a user sees of one scenario, compared between the stores (uuids are content hashes, alike on both). */
const observed = new Map<string, unknown[]>();

const STORES: Array<[string, () => string | undefined]> = [
  ['embedded', () => undefined],
  ['PostgreSQL', () => postgres.url],
];

describe.each(STORES)('%s store', (name, storeOf) => {
  it('long labels: created, relabelled, searched by equality, sorted and counted', async () => {
    const g = await gateway({ project: await tempProject(), store: storeOf() });
    const seen: unknown[] = [];
    const look = async (request: Record<string, unknown>) => {
      const res = await api(g, 'POST', '/v1/interfaces/search', { limit: 100, ...request });
      expect(res.status).toBe(200);
      const view = { total: res.body.total, items: res.body.items.map((item: { uuid: string; label: string | null }) => [item.uuid, item.label]) };
      seen.push(view);
      return view;
    };
    const create = async (start: number, label?: string) => {
      const res = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start }], ...(label === undefined ? {} : { label }) }, { 'X-Service-User': LONG_USER });
      expect(res.status).toBe(200);
      expect(res.body.label).toBe(label ?? null);
      return res.body.uuid as string;
    };

    const one = await create(1, ASCII);
    const two = await create(2, CJK);
    const socket = await Client.open(g.url, { headers: { 'X-Service-User': LONG_USER } });
    const connected = await socket.connect('counter', { version: [{ start: 3 }], label: ASTRAL });
    expect(connected.payload).toMatchObject({ label: ASTRAL });
    const three = connected.payload.uuid as string;
    const four = await create(4);
    const patched = await api(g, 'PATCH', `/v1/interfaces/${four}/label`, { label: CJK });
    expect(patched.status).toBe(200);
    expect(patched.body.label).toBe(CJK);
    const five = await create(5, CJK_TWIN);

    expect((await api(g, 'GET', `/v1/interfaces/${three}`)).body).toMatchObject({ label: ASTRAL, created_by: LONG_USER });
    expect(await look({ label: ASCII })).toEqual({ total: 1, items: [[one, ASCII]] });
    expect(await look({ label: CJK })).toEqual({ total: 2, items: [[four, CJK], [two, CJK]] });
    expect(await look({ label: CJK_TWIN })).toEqual({ total: 1, items: [[five, CJK_TWIN]] });
    expect(await look({ label: ASTRAL })).toEqual({ total: 1, items: [[three, ASTRAL]] });
    expect((await look({ label: CJK.slice(0, 1000) })).total).toBe(0);
    expect((await look({ created_by: LONG_USER })).total).toBe(5);
    // UTF-16 code-unit order: ASCII < CJK_TWIN < CJK < surrogate pairs; equal labels by uuid.
    expect(await look({ sort: [{ by: 'label', direction: 'asc' }] })).toEqual({
      total: 5,
      items: [[one, ASCII], [five, CJK_TWIN], ...[two, four].sort().map((uuid) => [uuid, CJK]), [three, ASTRAL]],
    });
    expect((await look({ filters: [{ path: 'label', op: 'gt', value: CJK_TWIN }] })).total).toBe(3);
    expect((await look({ filters: [{ path: 'label', op: 'in', value: [CJK_TWIN, ASTRAL] }] })).total).toBe(2);

    // Relabel: one long label to another; the old value's count goes down, the new one's up.
    expect((await api(g, 'PATCH', `/v1/interfaces/${one}/label`, { label: ASTRAL })).status).toBe(200);
    expect((await look({ label: ASCII })).total).toBe(0);
    expect(await look({ label: ASTRAL })).toEqual({ total: 2, items: [[three, ASTRAL], [one, ASTRAL]] });
    observed.set(name, seen);
  });

  it('a label over the limit is refused with a stable code on create, connect and PATCH, and nothing changes', async () => {
    const g = await gateway({ project: await tempProject(), store: storeOf() });
    const created = await api(g, 'POST', '/v1/interfaces', { target: 'counter', label: TOO_LONG });
    expect(created.status).toBe(422);
    expect(created.body.detail[0]).toMatchObject({ type: 'too_big', loc: ['body', 'label'] });
    const socket = await Client.open(g.url);
    const refused = await socket.request({ type: 'connect', target: 'counter', label: TOO_LONG });
    expect(refused).toMatchObject({ type: 'error', payload: { code: 'invalid_frame', issues: [{ path: 'label' }] } });
    expect((await api(g, 'POST', '/v1/interfaces/search', { include_archived: true })).body.total).toBe(0);

    const kept = await api(g, 'POST', '/v1/interfaces', { target: 'counter', label: 'kept' });
    const patched = await api(g, 'PATCH', `/v1/interfaces/${kept.body.uuid}/label`, { label: TOO_LONG });
    expect(patched.status).toBe(422);
    expect(patched.body.detail[0]).toMatchObject({ type: 'too_big', loc: ['body', 'label'] });
    expect((await api(g, 'GET', `/v1/interfaces/${kept.body.uuid}`)).body.label).toBe('kept');
  });
});

describe('the contract', () => {
  it('documents the label limit in the OpenAPI schema, for create and for PATCH …/label, and in /v1/protocol', async () => {
    const g = await gateway();
    const { schemas } = (await api(g, 'GET', '/openapi.json')).body.components;
    for (const name of ['CreateInterfaceRequest', 'SetLabelRequest']) {
      expect(JSON.stringify(schemas[name].properties.label)).toContain(`"maxLength":${LIMITS.labelMax}`);
    }
    expect((await api(g, 'GET', '/v1/protocol')).body.limits.labelMax).toBe(LIMITS.labelMax);
  });
});

describe('both stores', () => {
  it('answered every long-label search alike', () => {
    expect(observed.get('embedded')).toBeDefined();
    expect(observed.get('PostgreSQL')).toEqual(observed.get('embedded'));
  });
});
