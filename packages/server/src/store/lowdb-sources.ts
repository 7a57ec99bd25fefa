/**
 * Sources of the embedded store's plans (lowdb-index.ts): exactly the records that pass one filter,
 * as a list, a slice of a path's order, a bucket or a union, with what reading them costs.
 */
import type { FindRequest } from '../contract/search.js';
import { OrderedList, Take, Walk, createdAt } from './lowdb-order.js';
import { ValueIndex, type Bucket } from './lowdb-values.js';
import { compileQuery, type CompiledQuery, type Getter, type QueryShape, type SearchResult } from './query.js';
import type { InterfaceRecord } from './store.js';

/** How a query is answered; `via` names the structure it reads (`created_at`, `archived`, a field, `uuid`, a path). */
export type Plan = { strategy: 'ordered'; via: string } | { strategy: 'candidates'; via: string } | { strategy: 'scan' };

/** What one path has built so far: its value index and its order, each on first use. */
export interface PathIndexes {
  read: Getter;
  values?: ValueIndex;
  order?: OrderedList;
}

/** Exactly the records that pass one filter (archived ones included): `items[lo, hi)`. */
export interface Source {
  via: string;
  readonly items: readonly InterfaceRecord[];
  lo: number;
  hi: number;
  /** For a union (an `in` filter), the lists whose records `items` puts together (only when read). */
  parts?: ReadonlyArray<readonly InterfaceRecord[]>;
  /** How many of them a query with this archived flag sees: exact, or at least `cap` when counting stopped there. */
  visible(includeArchived: boolean, cap: number): number;
  /** Whether they lie out of the order they lie in memory (see SCATTERED). */
  scattered: boolean;
  /** A list ordered by created_at holding exactly these records (`items` are its items). */
  list?: OrderedList;
  /** The order these records are a slice of, and its dotted path. */
  slice?: { path: string; order: OrderedList };
}

/** One way to answer a query. */
export interface Candidate {
  plan: Plan;
  /** Records it is expected to read, weighted by how they lie in memory (see SCATTERED). */
  cost: number;
  answer: () => SearchResult;
}

/** A list to walk for an ordered plan: `list.items[lo, hi)` holds every match, in sort order. */
export interface WalkList {
  via: string;
  list: () => OrderedList;
  lo: number;
  hi: number;
  /** Whether an offset can be skipped without reading the records it skips (see skip). */
  skippable: boolean;
}

/** How many of `items[lo, hi)` are not archived, counting no further than `cap`. */
function countVisible(items: readonly InterfaceRecord[], lo: number, hi: number, cap: number): number {
  let count = 0;
  for (let i = lo; i < hi && count < cap; i++) if (!items[i]!.archived) count++;
  return count;
}

export function listSource(via: string, list: OrderedList): Source {
  return { via, items: list.items, lo: 0, hi: list.items.length, visible: (includeArchived) => list.visible(includeArchived), scattered: true, list };
}

export function arraySource(via: string, items: readonly InterfaceRecord[], scattered: boolean): Source {
  return { via, items, lo: 0, hi: items.length, visible: (includeArchived, cap) => (includeArchived ? items.length : countVisible(items, 0, items.length, cap)), scattered };
}

/** The records of several lists (an `in` filter's values): put together only when the engine reads them all. */
export function unionSource(via: string, parts: ReadonlyArray<readonly InterfaceRecord[]>, scattered: boolean): Source {
  let items: InterfaceRecord[] | undefined;
  const held = parts.reduce((sum, part) => sum + part.length, 0);
  return {
    via,
    get items() {
      return (items ??= parts.flat());
    },
    lo: 0,
    hi: held,
    parts,
    visible(includeArchived, cap) {
      let count = 0;
      for (const part of parts) count += includeArchived ? part.length : countVisible(part, 0, part.length, cap - count);
      return count;
    },
    scattered,
  };
}

/** Every record of the lists, one list after the other. */
export function* chain(parts: ReadonlyArray<readonly InterfaceRecord[]>): Generator<InterfaceRecord> {
  for (const part of parts) yield* part;
}

export function sliceSource(via: string, path: string, order: OrderedList, [lo, hi]: [number, number]): Source {
  const { items } = order;
  return { via, items, lo, hi, visible: (includeArchived, cap) => (includeArchived ? hi - lo : countVisible(items, lo, hi, cap)), scattered: true, slice: { path, order } };
}

/** A value's records; buckets fill in the order records lie in memory. */
export function bucketSource(via: string, bucket: Bucket | undefined): Source {
  if (!bucket) return arraySource(via, NO_RECORDS, false);
  const { items } = bucket;
  // Counted as the bucket changes: reading every record's flag costs a cache miss each.
  return { via, items, lo: 0, hi: items.length, visible: (includeArchived) => (includeArchived ? items.length : items.length - bucket.archived), scattered: false };
}

export const size = (source: { lo: number; hi: number }): number => source.hi - source.lo;

/**
 * What reading a record out of the order records lie in memory costs, against reading it in that
 * order (a pass over 100k records: 82 against 41 ms). Walks and the lists kept in created_at order
 * read out of it: records are loaded segment by segment, and segments are spread by uuid.
 */
export const SCATTERED = 2;

/**
 * What each match the engine keeps for its page costs, in records read: an entry with its sort key
 * and a place in the heap (an offset of 50,000 on 100k records: 230 ms against 31 ms for limit 10).
 */
export const KEPT = 10;

/** What the engine spends reading every record of a source. */
export const cost = (source: Source): number => size(source) * (source.scattered ? SCATTERED : 1);

/**
 * A request with the query's filters, archived flag and sort (so its cursors are the query's) and
 * `extra`: how a plan asks the engine's own tests and order for part of an answer.
 */
export function requestOf(shape: QueryShape, extra: FindRequest): FindRequest {
  return {
    filters: shape.filters.map(({ path, op, value }) => ({ path: path.join('.'), op, value })),
    sort: shape.sort.map(({ path, direction }) => ({ by: path.join('.'), direction })),
    include_archived: shape.includeArchived,
    ...extra,
  };
}

/** The source's records as an array (the engine reads arrays faster than any other iterable). */
export function span({ items, lo, hi }: Source): readonly InterfaceRecord[] {
  return lo === 0 && hi === items.length ? items : items.slice(lo, hi);
}

export const NO_RECORDS: readonly InterfaceRecord[] = [];
export const RANGE_OPS = new Set(['lt', 'lte', 'gt', 'gte']);

/** Records a counting pass tests per call of the engine (its page limit caps it). */
export const PASS_CHUNK = 1000;

/**
 * Counts the query's matches among the source's records (`every` record without one), stopping
 * once `cap` are seen; keeps them all when it read every record.
 */
export function countMatches(query: CompiledQuery, source: Source | undefined, every: () => Iterator<InterfaceRecord>, cap: number): { count: number; read: number; matches?: InterfaceRecord[] } {
  const from = !source ? every() : source.parts ? chain(source.parts) : new Walk(source.items, createdAt, source.lo, source.hi, false);
  const records = new Take(from);
  // The engine's own tests, through a query of the same filters whose page holds a whole chunk.
  const filter = compileQuery(requestOf(query.shape, { sort: [], limit: PASS_CHUNK }));
  const matches: InterfaceRecord[] = [];
  while (!records.done && matches.length < cap) {
    // Finding the matches still wanted takes at least as many records.
    for (const record of filter.runOrdered(records.take(Math.min(PASS_CHUNK, cap - matches.length)), 0).items) matches.push(record);
  }
  return { count: matches.length, read: records.taken, matches: records.done ? matches : undefined };
}
