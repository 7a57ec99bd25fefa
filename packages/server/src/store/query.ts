/**
 * The config-search engine: validates a `FindRequest` (contract/search.ts), compiles its paths,
 * predicates and sort order once, and runs it over any iterable of records in one linear pass
 * (`run`), or pages records an index already yields in sort order (`runOrdered`). Stores that hold
 * their records in memory call `search` or plan with `shape` (lowdb-index.ts); the semantics below
 * are the contract a server database implementation must reproduce.
 *
 * Semantics
 * ---------
 * - Values are JSON. A path that leads nowhere is *missing*, which is different from `null`.
 * - Paths are dotted segments of [A-Za-z0-9_-]; `a[0].b` is the same path as `a.0.b`. A numeric
 *   segment indexes an array (canonical decimal only: `01` never indexes) or names an object key.
 *   Config paths are relative to the record's resolved `config`; record paths are `config.<path>`
 *   or one of the top-level fields uuid, module, kind, class_name, label, created_by, created_at,
 *   archived.
 * - `eq`: deep JSON equality (object key order is irrelevant, 1 equals 1.0, `true` never equals
 *   1). `ne`: present and not deep-equal. Missing never matches either.
 * - `lt`, `lte`, `gt`, `gte`: the query value is a number or a string; only a stored value of the
 *   same type matches (numbers numerically, strings by UTF-16 code units), so `gt 2` never
 *   matches a string and booleans and null never match.
 * - `in`: the query value is an array; matches when the stored value deep-equals an element.
 *   `nin`: present and deep-equal to no element.
 * - `contains`: a stored string contains the query string (case-sensitive substring), or a stored
 *   array has an element deep-equal to the query value. Nothing else matches.
 * - `exists`: the query value is a boolean (default true); true matches a present path (even
 *   null), false a missing one.
 * - An omitted `value` is null (true for `exists`); ops that need a number, string, array or
 *   boolean refuse anything else with a validation error.
 * - `module`, `kind`, `class_name`, `created_by`, `label` given as fields are `eq` filters on those fields; all
 *   filters are ANDed. Archived records are left out unless `include_archived` (or its alias
 *   `include_hidden`) is true, whatever the filters say.
 * - Sort order of values, ascending: missing < null < false < true < numbers < strings < arrays
 *   < objects; arrays and objects compare by their canonical JSON text (sorted keys, compact).
 *   `desc` reverses the whole order. The default sort is `created_at` desc, and `uuid` asc always
 *   breaks the remaining ties, so the order is total.
 * - `total` counts every match when `total_exact` is true, which it is when the matches are at
 *   most `max(LIMITS.searchExactTotal, offset + limit)` (the *bound*), when the filters are ones
 *   a maintained count answers (none, or one `eq` of a string on module, kind, class_name,
 *   created_by or label, or label `eq` null, each optionally with `archived eq <boolean>`; see `countedFilters`),
 *   or when the request asks `exact_total: true`. Otherwise `total` is the bound and `total_exact`
 *   false: more than that many match, and counting them all would read more records than the page
 *   needs. Every store applies this rule the same way, so one request gets one answer.
 * - A page is `limit` records after skipping `offset`, or
 *   with a `cursor`, the first `limit` records strictly after the position the cursor names
 *   (its last item's sort values and uuid, whether or not that record still exists). Records
 *   added between page requests therefore never duplicate or displace the others. A cursor is
 *   bound to its query (filters, sort, archived flag; not limit) by a hash.
 */
import { FindRequest, parsePath, parseRecordPath, type FilterOp, type ParsedFindRequest } from '../contract/search.js';
import { LIMITS } from '../config/constants.js';
import { PorticoError } from '../errors.js';
import { BoundedHeap } from './bounded-heap.js';
import { canonicalJson, isCompound, jsonEqual } from './canonical-json.js';
import { decodeCursor, encodeCursor, queryHash, type Position } from './cursor.js';
import type { InterfaceRecord } from './store.js';

