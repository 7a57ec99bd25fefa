/**
 * The indexed records against the linear pass: random inserts, label and archive updates and
 * deletes interleaved with random queries, every answer (items, order, total, next_cursor)
 * compared with the engine over the same records and with the oracle; cursor walks with
 * mutations between pages; and the plan each common query gets, so that a fast path cannot
 * silently stop being used.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LIMITS } from '../config/constants.js';
import type { FindRequest } from '../contract/search.js';
import { RecordIndex } from './lowdb-index.js';
import { compileQuery } from './query.js';
import { queryArb, record, recordsArb } from './query.arbitraries.js';
import { oracleSearch } from './query.oracle.js';
import type { InterfaceRecord } from './store.js';

const RUNS = 150;

/** A mutation; `i` picks a pool record (insert) or a held one (the others), modulo their count. */
type Mutation =
  | { kind: 'insert'; i: number }
  | { kind: 'label'; i: number; label: string | null }
  | { kind: 'archive'; i: number; archived: boolean }
  | { kind: 'delete'; i: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('insert' as const), i: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('label' as const), i: fc.nat(), label: fc.constantFrom(null, 'x', 'y', 'é') }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('archive' as const), i: fc.nat(), archived: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), i: fc.nat() }) },
);

/**
 * queryArb's records, each with a config key `half` holding 0 or 1: an equality that matches half
 * the records, the kind that makes walking a sort order cheaper than reading its matches.
 */
function poolArb(): fc.Arbitrary<InterfaceRecord[]> {
  return recordsArb('r', 30)
    .filter((pool) => pool.length > 0)
    .map((pool) => pool.map((r, i) => ({ ...r, config: { ...r.config, half: i % 2 } })));
}

/**
 * queryArb's queries, and more often the same cut down to what the indexes answer without a pass
 * (at most one equality, one sort key, often created_at), so the fast plans get as many runs as
 * the fallback.
 */
function requestArb(pool: InterfaceRecord[]): fc.Arbitrary<FindRequest> {
  const createdAt = fc.constantFrom<FindRequest['sort']>([], [{ by: 'created_at', direction: 'asc' }], [{ by: 'created_at', direction: 'desc' }]);
  return fc.oneof(
    queryArb(pool),
    fc.tuple(queryArb(pool), createdAt, fc.boolean(), fc.constantFrom(0, 1)).map(([query, sort, ownSort, half]) => ({
      config: { filters: [{ path: 'half', value: half }] },
      sort: ownSort ? (query.sort ?? []).slice(0, 1) : sort,
      include_archived: query.include_archived,
    })),
    fc.tuple(queryArb(pool), createdAt, fc.boolean()).map(([query, sort, ownSort]) => ({
      module: query.module,
      created_by: query.module == null ? query.created_by : undefined,
      config: query.config?.filters?.length ? { filters: query.config.filters.filter((filter) => (filter.op ?? 'eq') === 'eq').slice(0, 1) } : undefined,
      filters: query.module == null && query.created_by == null && !query.config ? (query.filters ?? []).filter((filter) => (filter.op ?? 'eq') === 'eq').slice(0, 1) : [],
      sort: ownSort ? (query.sort ?? []).slice(0, 1) : sort,
      include_archived: query.include_archived,
    })),
  );
}

/** Applies the mutation to both the index and the plain map of what it should hold. */
function mutate(index: RecordIndex, held: Map<string, InterfaceRecord>, pool: InterfaceRecord[], change: Mutation): void {
  if (change.kind === 'insert') {
    const added = pool[change.i % pool.length]!;
    if (held.has(added.uuid)) return;
    held.set(added.uuid, added);
    index.put(added);
    return;
  }
  if (!held.size) return;
  const current = [...held.values()][change.i % held.size]!;
  if (change.kind === 'delete') {
    held.delete(current.uuid);
    expect(index.delete(current.uuid)).toBe(true);
    return;
  }
  // As the store does: an update replaces the record with a patched copy.
  const next = change.kind === 'label' ? { ...current, label: change.label } : { ...current, archived: change.archived };
  held.set(next.uuid, next);
  index.put(next);
}

