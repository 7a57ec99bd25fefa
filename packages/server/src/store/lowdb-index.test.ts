/**
 * The indexed records against the linear pass: random inserts, label and archive updates, moves
 * and deletes interleaved with random queries, every answer (items, order, total, total_exact,
 * next_cursor) compared with the engine over the same records and with the oracle, under the
 * default total bound and under a bound of a few records (so that counting passes stop early);
 * cursor walks with mutations between pages; the order's comparisons against the engine's sort
 * keys; and the plan each common query gets, so that a fast path cannot silently stop being used.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LIMITS } from '../config/constants.js';
import type { FindRequest } from '../contract/search.js';
import { compareTo, rankOf } from './lowdb-order.js';
import { RecordIndex } from './lowdb-index.js';
import { canonicalJson } from './canonical-json.js';
import { compileQuery, sortKey } from './query.js';
import { queryArb, record, recordsArb, TIMES } from './query.arbitraries.js';
import { oracleSearch } from './query.oracle.js';
import type { InterfaceRecord } from './store.js';

const RUNS = 150;

/**
 * A mutation; `i` picks a pool record (insert) or a held one (the others), modulo their count, or
 * with `newest` the one inserted last (an update of a record added since the last search).
 */
type Mutation =
  | { kind: 'insert'; i: number }
  | { kind: 'label'; i: number; label: string | null; newest?: boolean }
  | { kind: 'archive'; i: number; archived: boolean; newest?: boolean }
  | { kind: 'move'; i: number; at: number; archived: boolean }
  | { kind: 'delete'; i: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('insert' as const), i: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('label' as const), i: fc.nat(), label: fc.constantFrom(null, 'x', 'y', 'é'), newest: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('archive' as const), i: fc.nat(), archived: fc.boolean(), newest: fc.boolean() }) },
  // The same uuid put again with another created_at: it changes places in every list.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('move' as const), i: fc.nat(), at: fc.nat({ max: TIMES.length - 1 }), archived: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), i: fc.nat() }) },
);

/** Values of config `n`: numbers and strings (what ranges match), with null, a boolean and an array among them. */
const N_VALUES: unknown[] = [3, 1, 4, 1.5, -0, 'x', 'b', null, 2, true, [1], 'a', 0];

/**
 * queryArb's records, each with a config key `half` holding 0 or 1 (an equality that matches half
 * the records, the kind that makes walking a sort order cheaper than reading its matches) and a
 * key `n` (missing in every seventh) for ranges.
 */
function poolArb(): fc.Arbitrary<InterfaceRecord[]> {
  return recordsArb('r', 30)
    .filter((pool) => pool.length > 0)
    .map((pool) =>
      pool.map((r, i) => ({ ...r, config: { ...r.config, half: i % 2, ...(i % 7 === 6 ? {} : { n: N_VALUES[(i * 5) % N_VALUES.length] }) } })),
    );
}

const direction = fc.constantFrom('asc' as const, 'desc' as const);
const rangeOp = fc.constantFrom('lt' as const, 'lte' as const, 'gt' as const, 'gte' as const);

/**
 * The shapes the structures answer without a pass over every record, with the archived flag, the
 * total rule's `exact_total` and the sort drawn at random: archived only; a range on a config
 * path, a record field or created_at, sorted by its own path or another; module with created_by;
 * an equality on created_at.
 */