export type { Position };

/** One page of matches. */
export interface SearchResult {
  /** The matching records themselves (not copies), in sort order. */
  items: InterfaceRecord[];
  /** Every match, regardless of limit, offset and cursor, when `total_exact`; else a lower bound (see the semantics). */
  total: number;
  total_exact: boolean;
  /** Continues after the last item; null when no match follows the page. */
  next_cursor: string | null;
}

/** A validated request with its predicates and sort order compiled; reusable across runs. */
export interface CompiledQuery {
  /** Filters, counts and pages the records in one pass; never mutates them. */
  run(records: Iterable<InterfaceRecord>): SearchResult;
  /**
   * Pages records that already arrive in this query's sort order, stopping as soon as the page
   * and one more match are found, so an index can answer without a full pass. The caller owns
   * the count of matches, which must be exact, or more than `shape.total.bound` when it stopped
   * counting there (the rule then reports the bound). Records at or before the cursor
   * are skipped, so the walk may start anywhere at or before the cursor's position.
   */
  runOrdered(ordered: Iterable<InterfaceRecord>, total: number): SearchResult;
  /** What an index planner needs to know about the request. */
  readonly shape: QueryShape;
}

/** A request reduced to what decides its result set and order. */
export interface QueryShape {
  /** Every filter as a record-level one (field filters become `eq` on the field). */
  filters: readonly NormalFilter[];
  /** The sort keys, without the implicit `uuid asc` tiebreak (default: created_at desc). */
  sort: ReadonlyArray<{ path: string[]; direction: 'asc' | 'desc' }>;
  includeArchived: boolean;
  /** The cursor's position: per sort key its type rank and in-rank scalar, then the uuid. */
  after: Readonly<Position> | null;
  offset: number;
  limit: number;
  /** How `total` is reported (see `TotalRule`). */
  total: TotalRule;
}

/**
 * The `total` rule of one request: exact when `exact` (a maintained count answers it, or the
 * request asked), else exact up to `bound` matches and the bound itself beyond: a store may stop
 * counting once it has seen `bound + 1` matches.
 */
export interface TotalRule {
  exact: boolean;
  bound: number;
}

/** The total a rule reports for `count` matches (a store that stopped counting passes what it saw, at least bound + 1). */
export function reportTotal(rule: TotalRule, count: number): { total: number; total_exact: boolean } {
  return rule.exact || count <= rule.bound ? { total: count, total_exact: true } : { total: rule.bound, total_exact: false };
}

/** The fields a maintained count groups records by (both stores keep one per value). */
export const COUNTED_FIELDS: ReadonlySet<string> = new Set(['module', 'kind', 'class_name', 'created_by', 'label']);

/**
 * Whether the filters are ones a maintained count answers: none, or one `eq` of a string on a
 * counted field (or `label eq null`), each optionally with `eq` of a boolean on archived.
 */
export function countedFilters(filters: readonly NormalFilter[]): boolean {
  let field = false;
  let archived = false;
  for (const { path, op, value } of filters) {
    if (path.length !== 1 || op !== 'eq') return false;
    const [name] = path as [string];
    if (name === 'archived' && typeof value === 'boolean' && !archived) archived = true;
    else if (COUNTED_FIELDS.has(name) && !field && (typeof value === 'string' || (name === 'label' && value === null))) field = true;
    else return false;
  }
  return true;
}

function totalRule(request: ParsedFindRequest, filters: readonly NormalFilter[]): TotalRule {
  return {
    exact: request.exact_total === true || countedFilters(filters),
    bound: Math.max(LIMITS.searchExactTotal, request.offset + request.limit),
  };
}

/** Sort ranks of value types, ascending (see the semantics above). */
const RANK = { missing: 0, null: 1, false: 2, true: 3, number: 4, string: 5, array: 6, object: 7 } as const;