/** The index's answer, checked against the engine's linear pass (exactly) and the oracle. */
function expectSameAnswer(index: RecordIndex, held: Map<string, InterfaceRecord>, request: FindRequest): ReturnType<RecordIndex['search']> {
  const query = compileQuery(request);
  const got = index.search(query);
  const records = [...held.values()];
  const linear = query.run(records);
  expect(got.items).toStrictEqual(linear.items);
  got.items.forEach((item, i) => expect(item).toBe(linear.items[i])); // the held objects, not stale ones
  expect(got.total).toBe(linear.total);
  expect(got.next_cursor).toBe(linear.next_cursor);
  if (request.cursor == null) {
    const oracle = oracleSearch(records, request);
    expect(got.items.map((item) => item.uuid)).toEqual(oracle.items.map((item) => item.uuid));
    expect(got.total).toBe(oracle.total);
  }
  return got;
}

/** A pool of records, how many of them to load at first, and steps over them. */
function scenario<T>(step: (pool: InterfaceRecord[]) => fc.Arbitrary<T>): fc.Arbitrary<[InterfaceRecord[], number, T[]]> {
  return poolArb().chain((pool) => fc.tuple(fc.constant(pool), fc.nat({ max: pool.length }), fc.array(step(pool), { maxLength: 40 })));
}