function indexedShapeArb(pool: InterfaceRecord[]): fc.Arbitrary<FindRequest> {
  const sortBy = fc.constantFrom('created_at', 'config.n', 'config.half', 'label', 'uuid', 'config.a');
  const common = fc.record({ include_archived: fc.constantFrom(undefined, true, false), exact_total: fc.constantFrom(undefined, true, false) });
  const rangeValue = fc.oneof(fc.constantFrom<number | string>(0, 1, 1.5, 2, 3, 'a', 'b', 'x', 'é', ''), fc.integer({ min: -1, max: 5 }));
  const times = fc.constantFrom(...TIMES, ...pool.map((r) => r.created_at));
  const extra = fc.option(
    fc.oneof(
      fc.constant({ path: 'module', op: 'eq' as const, value: 'm1' }),
      fc.constant({ path: 'config.half', op: 'eq' as const, value: 1 }),
      fc.constant({ path: 'label', op: 'eq' as const, value: null }),
      fc.constant({ path: 'config.n', op: 'exists' as const, value: true }),
      fc.record({ path: fc.constant('config.n'), op: rangeOp, value: rangeValue }),
    ),
    { nil: undefined },
  );
  return fc.oneof(
    // Archived only, mostly as a user asks for it (include_archived: true).
    fc.tuple(common, fc.constantFrom(true, true, true, false), fc.constantFrom<FindRequest['sort']>([], [{ by: 'created_at', direction: 'asc' }]), extra).map(
      ([flags, archived, sort, more]) => ({
        ...flags,
        include_archived: flags.include_archived ?? true,
        filters: [{ path: 'archived', value: archived }, ...(more ? [more] : [])],
        sort,
      }),
    ),
    fc.tuple(common, fc.constantFrom('n', 'half', 'a', 'b'), rangeOp, rangeValue, fc.option(sortBy, { nil: undefined }), direction, extra).map(
      ([flags, path, op, value, by, dir, more]) => ({
        ...flags,
        config: { filters: [{ path, op, value }] },
        filters: more ? [more] : [],
        // Sorted by the range's own path when `by` is missing.
        sort: [{ by: by ?? `config.${path}`, direction: dir }],
      }),
    ),
    fc.tuple(common, fc.constantFrom('uuid', 'label', 'created_at'), rangeOp, fc.oneof(rangeValue, times, fc.constantFrom(...pool.map((r) => r.uuid))), sortBy, direction).map(
      ([flags, path, op, value, by, dir]) => ({ ...flags, filters: [{ path, op, value }], sort: [{ by, direction: dir }] }),
    ),
    fc.tuple(common, fc.constantFrom<FindRequest['sort']>([], [{ by: 'created_at', direction: 'asc' }], [{ by: 'config.n', direction: 'desc' }])).map(([flags, sort]) => ({
      ...flags,
      module: 'm1',
      created_by: 'bob',
      sort,
    })),
    fc.tuple(common, times, direction, extra).map(([flags, time, dir, more]) => ({
      ...flags,
      filters: [{ path: 'created_at', value: time }, ...(more ? [more] : [])],
      sort: [{ by: 'created_at', direction: dir }],
    })),
  );
}

/**
 * queryArb's queries, and more often the same cut down to what the indexes answer without a pass
 * (at most one equality, one sort key, often created_at), or one of the indexed shapes, so the
 * fast plans get as many runs as the fallback.
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
    { weight: 3, arbitrary: indexedShapeArb(pool) },
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
  const records = [...held.values()];
  const current = 'newest' in change && change.newest ? records.at(-1)! : records[change.i % held.size]!;
  if (change.kind === 'delete') {
    held.delete(current.uuid);
    expect(index.delete(current.uuid)).toBe(true);
    return;
  }
  // As the store does: an update replaces the record with a patched copy.
  const next =
    change.kind === 'label'
      ? { ...current, label: change.label }
      : change.kind === 'move'
        ? { ...current, created_at: TIMES[change.at]!, archived: change.archived }
        : { ...current, archived: change.archived };
  held.set(next.uuid, next);
  index.put(next);
}

/**
 * The index's answer, checked against the engine's linear pass (exactly) and the oracle; and so is
 * the answer of every other plan the index could have picked for the query.
 */
function expectSameAnswer(index: RecordIndex, held: Map<string, InterfaceRecord>, request: FindRequest): ReturnType<RecordIndex['search']> {
  const query = compileQuery(request);
  const got = index.search(query);
  const records = [...held.values()];
  const linear = query.run(records);
  for (const [plan, answer] of [['chosen', got] as const, ...index.everyPlan(query).map(({ plan, answer }) => [JSON.stringify(plan), answer] as const)]) {
    expect({ plan, uuids: answer.items.map((item) => item.uuid), total: answer.total, total_exact: answer.total_exact, next_cursor: answer.next_cursor }).toEqual({
      plan,
      uuids: linear.items.map((item) => item.uuid),
      total: linear.total,
      total_exact: linear.total_exact,
      next_cursor: linear.next_cursor,
    });
    answer.items.forEach((item, i) => expect(item).toBe(linear.items[i])); // the held objects, not stale ones
  }
  if (request.cursor == null) {
    const oracle = oracleSearch(records, request);
    expect(got.items.map((item) => item.uuid)).toEqual(oracle.items.map((item) => item.uuid));
    // The oracle restates the default bound; under a lowered one an inexact total is below every match.
    if (got.total_exact) expect(got.total).toBe(oracle.total);
    else expect(got.total).toBeLessThan(oracle.total);
  }
  return got;
}