/**
 * Validates and compiles a request. Every problem, including a malformed cursor or one issued
 * for another query, throws a `validation_error` PorticoError whose issues name the field.
 */
export function compileQuery(request: FindRequest): CompiledQuery {
  const parsed = FindRequest.safeParse(request);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => ({ path: issue.path.map(String).join('.') || null, message: issue.message }));
    const [first] = issues;
    throw new PorticoError('validation_error', `Invalid search request: ${first!.path ?? 'body'}: ${first!.message}`, { issues });
  }
  return compile(parsed.data);
}

/** Runs a request over the records: `compileQuery(request).run(records)`. */
export function search(records: Iterable<InterfaceRecord>, request: FindRequest): SearchResult {
  return compileQuery(request).run(records);
}

/** The stored value at a path, or undefined when it is missing (JSON has no undefined). */
export type Getter = (record: InterfaceRecord) => unknown;
type Test = (value: unknown) => boolean;

export interface NormalFilter {
  /** Record-level segments, e.g. ['config', 'lr'] or ['label']. */
  path: string[];
  op: FilterOp;
  value: unknown;
}

export interface SortKey {
  /** Record-level segments, as in NormalFilter. */
  path: string[];
  direction: 'asc' | 'desc';
}


interface Entry extends Position {
  /** Null only in a fresh entry, before its first fill. */
  record: InterfaceRecord | null;
}

function compile(request: ParsedFindRequest): CompiledQuery {
  const filters = normalFilters(request);
  const tests = filters.map(({ path, op, value }) => {
    const get = getter(path);
    const test = compileTest(op, value);
    return (record: InterfaceRecord) => test(get(record));
  });
  const includeArchived = request.include_archived ?? request.include_hidden ?? false;
  const matches = (record: InterfaceRecord): boolean => {
    if (record.archived && !includeArchived) return false;
    for (const test of tests) if (!test(record)) return false;
    return true;
  };

  const sorts = sortKeys(request);
  const getters = sorts.map((sort) => getter(sort.path));
  const signs = sorts.map((sort) => (sort.direction === 'asc' ? 1 : -1));
  const compare = (a: Position, b: Position): number => {
    for (let i = 0, j = 0; i < signs.length; i++, j += 2) {
      const rankA = a.key[j]!;
      const rankB = b.key[j]!;
      if (rankA !== rankB) return rankA < rankB ? -signs[i]! : signs[i]!;
      const valueA = a.key[j + 1]!;
      const valueB = b.key[j + 1]!;
      if (valueA !== valueB) return valueA < valueB ? -signs[i]! : signs[i]!;
    }
    return a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0;
  };
  const fill = (entry: Entry, record: InterfaceRecord): void => {
    for (let i = 0; i < getters.length; i++) sortKey(getters[i]!(record), entry.key, i * 2);
    entry.uuid = record.uuid;
    entry.record = record;
  };
  const blank = (): Entry => ({ key: new Array<number | string>(getters.length * 2), uuid: '', record: null });

  const hash = queryHash(filters, sorts, includeArchived);
  const after = request.cursor == null ? null : decodeCursor(request.cursor, hash, getters.length);
  const { limit, offset } = request;
  const rule = totalRule(request, filters);

  return {
    run(records) {
      let total = 0;
      let following = 0;
      const heap = new BoundedHeap<Entry>(offset + limit, compare);
      // Most matches lose against the heap's root, so one entry is refilled until the heap keeps it.
      let entry = blank();
      for (const record of records) {
        if (!matches(record)) continue;
        total++;
        fill(entry, record);
        if (after && compare(entry, after) <= 0) continue;
        following++;
        if (heap.offer(entry)) entry = blank();
      }
      const page = heap.sorted().slice(offset);
      const last = page.at(-1);
      return {
        items: page.map((entry) => entry.record!),
        ...reportTotal(rule, total),
        next_cursor: last && following > offset + limit ? encodeCursor(hash, last) : null,
      };
    },
    runOrdered(ordered, count) {
      const total = reportTotal(rule, count);
      const page: InterfaceRecord[] = [];
      const entry = blank();
      let skipped = 0;
      for (const record of ordered) {
        if (!matches(record)) continue;
        if (after) {
          fill(entry, record);
          if (compare(entry, after) <= 0) continue;
        }
        if (skipped < offset) {
          skipped++;
          continue;
        }
        if (page.length === limit) {
          // One more match follows the page: it continues after the page's last item.
          fill(entry, page.at(-1)!);
          return { items: page, ...total, next_cursor: encodeCursor(hash, entry) };
        }
        page.push(record);
      }
      return { items: page, ...total, next_cursor: null };
    },
    shape: { filters, sort: sorts, includeArchived, after, offset, limit, total: rule },
  };
}

