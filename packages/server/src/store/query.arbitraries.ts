/**
 * Random records and queries for the search property tests (query.test.ts against the engine,
 * lowdb-index.test.ts against the indexed store, test/store-conformance.test.ts against every
 * store), and the record factory their examples use.
 * Few keys and small value pools, so that paths collide and filters hit; queries also draw their
 * paths and values from the records they run on.
 */
import fc from 'fast-check';
import type { FindRequest as FindRequestInput } from '../contract/search.js';
import type { InterfaceRecord } from './store.js';

/** A record with defaults for every field the test does not care about. */
export function record(uuid: string, config: Record<string, unknown>, extra: Partial<InterfaceRecord> = {}): InterfaceRecord {
  return {
    uuid,
    module: 'm1',
    kind: 'Interface',
    class_name: 'A',
    config,
    predicate: {},
    version: [],
    label: null,
    meta: {},
    created_by: 'alice',
    created_at: '2024-01-01T00:00:00.000Z',
    archived: false,
    ...extra,
  };
}

export const TIMES = [0, 1, 2, 3, 4, 5].map((day) => new Date(Date.UTC(2024, 0, 1 + day)).toISOString());
const KEYS = ['a', 'b', 'c', '0', '1', 'x-y'];

const scalar = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: -2, max: 2 }) },
  { weight: 1, arbitrary: fc.constantFrom(0.5, -1.5, 2.0, -0) },
  { weight: 1, arbitrary: fc.double({ min: -10, max: 10, noNaN: true }) },
  { weight: 4, arbitrary: fc.constantFrom('', 'a', 'ab', 'b', 'B', 'é', '😀', 'a😀b', '2', 'x') },
  { weight: 1, arbitrary: fc.string({ maxLength: 3, unit: 'binary' }) },
  { weight: 2, arbitrary: fc.boolean() },
  { weight: 2, arbitrary: fc.constant(null) },
);

const { json } = fc.letrec((tie) => ({
  json: fc.oneof({ maxDepth: 3 }, { weight: 6, arbitrary: scalar }, { weight: 1, arbitrary: tie('array') }, { weight: 1, arbitrary: tie('object') }),
  array: fc.array(tie('json'), { maxLength: 3 }),
  object: fc.dictionary(fc.constantFrom(...KEYS), tie('json'), { maxKeys: 3 }),
}));

const recordFields = fc.record({
  module: fc.constantFrom('m1', 'm2'),
  // Every interface record is kind 'Interface'; another kind stands for records of another kind.
  kind: fc.constantFrom('Interface', 'Interface', 'Execution'),
  class_name: fc.constantFrom('A', 'B'),
  config: fc.dictionary(fc.constantFrom(...KEYS), json, { maxKeys: 4 }),
  label: fc.constantFrom(null, 'x', 'y', 'é'),
  created_by: fc.constantFrom('alice', 'bob'),
  created_at: fc.constantFrom(...TIMES),
  archived: fc.boolean(),
});

/** Records with unique uuids, each uuid prefixed so that separate batches never collide. */
export function recordsArb(prefix: string, maxLength: number): fc.Arbitrary<InterfaceRecord[]> {
  return fc
    .uniqueArray(fc.string({ minLength: 1, maxLength: 4 }), { maxLength, size: 'max' })
    .chain((ids) => fc.tuple(...ids.map(() => recordFields)).map((fields) => fields.map((f, i) => record(prefix + ids[i], f.config, f))));
}

/** Every config path (up to three deep, some in bracket form) with each value found there. */
function harvest(records: InterfaceRecord[]): Array<[string, unknown]> {
  const found: Array<[string, unknown]> = [];
  const visit = (value: unknown, path: string, depth: number) => {
    if (path) found.push([path, value]);
    if (depth === 3 || value === null || typeof value !== 'object') return;
    for (const [key, child] of Object.entries(value)) {
      const bracket = Array.isArray(value) && depth % 2 === 1;
      visit(child, bracket ? `${path}[${key}]` : path ? `${path}.${key}` : key, depth + 1);
    }
  };
  for (const { config } of records) visit(config, '', 0);
  return found;
}

const FIXED_PATHS = ['a', 'b', 'a.0', 'a[0]', 'c[0][1]', 'constructor', 'a.01', 'zz'];
const TOP_FIELDS = ['uuid', 'module', 'kind', 'class_name', 'label', 'created_by', 'created_at', 'archived'] as const;