describe('indexed search against the linear pass', () => {
  it('answers every query like a pass over every record, through inserts, updates and deletes', () => {
    const step = (pool: InterfaceRecord[]) =>
      fc.oneof(
        mutation,
        fc.record({ kind: fc.constant('query' as const), request: requestArb(pool), limit: fc.integer({ min: 1, max: 10 }), offset: fc.integer({ min: 0, max: 12 }) }),
      );
    fc.assert(
      fc.property(scenario(step), ([pool, loaded, steps]) => {
        const index = new RecordIndex();
        index.load(pool.slice(0, loaded));
        const held = new Map(pool.slice(0, loaded).map((r) => [r.uuid, r]));
        for (const s of steps) {
          if (s.kind === 'query') expectSameAnswer(index, held, { ...s.request, limit: s.limit, offset: s.offset });
          else mutate(index, held, pool, s);
        }
        expect(index.size).toBe(held.size);
      }),
      { numRuns: RUNS },
    );
  });

  it('pages by cursor like the linear pass while records change between pages, and ends', () => {
    fc.assert(
      fc.property(
        poolArb().chain((pool) => fc.tuple(fc.constant(pool), fc.nat({ max: pool.length }), requestArb(pool), fc.integer({ min: 1, max: 5 }), fc.array(fc.array(mutation, { maxLength: 3 }), { maxLength: 10 }))),
        ([pool, loaded, request, limit, between]) => {
          const index = new RecordIndex();
          index.load(pool.slice(0, loaded));
          const held = new Map(pool.slice(0, loaded).map((r) => [r.uuid, r]));
          let cursor: string | null = null;
          // Far more pages than any generated record set fills: a cursor that stops advancing fails here.
          for (let page = 0; page < 100; page++) {
            cursor = expectSameAnswer(index, held, { ...request, limit, cursor }).next_cursor;
            if (cursor === null) return;
            for (const change of between[page] ?? []) mutate(index, held, pool, change);
          }
          throw new Error('the cursor walk does not end');
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('stays exact when more config paths are searched than it keeps indexes for', () => {
    const records = Array.from({ length: 40 }, (_, i) => record(`u${i}`, Object.fromEntries(Array.from({ length: 12 }, (_, k) => [`p${k}`, (i + k) % 3]))));
    const index = new RecordIndex();
    index.load(records);
    const held = new Map(records.map((r) => [r.uuid, r]));
    const paths = Array.from({ length: LIMITS.searchPathIndexes + 4 }, (_, k) => `p${k}`);
    // Each round evicts every path index and rebuilds it, with records changed meanwhile.
    for (let round = 0; round < 3; round++) {
      for (const [k, path] of paths.entries()) {
        expect(expectSameAnswer(index, held, { config: { filters: [{ path, value: round }] } }).total).toBeGreaterThan(0);
        mutate(index, held, records, { kind: 'archive', i: round * 7 + k, archived: round % 2 === 0 });
      }
      mutate(index, held, records, { kind: 'delete', i: round });
    }
  });
});

describe('the plan each common query gets', () => {
  const index = new RecordIndex();
  index.load(
    Array.from({ length: 60 }, (_, i) =>
      record(`u${String(i).padStart(2, '0')}`, { lr: i / 10, optimizer: ['sgd', 'adam', 'rmsprop'][i % 3] }, {
        module: i % 2 ? 'm1' : 'm2',
        created_by: i % 4 ? 'alice' : 'bob',
        label: i % 5 ? null : 'best',
        created_at: new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString(),
      }),
    ),
  );
  const plan = (request: FindRequest) => index.plan(compileQuery(request));

  it('walks the created_at list for newest first, oldest first and any cursor page of them', () => {
    expect(plan({})).toEqual({ strategy: 'ordered', via: 'created_at' });
    expect(plan({ sort: [{ by: 'created_at', direction: 'asc' }], include_archived: true })).toEqual({ strategy: 'ordered', via: 'created_at' });
    const { next_cursor } = index.search(compileQuery({ limit: 25 }));
    expect(next_cursor).not.toBeNull();
    expect(plan({ limit: 25, cursor: next_cursor })).toEqual({ strategy: 'ordered', via: 'created_at' });
  });

  it('walks the order of a sort path when one equality fills the page soon', () => {
    const adam = { config: { filters: [{ path: 'optimizer', value: 'adam' }] }, sort: [{ by: 'config.lr', direction: 'desc' as const }] };
    expect(plan({ ...adam, limit: 2 })).toEqual({ strategy: 'ordered', via: 'config.lr' });
    const { next_cursor } = index.search(compileQuery({ ...adam, limit: 2 }));
    expect(plan({ ...adam, limit: 2, cursor: next_cursor })).toEqual({ strategy: 'ordered', via: 'config.lr' });
    expect(plan({ sort: [{ by: 'lr', config_layer: 'resolved', direction: 'asc' }] })).toEqual({ strategy: 'ordered', via: 'config.lr' });
    expect(plan({ created_by: 'bob', sort: [{ by: 'config.lr', direction: 'asc' }], limit: 2 })).toEqual({ strategy: 'ordered', via: 'config.lr' });
  });

  it('walks a field list for one module, kind, created_by or label, also label eq null', () => {
    expect(plan({ module: 'm1' })).toEqual({ strategy: 'ordered', via: 'module' });
    expect(plan({ kind: 'A' })).toEqual({ strategy: 'ordered', via: 'kind' });
    expect(plan({ created_by: 'bob', sort: [{ by: 'created_at', direction: 'desc' }] })).toEqual({ strategy: 'ordered', via: 'created_by' });
    expect(plan({ label: 'best' })).toEqual({ strategy: 'ordered', via: 'label' });
    expect(plan({ filters: [{ path: 'label', op: 'eq', value: null }] })).toEqual({ strategy: 'ordered', via: 'label' });
  });

  it('runs the engine over the smallest candidate set for rare equalities, several filters or sort keys', () => {
    const equality = { config: { filters: [{ path: 'optimizer', value: 'adam' }] }, sort: [{ by: 'config.lr', direction: 'desc' as const }] };
    expect(plan({ ...equality, limit: 100 })).toEqual({ strategy: 'candidates', via: 'config.optimizer' });
    expect(plan({ config: { filters: [{ path: 'lr', value: 0.5 }] }, sort: [{ by: 'config.lr', direction: 'desc' }], limit: 2 })).toEqual({ strategy: 'candidates', via: 'config.lr' });
    expect(plan({ module: 'm1', sort: [{ by: 'config.lr' }, { by: 'uuid' }] })).toEqual({ strategy: 'candidates', via: 'module' });
    expect(plan({ module: 'm1', created_by: 'bob' })).toEqual({ strategy: 'candidates', via: 'created_by' });
    expect(plan({ filters: [{ path: 'uuid', op: 'in', value: ['u01', 'u02'] }] })).toEqual({ strategy: 'candidates', via: 'uuid' });
    expect(plan({ filters: [{ path: 'config.lr', op: 'in', value: [0.1, 0.2] }, { path: 'config.lr', op: 'gt', value: 0.15 }] })).toEqual({ strategy: 'candidates', via: 'config.lr' });
  });

  it('falls back to the linear pass when no filter is an equality', () => {
    expect(plan({ config: { filters: [{ path: 'lr', op: 'gt', value: 1 }] } })).toEqual({ strategy: 'scan' });
    expect(plan({ sort: [{ by: 'config.lr', direction: 'asc' }, { by: 'created_at' }] })).toEqual({ strategy: 'scan' });
    expect(plan({ filters: [{ path: 'archived', value: true }], include_archived: true })).toEqual({ strategy: 'scan' });
  });
});