/** The sort keys as record-level paths, or the default created_at desc. */
function sortKeys(request: ParsedFindRequest): SortKey[] {
  return request.sort.length
    ? request.sort.map((spec) => ({
        // The schema has checked both path forms.
        path: spec.config_layer ? ['config', ...parsePath(spec.by)!] : (parseRecordPath(spec.by) as string[]),
        direction: spec.direction,
      }))
    : [{ path: ['created_at'], direction: 'desc' as const }];
}

/** The field filters, `config.filters` and `filters` as one list of record-level filters. */
function normalFilters(request: ParsedFindRequest): NormalFilter[] {
  const filters: NormalFilter[] = [];
  for (const field of ['module', 'kind', 'class_name', 'created_by', 'label'] as const) {
    const value = request[field];
    if (value != null) filters.push({ path: [field], op: 'eq', value });
  }
  // The schema has checked every path, so parsing cannot fail here.
  for (const filter of request.config?.filters ?? []) {
    filters.push({ path: ['config', ...parsePath(filter.path)!], op: filter.op, value: defaultValue(filter.op, filter.value) });
  }
  for (const filter of request.filters) {
    filters.push({ path: parseRecordPath(filter.path) as string[], op: filter.op, value: defaultValue(filter.op, filter.value) });
  }
  return filters;
}

function defaultValue(op: FilterOp, value: unknown): unknown {
  if (value !== undefined) return value;
  return op === 'exists' ? true : null;
}

const INDEX = /^(?:0|[1-9][0-9]*)$/;

/** Reads the value at a record-level path; undefined when the path is missing. */
export function getter(path: string[]): Getter {
  const [root, ...rest] = path;
  if (root !== 'config') return (record) => (record as unknown as Record<string, unknown>)[root!];
  const steps = rest.map((key) => ({ key, index: INDEX.test(key) ? Number(key) : -1 }));
  return (record) => {
    let value: unknown = record.config;
    for (const { key, index } of steps) {
      if (Array.isArray(value)) {
        value = index >= 0 && index < value.length ? value[index] : undefined;
      } else if (value !== null && typeof value === 'object' && Object.hasOwn(value, key)) {
        // hasOwn, so that keys like `constructor` or `__proto__` never reach the prototype.
        value = (value as Record<string, unknown>)[key];
      } else {
        return undefined;
      }
      if (value === undefined) return undefined;
    }
    return value;
  };
}