/** 1 to `max`, small more often (a bound of offset + limit above the matches never stops a count). */
const smallMostly = (max: number) => fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max }));

/** Runs `body` with `LIMITS.searchExactTotal` set to `bound` (queries compiled meanwhile take it), then puts it back. */
function withExactTotal(bound: number, body: () => void): void {
  const limits = LIMITS as { searchExactTotal: number };
  const saved = limits.searchExactTotal;
  limits.searchExactTotal = bound;
  try {
    body();
  } finally {
    limits.searchExactTotal = saved;
  }
}

/** A pool of records, how many of them to load at first, and steps over them. */
function scenario<T>(step: (pool: InterfaceRecord[]) => fc.Arbitrary<T>): fc.Arbitrary<[InterfaceRecord[], number, T[]]> {
  return poolArb().chain((pool) => fc.tuple(fc.constant(pool), fc.nat({ max: pool.length }), fc.array(step(pool), { maxLength: 40 })));
}

describe('indexed search against the linear pass', () => {
  // The default bound never stops a count among 30 records; a bound of 2 makes counting passes stop early.
  describe.each([
    { name: 'totals exact up to the default bound', bound: LIMITS.searchExactTotal },
    { name: 'totals exact up to 2 matches (or offset + limit)', bound: 2 },
  ])('$name', ({ bound }) => {
    it('answers every query like a pass over every record, through inserts, updates, moves and deletes', () => {
      const step = (pool: InterfaceRecord[]) =>
        fc.oneof(
          mutation,
          fc.record({ kind: fc.constant('query' as const), request: requestArb(pool), limit: smallMostly(10), offset: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 12 })) }),
        );
      withExactTotal(bound, () =>
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
        ),
      );
    });

    it('pages by cursor like the linear pass while records change between pages, and ends', () => {
      withExactTotal(bound, () =>
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
        ),
      );
    });
  });

  it('keeps records added, changed and deleted between searches in a path\'s order', () => {
    const records = Array.from({ length: 40 }, (_, i) => record(`u${String(i).padStart(2, '0')}`, { n: i % 7, s: `v${i % 5}` }, { archived: i % 9 === 0 }));
    const index = new RecordIndex();
    index.load(records.slice(0, 20));
    const held = new Map(records.slice(0, 20).map((r) => [r.uuid, r]));
    const requests: FindRequest[] = [
      { sort: [{ by: 'config.n', direction: 'asc' }], limit: 7 },
      { config: { filters: [{ path: 'n', op: 'gte', value: 3 }] }, sort: [{ by: 'config.n', direction: 'desc' }], limit: 5, include_archived: true },
      { config: { filters: [{ path: 's', op: 'lt', value: 'v3' }] }, sort: [{ by: 'config.n', direction: 'asc' }], limit: 4, offset: 3 },
    ];
    for (const request of requests) expectSameAnswer(index, held, request);
    // Added after the orders were built, some changed before any search reads them again.
    for (let i = 20; i < 40; i++) mutate(index, held, records, { kind: 'insert', i });
    mutate(index, held, records, { kind: 'archive', i: 0, archived: true, newest: true });
    mutate(index, held, records, { kind: 'label', i: 0, label: 'x', newest: true });
    mutate(index, held, records, { kind: 'delete', i: 30 });
    mutate(index, held, records, { kind: 'archive', i: 25, archived: false });
    for (const request of requests) expectSameAnswer(index, held, request);
  });

  it('sorts a group of equal first keys larger than one page of the engine by its other keys', () => {
    // 2,500 records in two groups: each group's matches take the engine more than one page to sort.
    const records = Array.from({ length: 2500 }, (_, i) =>
      record(`u${String(i).padStart(4, '0')}`, { g: i % 2, k: (i * 7919) % 1013 }, { created_at: TIMES[i % TIMES.length]!, archived: i % 11 === 0 }),
    );
    const index = new RecordIndex();
    index.load(records);
    const held = new Map(records.map((r) => [r.uuid, r]));
    for (const direction of ['asc', 'desc'] as const) {
      const request: FindRequest = { sort: [{ by: 'config.g', direction }, { by: 'config.k', direction: 'desc' }], limit: 7 };
      for (const offset of [0, 1100, 1240]) expectSameAnswer(index, held, { ...request, offset });
      const { next_cursor } = expectSameAnswer(index, held, { ...request, offset: 1195 });
      expectSameAnswer(index, held, { ...request, cursor: next_cursor });
    }
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

describe('the order against the engine\'s sort keys', () => {
  // The order's comparisons read values where they lie; query.ts sortKey is the reference.
  const value = fc.oneof(
    fc.jsonValue({ maxDepth: 2 }),
    fc.constantFrom<unknown>(undefined, -0, 0, 1, 1.5, '', 'a', 'é', '😀', '\ud800', [], {}, { b: 1, a: [2] }, { a: [2], b: 1 }),
  );
  const reference = (v: unknown) => {
    const key: Array<number | string> = [0, 0];
    sortKey(v, key, 0);
    return key as [number, number | string];
  };
  const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0);

  it('ranks and compares every JSON value as sortKey does', () => {
    fc.assert(
      fc.property(value, value, (a, b) => {
        const [rankA, scalarA] = reference(a);
        const [rankB, scalarB] = reference(b);
        expect(rankOf(a)).toBe(rankA);
        const expected = rankA !== rankB ? sign(rankA - rankB) : scalarA === scalarB ? 0 : scalarA < scalarB ? -1 : 1;
        expect(compareTo(a, rankB, scalarB)).toBe(expected);
        expect(compareTo(a, rankA, scalarA)).toBe(0);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps apart what eq keeps apart, and together what it joins', () => {
    expect(compareTo({ b: 1, a: [2] }, 7, canonicalJson({ a: [2], b: 1 }))).toBe(0);
    expect(compareTo(-0, 4, 0)).toBe(0);
    expect(compareTo(true, 4, 1)).toBe(-1);
    expect(compareTo('1', 4, 1)).toBe(1);
    expect(compareTo([1], 7, '{}')).toBe(-1);
  });
});

describe('the plan each common query gets', () => {
  const index = new RecordIndex();
  // Large enough that what each plan reads weighs as it does at scale.
  index.load(
    Array.from({ length: 1200 }, (_, i) =>
      record(`u${String(i).padStart(4, '0')}`, { lr: (i % 60) / 10, optimizer: ['sgd', 'adam', 'rmsprop'][i % 3] }, {
        module: i % 2 ? 'm1' : 'm2',
        created_by: i % 4 ? 'alice' : 'bob',
        label: i % 5 ? null : 'best',
        created_at: new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString(),
        archived: i % 12 === 7,
      }),
    ),
  );
  const plan = (request: FindRequest) => index.plan(compileQuery(request));

  it('walks the created_at list for newest first, oldest first, any offset and any cursor page of them', () => {
    expect(plan({})).toEqual({ strategy: 'ordered', via: 'created_at' });
    expect(plan({ sort: [{ by: 'created_at', direction: 'asc' }], include_archived: true })).toEqual({ strategy: 'ordered', via: 'created_at' });
    expect(plan({ limit: 5, offset: 30 })).toEqual({ strategy: 'ordered', via: 'created_at' });
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

  it('walks a field list for one module, kind, class_name, created_by or label, also label eq null', () => {
    expect(plan({ module: 'm1' })).toEqual({ strategy: 'ordered', via: 'module' });
    expect(plan({ kind: 'Interface' })).toEqual({ strategy: 'ordered', via: 'kind' });
    expect(plan({ class_name: 'A' })).toEqual({ strategy: 'ordered', via: 'class_name' });
    expect(plan({ created_by: 'bob', sort: [{ by: 'created_at', direction: 'desc' }] })).toEqual({ strategy: 'ordered', via: 'created_by' });
    expect(plan({ label: 'best' })).toEqual({ strategy: 'ordered', via: 'label' });
    expect(plan({ filters: [{ path: 'label', op: 'eq', value: null }] })).toEqual({ strategy: 'ordered', via: 'label' });
  });

  it('walks the smaller field list for module with created_by, testing the other', () => {
    expect(plan({ module: 'm1', created_by: 'alice', limit: 5 })).toEqual({ strategy: 'ordered', via: 'module' });
  });

  it('walks the archived list for archived only', () => {
    const archived = { filters: [{ path: 'archived', value: true }], include_archived: true };
    expect(plan(archived)).toEqual({ strategy: 'ordered', via: 'archived' });
    expect(plan({ ...archived, sort: [{ by: 'created_at', direction: 'asc' }], limit: 1 })).toEqual({ strategy: 'ordered', via: 'archived' });
  });

  it('walks the slice of its own order for a range sorted by its path, the sort path\'s order for a range sorted by another', () => {
    const range = { config: { filters: [{ path: 'lr', op: 'gte' as const, value: 4 }] } };
    expect(plan({ ...range, sort: [{ by: 'config.lr', direction: 'desc' }], limit: 5 })).toEqual({ strategy: 'ordered', via: 'config.lr' });
    expect(plan({ ...range, sort: [{ by: 'config.lr', direction: 'asc' }], limit: 5 })).toEqual({ strategy: 'ordered', via: 'config.lr' });
    expect(plan({ config: { filters: [{ path: 'lr', op: 'gt', value: 1 }] }, sort: [{ by: 'config.optimizer', direction: 'asc' }], limit: 5 })).toEqual({
      strategy: 'ordered',
      via: 'config.optimizer',
    });
    expect(plan({ filters: [{ path: 'created_at', op: 'lt', value: '2024-01-01T00:00:30.000Z' }], limit: 5 })).toEqual({ strategy: 'ordered', via: 'created_at' });
    expect(plan({ filters: [{ path: 'created_at', op: 'lt', value: '2024-01-01T00:00:30.000Z' }], limit: 5, offset: 20 })).toEqual({ strategy: 'ordered', via: 'created_at' });
  });

  it('walks the first sort key\'s order group by group for several keys, when its groups are small', () => {
    expect(plan({ sort: [{ by: 'config.lr', direction: 'desc' }, { by: 'created_at', direction: 'asc' }], limit: 5 })).toEqual({ strategy: 'ordered', via: 'config.lr' });
    expect(plan({ config: { filters: [{ path: 'lr', op: 'gt', value: 1 }] }, sort: [{ by: 'config.lr' }, { by: 'created_at' }], limit: 5 })).toEqual({ strategy: 'ordered', via: 'config.lr' });
    expect(plan({ module: 'm1', sort: [{ by: 'created_at' }, { by: 'config.lr' }], limit: 5 })).toEqual({ strategy: 'ordered', via: 'module' });
  });

  it('walks newest first for contains once a counting pass found the bound and one more', () => {
    withExactTotal(5, () => {
      expect(plan({ config: { filters: [{ path: 'optimizer', op: 'contains', value: 'a' }] }, limit: 2 })).toEqual({ strategy: 'ordered', via: 'created_at' });
    });
  });

  it('runs the engine over the smallest candidate set for rare matches, several filters or sort keys', () => {
    expect(plan({ config: { filters: [{ path: 'lr', value: 0.5 }] }, sort: [{ by: 'config.lr', direction: 'desc' }], limit: 2 })).toEqual({ strategy: 'candidates', via: 'config.lr' });
    expect(plan({ module: 'm1', sort: [{ by: 'config.optimizer' }, { by: 'uuid' }] })).toEqual({ strategy: 'candidates', via: 'module' });
    expect(plan({ module: 'm1', created_by: 'bob' })).toEqual({ strategy: 'candidates', via: 'created_by' });
    expect(plan({ filters: [{ path: 'uuid', op: 'in', value: ['u0001', 'u0002'] }] })).toEqual({ strategy: 'candidates', via: 'uuid' });
    expect(plan({ filters: [{ path: 'config.lr', op: 'in', value: [0.1, 0.2] }, { path: 'config.lr', op: 'gt', value: 0.15 }] })).toEqual({ strategy: 'candidates', via: 'config.lr' });
    expect(plan({ config: { filters: [{ path: 'lr', op: 'gt', value: 5.7 }] } })).toEqual({ strategy: 'candidates', via: 'config.lr' });
  });

  it('falls back to the linear pass when no structure narrows and the order cannot be walked', () => {
    // Three groups of 400 for several sort keys: each a whole pass of the engine.
    expect(plan({ sort: [{ by: 'config.optimizer', direction: 'asc' }, { by: 'created_at' }] })).toEqual({ strategy: 'scan' });
    expect(plan({ config: { filters: [{ path: 'optimizer', op: 'ne', value: 'x' }] }, sort: [{ by: 'config.optimizer' }, { by: 'created_at' }] })).toEqual({ strategy: 'scan' });
    expect(plan({ config: { filters: [{ path: 'optimizer', op: 'contains', value: 'zz' }] } })).toEqual({ strategy: 'scan' });
  });
});
