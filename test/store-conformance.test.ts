/**
 * Every store against the search semantics and the Store contract: the property tests of
 * query.test.ts (same generators, same oracle) run through the embedded store and through
 * PostgreSQL, with records inserted through `insert` and searched through `search`, so the SQL
 * compiler is held to the same oracle as the in-memory engine.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../packages/server/src/config/constants.js';
import type { FindRequest } from '../packages/server/src/contract/search.js';
import { LowdbStore } from '../packages/server/src/store/lowdb-store.js';
import { PostgresIndex } from '../packages/server/src/store/postgres/postgres-store.js';
import { record, recordsArb, scenario } from '../packages/server/src/store/query.arbitraries.js';
import { ORACLE_EXACT_TOTAL, oracleSearch } from '../packages/server/src/store/query.oracle.js';
import type { InterfaceRecord, Store } from '../packages/server/src/store/store.js';
import { expectExactTotals, incompressibleText, startPostgres, type TestPostgres } from './support/postgres.js';

const RUNS = 200;
/** Each run writes a fresh store: hundreds of them take minutes on a shared machine. */
const PROPERTY_TIMEOUT_MS = 15 * 60 * 1000;

interface StoreKind {
  name: string;
  setup(): Promise<void>;
  teardown(): Promise<void>;
  /** A fresh, empty store over a fresh project directory. */
  open(project: string): Promise<Store>;
}

let postgres: TestPostgres | undefined;
let index: PostgresIndex | undefined;

const KINDS: StoreKind[] = [
  {
    name: 'embedded (lowdb)',
    setup: async () => {},
    teardown: async () => {},
    open: (project) => LowdbStore.open(project),
  },
  {
    name: 'PostgreSQL',
    async setup() {
      postgres = await startPostgres({ durable: false });
      index = PostgresIndex.connect(postgres.url);
    },
    async teardown() {
      await index?.close();
      await postgres?.close();
    },
    open: (project) => index!.open(project),
  },
];

/** Uuids become directory names, which take only [A-Za-z0-9_.-]: hex keeps generated ones distinct and in order. */
function safe(records: InterfaceRecord[]): InterfaceRecord[] {
  return records.map((r) => ({ ...r, uuid: Buffer.from(r.uuid, 'utf8').toString('hex') }));
}