/** The test of one op against one (schema-checked) query value; `undefined` means missing. */
function compileTest(op: FilterOp, query: unknown): Test {
  switch (op) {
    case 'eq':
      return isCompound(query) ? (value) => value !== undefined && jsonEqual(value, query) : (value) => value === query;
    case 'ne': {
      const eq = compileTest('eq', query);
      return (value) => value !== undefined && !eq(value);
    }
    case 'lt':
    case 'lte':
    case 'gt':
    case 'gte':
      return orderTest(op, query as number | string);
    case 'in': {
      const elements = query as unknown[];
      const scalars = new Set(elements.filter((element) => !isCompound(element)));
      const compounds = elements.filter(isCompound);
      return (value) =>
        value !== undefined && (scalars.has(value) || (isCompound(value) && compounds.some((element) => jsonEqual(value, element))));
    }
    case 'nin': {
      const inTest = compileTest('in', query);
      return (value) => value !== undefined && !inTest(value);
    }
    case 'contains':
      if (typeof query === 'string') {
        return (value) => (typeof value === 'string' ? value.includes(query) : Array.isArray(value) && value.includes(query));
      }
      if (isCompound(query)) return (value) => Array.isArray(value) && value.some((element) => jsonEqual(element, query));
      return (value) => Array.isArray(value) && value.includes(query);
    case 'exists':
      return query ? (value) => value !== undefined : (value) => value === undefined;
  }
}

function orderTest(op: 'lt' | 'lte' | 'gt' | 'gte', query: number | string): Test {
  const type = typeof query;
  // Both sides have the same type once `typeof` agrees; the `number` casts only satisfy the checker
  // (JS `<` on two strings compares UTF-16 code units, as the semantics require).
  const q = query as number;
  switch (op) {
    case 'lt':
      return (value) => typeof value === type && (value as number) < q;
    case 'lte':
      return (value) => typeof value === type && (value as number) <= q;
    case 'gt':
      return (value) => typeof value === type && (value as number) > q;
    case 'gte':
      return (value) => typeof value === type && (value as number) >= q;
  }
}

/** Writes the value's type rank and in-rank scalar at `key[at]` and `key[at + 1]`. */
export function sortKey(value: unknown, key: Array<number | string>, at: number): void {
  key[at + 1] = 0;
  if (value === undefined) key[at] = RANK.missing;
  else if (value === null) key[at] = RANK.null;
  else if (value === false) key[at] = RANK.false;
  else if (value === true) key[at] = RANK.true;
  else if (typeof value === 'number' || typeof value === 'string') {
    key[at] = typeof value === 'number' ? RANK.number : RANK.string;
    key[at + 1] = value;
  } else {
    key[at] = Array.isArray(value) ? RANK.array : RANK.object;
    key[at + 1] = canonicalJson(value);
  }
}




/**
 * A validated request in the form a store that searches elsewhere (a server database) compiles
 * from: the same normalized filters and sort keys as this engine, the position a cursor names,
 * and the cursors this engine would issue, so cursors mean the same in every store.
 */
export interface QueryPlan {
  filters: NormalFilter[];
  sorts: SortKey[];
  includeArchived: boolean;
  limit: number;
  offset: number;
  /** Per sort key a type rank and an in-rank scalar (see sortKey), then the uuid; null without a cursor. */
  after: Position | null;
  /** How `total` is reported. */
  total: TotalRule;
  /** The cursor that continues strictly after `record`. */
  cursorAfter(record: InterfaceRecord): string;
}

/** Validates a request exactly as compileQuery does (same errors) and returns its plan. */
export function planQuery(request: FindRequest): QueryPlan {
  compileQuery(request);
  const parsed = FindRequest.parse(request);
  const filters = normalFilters(parsed);
  const sorts = sortKeys(parsed);
  const includeArchived = parsed.include_archived ?? parsed.include_hidden ?? false;
  const hash = queryHash(filters, sorts, includeArchived);
  const getters = sorts.map((sort) => getter(sort.path));
  return {
    filters,
    sorts,
    includeArchived,
    limit: parsed.limit,
    offset: parsed.offset,
    after: parsed.cursor == null ? null : decodeCursor(parsed.cursor, hash, sorts.length),
    total: totalRule(parsed, filters),
    cursorAfter(record) {
      const key = new Array<number | string>(getters.length * 2);
      getters.forEach((get, i) => sortKey(get(record), key, i * 2));
      return encodeCursor(hash, { key, uuid: record.uuid });
    },
  };
}