/** Valid queries (without paging fields) aimed at the given records. */
export function queryArb(records: InterfaceRecord[]): fc.Arbitrary<FindRequestInput> {
  const configHits = harvest(records);
  const recordHits: Array<[string, unknown]> = [
    ...configHits.map(([path, value]): [string, unknown] => [`config.${path}`, value]),
    ...records.flatMap((r) => TOP_FIELDS.map((field): [string, unknown] => [field, r[field]])),
  ];
  const configPaths = [...FIXED_PATHS, ...configHits.map(([path]) => path)];
  const recordPaths = ['config', ...TOP_FIELDS, ...configPaths.map((path) => `config.${path}`)];
  const value = fc.oneof(json, fc.constantFrom<unknown>('m1', 'B', 'Interface', 'x', 'alice', ...TIMES));
  const ordered = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.double({ min: -10, max: 10, noNaN: true }), fc.constantFrom('', 'a', 'b', 'é', '2', 'x', ...TIMES));

  /** A path with a value: random, or (twice as often) a value some record holds there. */
  const target = (paths: string[], hits: Array<[string, unknown]>) => {
    const random = fc.tuple(fc.constantFrom(...paths), value);
    return hits.length ? fc.oneof({ weight: 1, arbitrary: random }, { weight: 2, arbitrary: fc.constantFrom(...hits) }) : random;
  };
  const filter = (paths: string[], hits: Array<[string, unknown]>) =>
    target(paths, hits).chain(([path, hit]) =>
      fc.oneof(
        fc.record({ path: fc.constant(path), op: fc.constantFrom('eq' as const, undefined), value: fc.option(fc.constant(hit), { freq: 5, nil: undefined }) }),
        fc.record({ path: fc.constant(path), op: fc.constant('ne' as const), value: fc.constant(hit) }),
        fc.record({
          path: fc.constant(path),
          op: fc.constant('contains' as const),
          value: fc.constant(typeof hit === 'string' ? hit.slice(1) : Array.isArray(hit) && hit.length ? hit[0] : hit),
        }),
        fc.record({
          path: fc.constant(path),
          op: fc.constantFrom('lt' as const, 'lte' as const, 'gt' as const, 'gte' as const),
          value: typeof hit === 'number' || typeof hit === 'string' ? fc.constant(hit) : ordered,
        }),
        fc.record({ path: fc.constant(path), op: fc.constantFrom('in' as const, 'nin' as const), value: fc.array(value, { maxLength: 3 }).map((rest) => [...rest, hit]) }),
        fc.record({ path: fc.constant(path), op: fc.constant('exists' as const), value: fc.option(fc.boolean(), { nil: undefined }) }),
      ),
    );
  const sortSpec = fc.oneof(
    fc.record({ by: fc.constantFrom(...recordPaths), direction: fc.constantFrom(undefined, 'asc', 'desc', 'ASC', 'Desc') }),
    fc.record({ by: fc.constantFrom(...configPaths), config_layer: fc.constant('resolved' as const), direction: fc.constantFrom('asc', 'DESC') }),
  );
  const sometimes = <T,>(arbitrary: fc.Arbitrary<T>) => fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary });
  return fc.record({
    module: sometimes(fc.constantFrom(null, 'm1')),
    kind: sometimes(fc.constantFrom(null, 'Interface', 'Execution')),
    class_name: sometimes(fc.constantFrom(null, 'B')),
    created_by: sometimes(fc.constantFrom(null, 'bob')),
    label: sometimes(fc.constantFrom(null, 'x')),
    config: sometimes(fc.record({ filters: fc.array(filter(configPaths, configHits), { maxLength: 2 }) })),
    filters: fc.array(filter(recordPaths, recordHits), { maxLength: 2 }),
    sort: fc.array(sortSpec, { maxLength: 3 }),
    include_archived: fc.constantFrom(undefined, true, false),
  });
}

/** Records and a query aimed at them. */
export function scenario(maxRecords: number): fc.Arbitrary<[InterfaceRecord[], FindRequestInput]> {
  return recordsArb('r', maxRecords).chain((records) => fc.tuple(fc.constant(records), queryArb(records)));
}