describe.each(KINDS)('$name store', (kind) => {
  beforeAll(() => kind.setup());
  afterAll(() => kind.teardown());

  /** Runs `body` on a fresh store holding `records` (in a fresh project folder), then removes it. */
  async function withStore<T>(records: InterfaceRecord[], body: (store: Store, project: string) => Promise<T>): Promise<T> {
    const project = await mkdtemp(path.join(tmpdir(), 'portico-conformance-'));
    const store = await kind.open(project);
    try {
      await Promise.all(records.map((r) => store.insert(r)));
      return await body(store, project);
    } finally {
      await store.close();
      await rm(project, { recursive: true, force: true });
    }
  }

  async function walk(store: Store, query: FindRequest, limit: number, between: (page: number) => Promise<void> = async () => {}): Promise<string[]> {
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 1000; page++) {
      const result = await store.search({ ...query, limit, cursor });
      seen.push(...result.items.map((item) => item.uuid));
      if (result.next_cursor === null) return seen;
      expect(result.items).toHaveLength(limit);
      cursor = result.next_cursor;
      await between(page);
    }
    throw new Error('the cursor walk does not end');
  }

  it('returns the same page and total as a full filter, sort and slice', async () => {
    await fc.assert(
      fc.asyncProperty(scenario(30), fc.integer({ min: 1, max: 10 }), fc.integer({ min: 0, max: 12 }), ([generated, query], limit, offset) => {
        const records = safe(generated);
        return withStore(records, async (store) => {
          const request = { ...query, limit, offset };
          const expected = oracleSearch(records, request);
          const result = await store.search(request);
          expect(result.items.map((item) => item.uuid)).toEqual(expected.items.map((item) => item.uuid));
          expect(result.total).toBe(expected.total);
          expect(result.total_exact).toBe(true);
          expect(result.next_cursor === null).toBe(offset + limit >= expected.total);
        });
      }),
      { numRuns: RUNS },
    );
  }, PROPERTY_TIMEOUT_MS);

  it('reports total by the total rule: exact up to the bound and for counted filters, the bound beyond', async () => {
    expect(LIMITS.searchExactTotal).toBe(ORACLE_EXACT_TOTAL);
    // 1,300 records: 1,100 with lr 1, 200 with lr 2; one module; two creators; every 13th archived.
    const records = Array.from({ length: 1300 }, (_, i) =>
      record(`r${String(i).padStart(5, '0')}`, { lr: i < 1100 ? 1 : 2, i }, {
        created_by: i % 2 ? 'ada' : 'grace',
        created_at: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
        archived: i % 13 === 0,
      }),
    );
    const lr1 = { config: { filters: [{ path: 'lr', value: 1 }] } };
    const requests: FindRequest[] = [
      {},
      { module: 'm1' },
      { module: 'm1', created_by: 'ada' },
      { created_by: 'ada', include_archived: true },
      { filters: [{ path: 'archived', value: true }], include_archived: true },
      lr1,
      { ...lr1, exact_total: true },
      { ...lr1, include_archived: true, limit: 5 },
      { config: { filters: [{ path: 'lr', value: 2 }] } },
      { ...lr1, offset: 995, limit: 10 },
      { ...lr1, offset: 1000, limit: 100 },
      { config: { filters: [{ path: 'i', op: 'lt', value: 1200 }] }, sort: [{ by: 'config.i', direction: 'asc' }], limit: 3 },
      { config: { filters: [{ path: 'i', op: 'gte', value: 100 }] }, sort: [{ by: 'lr', config_layer: 'resolved', direction: 'desc' }], limit: 4 },
      { filters: [{ path: 'uuid', op: 'gt', value: 'r00100' }] },
    ];
    await withStore(records, async (store) => {
      for (const request of requests) {
        const expected = oracleSearch(records, request);
        const result = await store.search(request);
        expect({ request, items: result.items.map((item) => item.uuid), total: result.total, total_exact: result.total_exact }).toEqual({
          request,
          items: expected.items.map((item) => item.uuid),
          ...expected.reported,
        });
        // A cursor walk from here goes on as an exact one would, whatever the total says.
        if (result.next_cursor) {
          const next = await store.search({ ...request, offset: 0, cursor: result.next_cursor });
          expect(next.items[0]?.uuid).toBe(expected.all[(request.offset ?? 0) + (request.limit ?? 100)]?.uuid);
        }
      }
    });
    // The rule as a user reads it, independently of the oracle.
    await withStore(records, async (store) => {
      expect(await store.search({ ...lr1, limit: 1 })).toMatchObject({ total: 1000, total_exact: false });
      expect(await store.search({ ...lr1, limit: 1, exact_total: true })).toMatchObject({ total: 1100 - 85, total_exact: true });
      expect(await store.search({ limit: 1 })).toMatchObject({ total: 1300 - 100, total_exact: true });
    });
  }, PROPERTY_TIMEOUT_MS);

  it('walks every match exactly once, in order, by cursor', async () => {
    await fc.assert(
      fc.asyncProperty(scenario(30), fc.integer({ min: 1, max: 7 }), ([generated, query], limit) => {
        const records = safe(generated);
        return withStore(records, async (store) => {
          expect(await walk(store, query, limit)).toEqual(oracleSearch(records, query).all.map((item) => item.uuid));
        });
      }),
      { numRuns: RUNS },
    );
  }, PROPERTY_TIMEOUT_MS);

  it('never repeats or skips a record that existed throughout, while records are inserted between pages', async () => {
    await fc.assert(
      fc.asyncProperty(scenario(25), fc.array(recordsArb('', 4), { maxLength: 8 }), fc.integer({ min: 1, max: 5 }), ([generated, query], batches, limit) => {
        const existing = safe(generated);
        return withStore(existing, async (store) => {
          const records = [...existing];
          const seen = await walk(store, query, limit, async (page) => {
            const batch = safe(batches[page] ?? []).map((added) => ({ ...added, uuid: `new-${page}-${added.uuid}` }));
            records.push(...batch);
            await Promise.all(batch.map((r) => store.insert(r)));
          });
          const seenSet = new Set(seen);
          expect(seenSet.size).toBe(seen.length);
          for (const item of oracleSearch(existing, query).all) expect(seenSet.has(item.uuid)).toBe(true);
          const finalOrder = oracleSearch(records, query).all.map((item) => item.uuid);
          expect(finalOrder.filter((uuid) => seenSet.has(uuid))).toEqual(seen);
        });
      }),
      { numRuns: RUNS },
    );
  }, PROPERTY_TIMEOUT_MS);

  it('offset pages in created_at order, either way, over bursts, hour edges and odd timestamps: as the oracle says', async () => {
    // PostgreSQL skips whole hours and minutes by their counts (search-sql.ts, createdJumpRows):
    // every offset, across every kind of boundary a created_at text can have.
    const times = [
      ...Array.from({ length: 7 }, () => '2024-01-01T10:15:30.000Z'), // a burst in one second
      '2024-01-01T10:15:59.999Z', '2024-01-01T10:16:00.000Z', '2024-01-01T10:59:59.999Z', '2024-01-01T11:00:00.000Z',
      '2024-01-01T10', '2024-01-01T10:15', '2024-01-01T1', '2024', '', 'zzzz', '2024-01-01T10:15\u{1F600}', '2024-01-01T10:15\uFFFF',
      '2023-12-31T23:59:59.999Z', '2024-01-02T00:00:00.000+00:00', '2024-01-01T10:15:30.000001Z',
    ];
    const records = times.map((created_at, i) => record(`t${String(i).padStart(2, '0')}`, { i }, { created_at, archived: i % 5 === 4 }));
    await withStore(records, async (store) => {
      const requests: FindRequest[] = [];
      for (const direction of ['desc', 'asc'] as const) {
        for (const shape of [{}, { include_archived: true }, { filters: [{ path: 'archived', value: true }], include_archived: true }] as FindRequest[]) {
          for (let offset = 0; offset <= records.length + 1; offset++) requests.push({ ...shape, sort: [{ by: 'created_at', direction }], offset, limit: 3 });
        }
      }
      requests.push(...Array.from({ length: records.length + 2 }, (_, offset) => ({ offset, limit: 2 })));
      for (const request of requests) {
        const expected = oracleSearch(records, request);
        const result = await store.search(request);
        expect(result.items.map((item) => item.uuid), JSON.stringify(request)).toEqual(expected.items.map((item) => item.uuid));
        expect(result.total, JSON.stringify(request)).toBe(expected.total);
      }
      // Archiving and removing records moves the counts with them.
      await store.update('t03', { archived: true });
      await store.update('t04', { archived: true });
      await store.delete('t10');
      const now = (await Promise.all(records.map((r) => store.get(r.uuid)))).filter((r): r is InterfaceRecord => r !== undefined);
      for (let offset = 0; offset <= now.length; offset++) {
        const request = { offset, limit: 2 };
        expect((await store.search(request)).items.map((item) => item.uuid), JSON.stringify(request)).toEqual(oracleSearch(now, request).items.map((item) => item.uuid));
      }
    });
  });

  it('insert: an existing uuid returns the stored record unchanged, created false', async () => {
    await withStore([], async (store) => {
      const first = record('same', { n: 1 }, { created_by: 'alice', label: 'one' });
      expect(await store.insert(first)).toEqual({ record: first, created: true });
      const again = await store.insert({ ...first, config: { n: 2 }, created_by: 'bob', label: null });
      expect(again).toEqual({ record: first, created: false });
      expect(await store.get('same')).toEqual(first);
    });
  });

  it('existing: the record only once its create is durable, nothing for a uuid never created', async () => {
    await withStore([], async (store, project) => {
      expect(await store.existing('never')).toBeUndefined();
      const made = record('durable', { n: 1 }, { created_by: 'alice' });
      const insert = store.insert(made);
      // Asked once get sees it: the embedded store holds it in memory before its journal is synced
      // and its record file written (existing waits for both, as insert does); a PostgreSQL row is
      // visible only once committed, durable then (its record file follows).
      for (let turns = 0; !(await store.get('durable')); turns++) {
        expect(turns).toBeLessThan(100_000);
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(await store.existing('durable')).toEqual(made);
      if (kind.name !== 'PostgreSQL') expect(existsSync(path.join(project, '.portico/interfaces/durable/interface.json'))).toBe(true);
      expect(await insert).toEqual({ record: made, created: true });
      await store.delete('durable');
      expect(await store.existing('durable')).toBeUndefined();
    });
  });

  it('update: label and archived, last write wins; config and created_by stay', async () => {
    await withStore([record('r', { n: 1 }, { created_by: 'alice' })], async (store) => {
      await store.update('r', { label: 'first' });
      await store.update('r', { label: 'second' });
      const archived = await store.update('r', { archived: true });
      expect(archived).toMatchObject({ label: 'second', archived: true, created_by: 'alice', config: { n: 1 } });
      expect(await store.update('r', { label: null })).toMatchObject({ label: null, archived: true });
      expect(await store.update('missing', { label: 'x' })).toBeUndefined();
    });
  });

  it('delete: the record is gone; deleting again says so', async () => {
    await withStore([record('gone', {})], async (store) => {
      expect(await store.delete('gone')).toBe(true);
      expect(await store.get('gone')).toBeUndefined();
      expect(await store.delete('gone')).toBe(false);
    });
  });

  it('keeps every JSON string exactly: U+0000, lone surrogates, astral and private-use characters, odd keys', async () => {
    const config = { 'a\u0000b': ['\u0000', '\ud800', 'x\udfffy', '😀', '\uffff', ''], '__proto__': { 'é': 1.5, '': null }, big: 1e300, tiny: 5e-324 };
    const stored = record('odd', config, { label: 'l\u0000\ud83d', meta: { note: '\ud83d' }, predicate: { '\u0000': true } });
    await withStore([stored], async (store) => {
      expect(await store.get('odd')).toEqual(stored);
      const found = await store.search({ config: { filters: [{ path: 'big', op: 'gt', value: 1e299 }] }, label: 'l\u0000\ud83d' });
      expect(found.items).toEqual([stored]);
    });
  });

  it('long module, kind, class_name, created_by and label values: stored, searched, sorted and counted as the oracle says', async () => {
    // Far over PostgreSQL's b-tree row limit once coded (4 bytes a unit); pairs share all but their last unit.
    const long = (seed: number, length: number) => incompressibleText(length, 0x4e00, 20_000, seed);
    const [module, kind, user, className] = [long(1, 3000), long(2, 2000), long(3, 4000), long(6, 2500)];
    const label = `${long(4, 1023)}b`;
    const astral = incompressibleText(512, 0x10000, 0x100000, 5);
    const records = [
      record('r1', { n: 1 }, { module: `${module}1`, kind, class_name: className, created_by: user, label, created_at: '2024-01-01T00:00:01.000Z' }),
      record('r2', { n: 2 }, { module: `${module}2`, kind: `${kind}x`, class_name: `${className}x`, created_by: user, label: `${label.slice(0, -1)}a`, created_at: '2024-01-01T00:00:02.000Z' }),
      record('r3', { n: 3 }, { module: `${module}1`, kind, class_name: className, created_by: `${user}!`, label: astral, created_at: '2024-01-01T00:00:03.000Z', archived: true }),
      record('r4', { n: 4 }, { label, created_at: '2024-01-01T00:00:04.000Z' }),
    ];
    const requests: FindRequest[] = [
      { module: `${module}1` },
      { module: `${module}1`, include_archived: true },
      { kind: `${kind}x` },
      { class_name: className, include_archived: true },
      { filters: [{ path: 'class_name', op: 'lt', value: `${className}x` }] },
      { created_by: user },
      { label },
      { label: astral, include_archived: true },
      { label: label.slice(0, 1000) },
      { filters: [{ path: 'label', op: 'in', value: [astral, `${label.slice(0, -1)}a`] }], include_archived: true },
      { filters: [{ path: 'module', op: 'gt', value: `${module}1` }] },
      { filters: [{ path: 'created_by', op: 'lte', value: user }], include_archived: true },
      { sort: [{ by: 'label', direction: 'asc' }], include_archived: true },
      { sort: [{ by: 'module', direction: 'desc' }, { by: 'kind', direction: 'asc' }], include_archived: true },
      { sort: [{ by: 'class_name', direction: 'desc' }], include_archived: true },
    ];
    await withStore(records, async (store) => {
      for (const request of requests) {
        const result = await store.search(request);
        const expected = oracleSearch(records, request);
        expect({ request, uuids: result.items.map((item) => item.uuid), total: result.total }).toEqual({
          request,
          uuids: expected.items.map((item) => item.uuid),
          total: expected.total,
        });
      }
      expect(await store.get('r3')).toEqual(records[2]);
      await store.update('r4', { label: astral });
      expect((await store.search({ label: astral, include_archived: true })).items.map((item) => item.uuid)).toEqual(['r4', 'r3']);
      await expectExactTotals(store);
    });
  });

  it('a write the store cannot take whole is refused with a stable code, and get, search and later writes are as before', async () => {
    const kept = record('kept', { n: 1 }, { label: 'k', meta: { note: 'x' } });
    await withStore([kept], async (store, project) => {
      const view = async () => ({ all: await store.search({ include_archived: true, limit: 1000 }), kept: await store.get('kept') });
      const before = await view();
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      const refusals: Array<[string, Partial<InterfaceRecord>, string, RegExp]> = [
        ['bigint', { meta: { n: 10n } }, 'invalid_argument', /its meta is not JSON/],
        ['cyclic', { meta: cyclic }, 'invalid_argument', /its meta is not JSON/],
        ['too-deep-to-serialize', { meta: { m: nested(20_000) } }, 'invalid_argument', /nested deeper than 64 levels \(at \$\.meta\)/],
        ['over-depth', { config: { m: nested(64) } }, 'invalid_argument', /nested deeper than 64 levels \(at \$\.config\.m\[0\]\[0\]\[0\]\[0\]…\)/],
        ['oversize', { meta: { blob: 'x'.repeat(LIMITS.recordMaxBytes) } }, 'payload_too_large', /limits\.recordMaxBytes\); its meta alone takes 1048\d{3} bytes/],
        ['long-label', { label: 'a'.repeat(LIMITS.labelMax + 1) }, 'validation_error', /at most 1024/],
        ['no-config', { config: null as unknown as Record<string, unknown> }, 'invalid_argument', /config must be an object/],
        ['a/b', {}, 'invalid_argument', /uuid 'a\/b' must be/],
      ];
      for (const [uuid, fields, code, message] of refusals) {
        await expect(store.insert(record(uuid, {}, fields)), uuid).rejects.toMatchObject({ code, message: expect.stringMatching(message) });
        expect(await store.get(uuid)).toBeUndefined();
        expect(await view()).toEqual(before);
      }
      await expect(store.update('kept', { label: 'a'.repeat(LIMITS.labelMax + 1) })).rejects.toMatchObject({ code: 'validation_error' });
      await expect(store.update('kept', { archived: 'yes' as unknown as boolean })).rejects.toMatchObject({ code: 'invalid_argument' });
      expect(await view()).toEqual(before);
      // Exactly at the bounds is stored; the store keeps writing.
      const atBound = record('at-bound', { m: nested(63) }, { label: 'a'.repeat(LIMITS.labelMax) });
      expect(await store.insert(atBound)).toEqual({ record: atBound, created: true });
      expect(await store.get('at-bound')).toEqual(atBound);
      expect((await store.search({ include_archived: true })).total).toBe(2);
      expect(JSON.parse(await readFile(path.join(project, '.portico/interfaces/at-bound/interface.json'), 'utf8'))).toEqual(atBound);
    });
  });

  it('writes each record file compact, one line of its JSON, and rewrites it on update', async () => {
    const stored = record('compact', { a: { b: [1, { c: 2 }] } }, { meta: { deep: nested(10) } });
    await withStore([stored], async (store, project) => {
      const file = path.join(project, '.portico/interfaces/compact/interface.json');
      expect(await readFile(file, 'utf8')).toBe(`${JSON.stringify(stored)}\n`);
      const labelled = await store.update('compact', { label: 'now' });
      expect(await readFile(file, 'utf8')).toBe(`${JSON.stringify(labelled)}\n`);
    });
  });
});

/** `n` lists, one inside the other, around 1. */
function nested(n: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < n; i++) value = [value];
  return value;
}
