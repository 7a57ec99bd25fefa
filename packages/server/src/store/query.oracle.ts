/**
 * Test oracle for `query.ts`: the search semantics written as plainly as possible (filter the
 * whole list, sort the whole list, slice), with no precompilation and no heap, so that the
 * property tests can hold the engine to it. Assumes a valid request; used only by query.test.ts.
 */
import type { FindRequest } from '../contract/search.js';
import type { InterfaceRecord } from './store.js';

const MISSING = Symbol('missing');

/** `a[0].b` → ['a', '0', 'b']. */
function segments(path: string): string[] {
  return path.replace(/\[(\d+)\]/g, '.$1').replace(/^\./, '').split('.');
}

function lookup(start: unknown, path: string[]): unknown {
  let current = start;
  for (const segment of path) {
    if (Array.isArray(current)) {
      if (!/^(0|[1-9][0-9]*)$/.test(segment) || Number(segment) >= current.length) return MISSING;
      current = current[Number(segment)];
    } else if (typeof current === 'object' && current !== null && Object.prototype.hasOwnProperty.call(current, segment)) {
      current = (current as Record<string, unknown>)[segment];
    } else {
      return MISSING;
    }
  }
  return current;
}

/** The value at a record-level path (`config.…` or a top-level field), or MISSING. */
function recordValue(record: InterfaceRecord, path: string[]): unknown {
  return path[0] === 'config' ? lookup(record.config, path.slice(1)) : lookup(record, path);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return '[' + value.map(canonical).join(',') + ']';
  if (typeof value === 'object' && value !== null) {
    const object = value as Record<string, unknown>;
    return '{' + Object.keys(object).sort().map((key) => JSON.stringify(key) + ':' + canonical(object[key])).join(',') + '}';
  }
  return JSON.stringify(value);
}

function equal(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function opMatches(op: string, stored: unknown, query: unknown): boolean {
  if (op === 'exists') return query === false ? stored === MISSING : stored !== MISSING;
  if (stored === MISSING) return false;
  switch (op) {
    case 'eq':
      return equal(stored, query);
    case 'ne':
      return !equal(stored, query);
    case 'lt':
    case 'lte':
    case 'gt':
    case 'gte': {
      if (typeof stored !== typeof query) return false;
      const a = stored as number;
      const b = query as number;
      if (op === 'lt') return a < b;
      if (op === 'lte') return a <= b;
      if (op === 'gt') return a > b;
      return a >= b;
    }
    case 'in':
      return (query as unknown[]).some((element) => equal(stored, element));
    case 'nin':
      return !(query as unknown[]).some((element) => equal(stored, element));
    case 'contains':
      if (typeof stored === 'string') return typeof query === 'string' && stored.includes(query);
      if (Array.isArray(stored)) return stored.some((element) => equal(element, query));
      return false;
    default:
      throw new Error(`oracle: unknown op ${op}`);
  }
}

function rank(value: unknown): number {
  if (value === MISSING) return 0;
  if (value === null) return 1;
  if (value === false) return 2;
  if (value === true) return 3;
  if (typeof value === 'number') return 4;
  if (typeof value === 'string') return 5;
  if (Array.isArray(value)) return 6;
  return 7;
}

function compareValues(a: unknown, b: unknown): number {
  if (rank(a) !== rank(b)) return rank(a) - rank(b);
  if (typeof a === 'number') return a - (b as number);
  if (typeof a === 'string') return a < (b as string) ? -1 : a > (b as string) ? 1 : 0;
  if (rank(a) >= 6) return canonical(a) < canonical(b) ? -1 : canonical(a) > canonical(b) ? 1 : 0;
  return 0;
}

/** The bound below which every total is exact (query.ts; LIMITS.searchExactTotal), restated. */
export const ORACLE_EXACT_TOTAL = 1000;

/**
 * Every match in order (`all`), the requested page (`items`, by offset and limit), `total` (every
 * match) and what the total rule reports: exact for no filter, or one string `eq` on module, kind,
 * class_name, created_by or label (or label null), each optionally with one boolean `eq` on archived; for
 * `exact_total`; and up to max(1000, offset + limit) matches; else that bound, inexact.
 */
export function oracleSearch(
  records: InterfaceRecord[],
  request: FindRequest,
): { all: InterfaceRecord[]; items: InterfaceRecord[]; total: number; reported: { total: number; total_exact: boolean } } {
  const filters: Array<{ path: string[]; op: string; value: unknown }> = [];
  for (const field of ['module', 'kind', 'class_name', 'created_by', 'label'] as const) {
    if (request[field] !== undefined && request[field] !== null) filters.push({ path: [field], op: 'eq', value: request[field] });
  }
  for (const filter of request.config?.filters ?? []) {
    filters.push({ path: ['config', ...segments(filter.path)], op: filter.op ?? 'eq', value: filter.value });
  }
  for (const filter of request.filters ?? []) filters.push({ path: segments(filter.path), op: filter.op ?? 'eq', value: filter.value });
  for (const filter of filters) {
    if (filter.value === undefined) filter.value = filter.op === 'exists' ? true : null;
  }
  const includeArchived = request.include_archived ?? request.include_hidden ?? false;

  const matching = records.filter(
    (record) => (includeArchived || !record.archived) && filters.every((filter) => opMatches(filter.op, recordValue(record, filter.path), filter.value)),
  );

  const sorts = (request.sort ?? []).map((spec) => ({
    path: spec.config_layer ? ['config', ...segments(spec.by)] : segments(spec.by),
    descending: String(spec.direction ?? 'desc').toLowerCase() === 'desc',
  }));
  if (sorts.length === 0) sorts.push({ path: ['created_at'], descending: true });
  const all = [...matching].sort((a, b) => {
    for (const sort of sorts) {
      const order = compareValues(recordValue(a, sort.path), recordValue(b, sort.path));
      if (order !== 0) return sort.descending ? -order : order;
    }
    return a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0;
  });

  const offset = request.offset ?? 0;
  const limit = request.limit ?? 100;
  const fields = filters.filter((f) => f.path.length === 1 && ['module', 'kind', 'class_name', 'created_by', 'label'].includes(f.path[0]!));
  const archivedEq = filters.filter((f) => f.path.length === 1 && f.path[0] === 'archived');
  const counted =
    filters.length === fields.length + archivedEq.length &&
    fields.length <= 1 &&
    archivedEq.length <= 1 &&
    fields.every((f) => f.op === 'eq' && (typeof f.value === 'string' || (f.path[0] === 'label' && f.value === null))) &&
    archivedEq.every((f) => f.op === 'eq' && typeof f.value === 'boolean');
  const bound = Math.max(ORACLE_EXACT_TOTAL, offset + limit);
  const exact = counted || request.exact_total === true || all.length <= bound;
  return { all, items: all.slice(offset, offset + limit), total: all.length, reported: { total: exact ? all.length : bound, total_exact: exact } };
}
