/**
 * The search engine against its semantics: property tests hold `search` to the plain oracle
 * (query.oracle.ts) over random records and queries, cursor walks must reproduce the full order,
 * and the examples pin each rule and each validation failure by name.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FindRequest, type FindRequest as FindRequestInput } from '../contract/search.js';
import { PorticoError } from '../errors.js';
import { compileQuery, search } from './query.js';
import { recordsArb, record, scenario } from './query.arbitraries.js';
import { oracleSearch } from './query.oracle.js';
import type { InterfaceRecord } from './store.js';

const RUNS = 200;

/** The uuids `search` returns, in order. */
function uuids(records: InterfaceRecord[], request: FindRequestInput): string[] {
  return search(records, request).items.map((item) => item.uuid);
}

/** The issue paths of the validation error the request fails with. */
function rejection(request: FindRequestInput, records: InterfaceRecord[] = []): Array<string | null> {
  try {
    search(records, request);
  } catch (err) {
    expect(err).toBeInstanceOf(PorticoError);
    expect((err as PorticoError).code).toBe('validation_error');
    expect((err as PorticoError).status).toBe(422);
    return (err as PorticoError).issues!.map((issue) => issue.path);
  }
  throw new Error('the request was accepted');
}

/** The locations the router reports (it prefixes them with "body"). */
function schemaLocations(body: unknown): Array<Array<PropertyKey>> {
  const result = FindRequest.safeParse(body);
  return result.success ? [] : result.error.issues.map((issue) => issue.path);
}

/** Follows next_cursor from the first page to the last, with `between` run after each page. */
function walk(records: InterfaceRecord[], query: FindRequestInput, limit: number, between: (page: number) => void = () => {}): string[] {
  const seen: string[] = [];
  let cursor: string | null = null;
  // Far more pages than any generated record set fills: a cursor that stops advancing fails here.
  for (let page = 0; page < 1000; page++) {
    const result = search(records, { ...query, limit, cursor });
    seen.push(...result.items.map((item) => item.uuid));
    if (result.next_cursor === null) return seen;
    expect(result.items).toHaveLength(limit);
    cursor = result.next_cursor;
    between(page);
  }
  throw new Error('the cursor walk does not end');
}

describe('search against the oracle', () => {
  it('returns the same page and total as a full filter, sort and slice', () => {
    fc.assert(
      fc.property(scenario(30), fc.integer({ min: 1, max: 10 }), fc.integer({ min: 0, max: 12 }), ([records, query], limit, offset) => {
        const request = { ...query, limit, offset };
        const expected = oracleSearch(records, request);
        const result = search(records, request);
        expect(result.items.map((item) => item.uuid)).toEqual(expected.items.map((item) => item.uuid));
        expect(result.total).toBe(expected.total);
        expect(result.next_cursor === null).toBe(offset + limit >= expected.total);
      }),
      { numRuns: RUNS },
    );
  });

  it('walks every match exactly once, in order, by cursor', () => {
    fc.assert(
      fc.property(scenario(30), fc.integer({ min: 1, max: 7 }), ([records, query], limit) => {
        const expected = oracleSearch(records, query).all.map((item) => item.uuid);
        expect(walk(records, query, limit)).toEqual(expected);
      }),
      { numRuns: RUNS },
    );
  });

  it('never repeats or skips a record that existed throughout, while records are inserted between pages', () => {
    fc.assert(
      fc.property(
        scenario(25),
        fc.array(recordsArb('', 4), { maxLength: 8 }),
        fc.integer({ min: 1, max: 5 }),
        ([existing, query], batches, limit) => {
          const records = [...existing];
          const seen = walk(records, query, limit, (page) => {
            const batch = batches[page] ?? [];
            records.push(...batch.map((added) => ({ ...added, uuid: `new-${page}-${added.uuid}` })));
          });
          expect(new Set(seen).size).toBe(seen.length);
          const seenSet = new Set(seen);
          for (const item of oracleSearch(existing, query).all) expect(seenSet.has(item.uuid)).toBe(true);
          // The pages follow the final order: each page starts strictly after the previous one.
          const finalOrder = oracleSearch(records, query).all.map((item) => item.uuid);
          expect(finalOrder.filter((uuid) => seenSet.has(uuid))).toEqual(seen);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

// ---- the rules, one by one -----------------------------------------------------------------

describe('filter semantics', () => {
  const records = [
    record('t', { flag: true, n: 1, tag: 'alpha', list: ['x', 2, { k: 1 }] }),
    record('f', { flag: false, n: 2.5, tag: 'beta', list: [] }),
    record('z', { flag: null, n: 'three', tag: 'Alpha', nested: { k: [1, { deep: 'yes' }] } }),
    record('o', { n: 1.0, obj: { b: 2, a: 1 }, pair: { '0': 'x' } }),
  ];
  const where = (path: string, op?: string, value?: unknown) =>
    uuids(records, { config: { filters: [{ path, op: op as 'eq' | undefined, value }] }, sort: [{ by: 'uuid', direction: 'asc' }] });

  it('matches booleans and null with eq', () => {
    expect(where('flag', 'eq', true)).toEqual(['t']);
    expect(where('flag', 'eq', false)).toEqual(['f']);
    expect(where('flag', 'eq', null)).toEqual(['z']);
    expect(where('flag')).toEqual(['z']); // neither op nor value: eq null
  });

  it('compares numbers by value and deep-equals objects regardless of key order', () => {
    expect(where('n', 'eq', 1)).toEqual(['o', 't']);
    expect(where('flag', 'eq', 1)).toEqual([]);
    expect(where('obj', 'eq', { a: 1, b: 2 })).toEqual(['o']);
    expect(where('pair', 'eq', ['x'])).toEqual([]); // an object with key '0' is no array
    expect(where('list', 'eq', ['x', 2, { k: 1 }])).toEqual(['t']);
  });

  it('never matches a string with gt 2, nor booleans or null with any ordering op', () => {
    expect(where('n', 'gt', 2)).toEqual(['f']);
    expect(where('n', 'gte', 'a')).toEqual(['z']);
    expect(where('flag', 'lt', 5)).toEqual([]);
    expect(where('tag', 'lt', 'alpha')).toEqual(['z']); // 'A' < 'a' in code unit order
  });

  it('skips missing paths with ne', () => {
    expect(where('flag', 'ne', true)).toEqual(['f', 'z']);
  });

  it('matches any or none of a list with in and nin', () => {
    expect(where('n', 'in', [1, 'three'])).toEqual(['o', 't', 'z']);
    expect(where('flag', 'in', [false, null])).toEqual(['f', 'z']);
    expect(where('obj', 'in', [{ b: 2, a: 1 }])).toEqual(['o']);
    expect(where('flag', 'nin', [true])).toEqual(['f', 'z']);
    expect(where('n', 'in', [])).toEqual([]);
  });

  it('finds substrings of strings and elements of arrays with contains', () => {
    expect(where('tag', 'contains', 'alp')).toEqual(['t']); // case-sensitive: not 'Alpha'
    expect(where('list', 'contains', 2)).toEqual(['t']);
    expect(where('list', 'contains', { k: 1 })).toEqual(['t']);
    expect(where('list', 'contains', 'x')).toEqual(['t']);
    expect(where('obj', 'contains', 'a')).toEqual([]);
  });

  it('tells present (even null) from missing with exists', () => {
    expect(where('flag', 'exists')).toEqual(['f', 't', 'z']);
    expect(where('flag', 'exists', true)).toEqual(['f', 't', 'z']);
    expect(where('flag', 'exists', false)).toEqual(['o']);
  });

  it('reads bracket paths as dotted ones and indexes arrays', () => {
    expect(where('nested.k[1].deep', 'eq', 'yes')).toEqual(['z']);
    expect(where('nested.k.1.deep', 'eq', 'yes')).toEqual(['z']);
    expect(where('list[0]', 'eq', 'x')).toEqual(['t']);
    expect(where('list.01', 'exists')).toEqual([]);
    expect(where('constructor', 'exists')).toEqual([]);
  });

  it('filters top-level fields, and finds unlabelled records with label eq null', () => {
    const labelled = [record('a', {}, { label: 'best' }), record('b', {}), record('c', {}, { created_by: 'bob' })];
    expect(uuids(labelled, { filters: [{ path: 'label', op: 'eq', value: null }] }).sort()).toEqual(['b', 'c']);
    expect(uuids(labelled, { label: 'best' })).toEqual(['a']);
    expect(uuids(labelled, { created_by: 'bob', label: null })).toEqual(['c']);
    expect(uuids(labelled, { filters: [{ path: 'config.missing', op: 'exists', value: false }, { path: 'uuid', op: 'in', value: ['a', 'c'] }] }).sort()).toEqual(['a', 'c']);
  });

  it('hides archived records unless asked, also under the include_hidden alias', () => {
    const mixed = [record('live', {}), record('gone', {}, { archived: true })];
    expect(uuids(mixed, {})).toEqual(['live']);
    expect(uuids(mixed, { filters: [{ path: 'archived', value: true }] })).toEqual([]);
    expect(uuids(mixed, { include_archived: true, filters: [{ path: 'archived', value: true }] })).toEqual(['gone']);
    expect(uuids(mixed, { include_hidden: true, sort: [{ by: 'uuid', direction: 'asc' }] })).toEqual(['gone', 'live']);
  });
});

describe('sort and paging', () => {
  it('orders missing < null < false < true < numbers < strings < arrays < objects, and desc reverses it', () => {
    const values: Array<[string, unknown]> = [['obj', { a: 1 }], ['arr', [1]], ['str', '1'], ['num', -2], ['yes', true], ['no', false], ['nul', null]];
    const records = [record('miss', {}), ...values.map(([uuid, v]) => record(uuid, { v }))];
    const ascending = ['miss', 'nul', 'no', 'yes', 'num', 'str', 'arr', 'obj'];
    expect(uuids(records, { sort: [{ by: 'config.v', direction: 'ASC' }] })).toEqual(ascending);
    expect(uuids(records, { sort: [{ by: 'v', config_layer: 'resolved', direction: 'desc' }] })).toEqual([...ascending].reverse());
  });

  it('defaults to created_at desc and breaks ties by uuid ascending, whatever the input order', () => {
    const records = [
      record('b', {}, { created_at: '2024-01-02T00:00:00.000Z' }),
      record('c', {}, { created_at: '2024-01-01T00:00:00.000Z' }),
      record('a', {}, { created_at: '2024-01-02T00:00:00.000Z' }),
      record('d', {}, { created_at: '2024-01-01T00:00:00.000Z' }),
    ];
    expect(uuids(records, {})).toEqual(['a', 'b', 'c', 'd']);
    expect(uuids([...records].reverse(), {})).toEqual(['a', 'b', 'c', 'd']);
    expect(uuids(records, { sort: [{ by: 'created_at', direction: 'asc' }] })).toEqual(['c', 'd', 'a', 'b']);
  });

  it('counts every match in total and returns no cursor after the last page', () => {
    const records = ['a', 'b', 'c', 'd', 'e'].map((uuid) => record(uuid, {}));
    const first = search(records, { limit: 2, sort: [{ by: 'uuid', direction: 'asc' }] });
    expect(first.items.map((item) => item.uuid)).toEqual(['a', 'b']);
    expect(first.total).toBe(5);
    const second = search(records, { limit: 3, cursor: first.next_cursor, sort: [{ by: 'uuid', direction: 'asc' }] });
    expect(second.items.map((item) => item.uuid)).toEqual(['c', 'd', 'e']);
    expect(second.total).toBe(5);
    expect(second.next_cursor).toBeNull();
    expect(search(records, { offset: 4, limit: 1 }).next_cursor).toBeNull();
  });

  it('returns the record objects themselves and leaves them untouched', () => {
    const records = [record('a', { v: [3, 1] }), record('b', { v: { z: 1, a: 2 } })];
    const before = structuredClone(records);
    const { items } = search(records, { sort: [{ by: 'config.v', direction: 'asc' }] });
    expect(items[0]).toBe(records[0]);
    expect(records).toEqual(before);
  });
});

describe('validation failures', () => {
  it('rejects a bad config path where it is', () => {
    expect(rejection({ config: { filters: [{ path: 'a..b' }] } })).toEqual(['config.filters.0.path']);
    expect(rejection({ config: { filters: [{ path: 'a', value: 1 }, { path: 'a b' }] } })).toEqual(['config.filters.1.path']);
    expect(rejection({ config: { filters: [{ path: 'a[0]b' }] } })).toEqual(['config.filters.0.path']);
    expect(rejection({ config: { filters: [{ path: '' }] } })).toEqual(['config.filters.0.path']);
    expect(schemaLocations({ config: { filters: [{ path: '$.a' }] } })).toEqual([['config', 'filters', 0, 'path']]);
  });

  it('rejects a record path outside config and the listed fields', () => {
    expect(rejection({ filters: [{ path: 'meta.x' }] })).toEqual(['filters.0.path']);
    expect(rejection({ filters: [{ path: 'label.x' }] })).toEqual(['filters.0.path']);
  });

  it('rejects an unknown op and a value that does not fit the op', () => {
    expect(rejection({ filters: [{ path: 'config.a', op: 'like' as 'eq' }] })).toEqual(['filters.0.op']);
    expect(rejection({ config: { filters: [{ path: 'a', op: 'gt', value: true }] } })).toEqual(['config.filters.0.value']);
    expect(rejection({ config: { filters: [{ path: 'a', op: 'lt' }] } })).toEqual(['config.filters.0.value']);
    expect(rejection({ config: { filters: [{ path: 'a', op: 'in', value: 'x' }] } })).toEqual(['config.filters.0.value']);
    expect(rejection({ config: { filters: [{ path: 'a', op: 'exists', value: 1 }] } })).toEqual(['config.filters.0.value']);
  });

  it('rejects a bad sort key and a bad direction', () => {
    expect(rejection({ sort: [{ by: 'created_at_ns' }] })).toEqual(['sort.0.by']);
    expect(rejection({ sort: [{ by: 'created_at' }, { by: 'a..b', config_layer: 'resolved' }] })).toEqual(['sort.1.by']);
    expect(rejection({ sort: [{ by: 'created_at', direction: 'up' }] })).toEqual(['sort.0.direction']);
    expect(rejection({ sort: [{ by: 'a', config_layer: 'default' as 'resolved' }] })).toEqual(['sort.0.config_layer']);
  });

  it('rejects a cursor together with an offset', () => {
    const records = [record('a', {}), record('b', {})];
    const { next_cursor } = search(records, { limit: 1 });
    expect(rejection({ limit: 1, cursor: next_cursor, offset: 1 }, records)).toEqual(['offset']);
  });

  it('rejects a tampered cursor', () => {
    const records = [record('a', {}), record('b', {})];
    const cursor = search(records, { limit: 1 }).next_cursor!;
    const decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as { k: unknown[] };
    const wrongShape = Buffer.from(JSON.stringify({ ...decoded, k: [...decoded.k, 0] })).toString('base64url');
    for (const bad of ['x' + cursor, cursor.slice(0, -3), 'not a cursor', wrongShape, '']) {
      expect(rejection({ limit: 1, cursor: bad }, records)).toEqual(['cursor']);
    }
  });

  it('rejects a cursor of another query, but not of the same query with reordered filters or another limit', () => {
    const records = ['a', 'b', 'c'].map((uuid) => record(uuid, { n: 1, s: 'x' }));
    const filters = [
      { path: 'config.n', value: 1 },
      { path: 'config.s', op: 'eq' as const, value: 'x' },
    ];
    const { next_cursor } = search(records, { limit: 1, filters });
    expect(rejection({ limit: 1, cursor: next_cursor, filters: filters.slice(1) }, records)).toEqual(['cursor']);
    expect(rejection({ limit: 1, cursor: next_cursor, filters, sort: [{ by: 'uuid' }] }, records)).toEqual(['cursor']);
    expect(rejection({ limit: 1, cursor: next_cursor, filters, include_archived: true }, records)).toEqual(['cursor']);
    expect(uuids(records, { limit: 5, cursor: next_cursor, filters: [...filters].reverse() })).toHaveLength(2);
  });

  it('rejects include_hidden contradicting include_archived', () => {
    expect(rejection({ include_archived: true, include_hidden: false })).toEqual(['include_hidden']);
  });

  it('compiles once and runs the same query over changing records', () => {
    const query = compileQuery({ config: { filters: [{ path: 'n', op: 'gte', value: 2 }] } });
    expect(query.run([record('a', { n: 1 })]).total).toBe(0);
    expect(query.run([record('a', { n: 1 }), record('b', { n: 2 })]).items.map((item) => item.uuid)).toEqual(['b']);
  });
});
