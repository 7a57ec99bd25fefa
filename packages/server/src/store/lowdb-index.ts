/**
 * The embedded store's records in memory, with the secondary structures that let common searches
 * touch only what they return instead of every record:
 *
 *   byUuid                              uuid → record
 *   all                                 every record, ordered by created_at (then uuid)
 *   module, kind, created_by, label     value → its records, in the same order
 *   other paths                         per path, built on first use: value → its records (for
 *                                       `eq`/`in` on a config path), and every record ordered by
 *                                       the path (for a sort on it); at most
 *                                       LIMITS.searchPathIndexes paths, least recently used goes
 *
 * `plan` picks how a compiled query is answered; every plan returns exactly what the linear pass
 * (`CompiledQuery.run` over all records) returns:
 *   - ordered:    one sort key and at most one `eq` filter: walk a list already in that order from
 *                 the cursor (found by binary search), test each record, stop after the page. The
 *                 list is the filter's own list when it has one in that order (newest first in one
 *                 module); `total` is the size of the filter's bucket, or of the whole list.
 *   - candidates: the smallest set that an `eq` or `in` filter on a field, the uuid or a config path
 *                 allows; the engine runs over that set only, so `total` is what it counts there.
 *   - scan:       the linear pass over every record.
 * An ordered walk with a filter is chosen only when it is expected to reach its page sooner than
 * the candidates plan would read its set (assuming the filter is independent of the order).
 *
 * The structures hold the record objects themselves (search returns them, not copies). An update
 * replaces a record's object, so every structure that held the old one gets the new one.
 */
import { LIMITS } from '../config/constants.js';
import { canonicalJson, getter, isCompound, sortKey, type CompiledQuery, type Getter, type NormalFilter, type Position, type SearchResult } from './query.js';
import type { InterfaceRecord } from './store.js';

/** The top-level fields with a list per value, ordered by created_at. */
const FIELDS = ['module', 'kind', 'created_by', 'label'] as const;
type Field = (typeof FIELDS)[number];

/** How a query is answered; `via` names the structure it reads (`all`, a field, `uuid`, a path). */
export type Plan = { strategy: 'ordered'; via: string } | { strategy: 'candidates'; via: string } | { strategy: 'scan' };

/** A value's place in the sort order: its type rank and in-rank scalar (query.ts `sortKey`). */
type Key = Array<number | string>;

function compareKeys(a: Key, b: Key): number {
  if (a[0] !== b[0]) return a[0]! < b[0]! ? -1 : 1;
  return a[1] === b[1] ? 0 : a[1]! < b[1]! ? -1 : 1;
}

function keyReader(read: Getter): (record: InterfaceRecord) => Key {
  return (record) => {
    const key: Key = [0, 0];
    sortKey(read(record), key, 0);
    return key;
  };
}

const createdAt = keyReader(getter(['created_at']));

/** Records ordered by one path's value, ascending as the engine sorts it, ties by uuid. */
class OrderedList {
  readonly items: InterfaceRecord[] = [];
  archived = 0;

  constructor(private readonly key: (record: InterfaceRecord) => Key) {}

  /** The list of `records` (any order); sorts them once. */
  static of(key: (record: InterfaceRecord) => Key, records: readonly InterfaceRecord[]): OrderedList {
    const list = new OrderedList(key);
    const keyed = records.map((record) => ({ key: key(record), record }));
    keyed.sort((a, b) => compareKeys(a.key, b.key) || (a.record.uuid < b.record.uuid ? -1 : a.record.uuid > b.record.uuid ? 1 : 0));
    for (const { record } of keyed) list.push(record);
    return list;
  }

  /** The number of records a query with this archived flag can see. */
  visible(includeArchived: boolean): number {
    return includeArchived ? this.items.length : this.items.length - this.archived;
  }

  add(record: InterfaceRecord): void {
    this.items.splice(this.seek(record, false), 0, record);
    if (record.archived) this.archived++;
  }

  /** Appends a record that sorts after every record held (lists built in order). */
  push(record: InterfaceRecord): void {
    this.items.push(record);
    if (record.archived) this.archived++;
  }

  /** Swaps `old` for `next` (same sort value and uuid), or removes it when `next` is undefined. */
  replace(old: InterfaceRecord, next: InterfaceRecord | undefined): void {
    const i = this.seek(old, true);
    if (next) this.items[i] = next;
    else this.items.splice(i, 1);
    this.archived += (next?.archived ? 1 : 0) - (old.archived ? 1 : 0);
  }

  /**
   * The records in `direction` order (desc reverses the values, ties stay by uuid ascending, as
   * the engine sorts), starting at the first group of equal values that can follow `after`. The
   * engine skips the records of that group at or before the cursor.
   */
  *walk(direction: 'asc' | 'desc', after: Readonly<Position> | null): Generator<InterfaceRecord> {
    const { items, key } = this;
    if (direction === 'asc') {
      const start = after ? this.bound((record) => compareKeys(key(record), after.key) >= 0) : 0;
      for (let i = start; i < items.length; i++) yield items[i]!;
      return;
    }
    let end = after ? this.bound((record) => compareKeys(key(record), after.key) > 0) : items.length;
    while (end > 0) {
      const value = key(items[end - 1]!);
      let begin = end - 1;
      while (begin > 0 && compareKeys(key(items[begin - 1]!), value) === 0) begin--;
      for (let i = begin; i < end; i++) yield items[i]!;
      end = begin;
    }
  }

  /** Where `record` goes (`at`: where it is), by binary search. */
  private seek(record: InterfaceRecord, at: boolean): number {
    const value = this.key(record);
    const { uuid } = record;
    return this.bound((other) => {
      const order = compareKeys(this.key(other), value);
      return order > 0 || (order === 0 && (other.uuid > uuid || (at && other.uuid === uuid)));
    });
  }

  /** The first index whose record satisfies `past` (false for a prefix, true after it). */
  private bound(past: (record: InterfaceRecord) => boolean): number {
    let low = 0;
    let high = this.items.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (past(this.items[mid]!)) high = mid;
      else low = mid + 1;
    }
    return low;
  }
}

/**
 * Buckets keyed by JSON value under the engine's `eq`: scalars by themselves (SameValueZero, so
 * `-0` meets `0` and `true` never meets `1`), arrays and objects by their canonical text.
 */
class ValueMap<B> {
  private readonly scalars = new Map<unknown, B>();
  private readonly compounds = new Map<string, B>();

  get(value: unknown): B | undefined {
    return isCompound(value) ? this.compounds.get(canonicalJson(value)) : this.scalars.get(value);
  }

  /** The bucket for the value, made with `create` when there is none. */
  ensure(value: unknown, create: () => B): B {
    const [map, key] = isCompound(value) ? [this.compounds, canonicalJson(value)] : [this.scalars, value];
    let bucket = (map as Map<unknown, B>).get(key);
    if (bucket === undefined) (map as Map<unknown, B>).set(key, (bucket = create()));
    return bucket;
  }

  delete(value: unknown): void {
    if (isCompound(value)) this.compounds.delete(canonicalJson(value));
    else this.scalars.delete(value);
  }
}

/** The records holding one value, and how many of them are archived. */
interface Bucket {
  items: InterfaceRecord[];
  archived: number;
}

/** The records holding each value at one path (records missing it are in no bucket). */
class ValueIndex {
  readonly values = new ValueMap<Bucket>();

  constructor(
    private readonly read: Getter,
    records: readonly InterfaceRecord[],
  ) {
    for (const record of records) this.add(record);
  }

  add(record: InterfaceRecord): void {
    const value = this.read(record);
    if (value === undefined) return;
    const bucket = this.values.ensure(value, () => ({ items: [], archived: 0 }));
    bucket.items.push(record);
    if (record.archived) bucket.archived++;
  }

  /** Swaps `old` for `next` in its bucket, or removes it when `next` is undefined. */
  replace(old: InterfaceRecord, next: InterfaceRecord | undefined): void {
    const value = this.read(old);
    const bucket = value === undefined ? undefined : this.values.get(value);
    if (!bucket) return;
    const { items } = bucket;
    const i = items.indexOf(old);
    if (old.archived) bucket.archived--;
    // Order inside a bucket is irrelevant (the engine sorts), so a removal swaps in the last one.
    if (next && this.read(next) === value) {
      items[i] = next;
      if (next.archived) bucket.archived++;
    } else {
      items[i] = items.at(-1)!;
      items.pop();
      if (!items.length) this.values.delete(value);
      if (next) this.add(next);
    }
  }
}

/** What one path has built so far: its value index and its order, each on first use. */
interface PathIndexes {
  read: Getter;
  values?: ValueIndex;
  order?: OrderedList;
}

/** A set of records a filter allows. */
interface Candidates {
  via: string;
  records: readonly InterfaceRecord[];
  /** How many of them a query with this archived flag sees (they are exactly the filter's matches for `eq`). */
  visible(includeArchived: boolean): number;
  /** A list ordered by created_at holding exactly these records, when there is one. */
  list?: OrderedList;
}

const NO_RECORDS: readonly InterfaceRecord[] = [];

/** Records held in memory and indexed for search. */
export class RecordIndex {
  private readonly byUuid = new Map<string, InterfaceRecord>();
  private all = new OrderedList(createdAt);
  private readonly fields = new Map<Field, ValueMap<OrderedList>>(FIELDS.map((field) => [field, new ValueMap()]));
  /** Dotted record-level path → what it has built; Map order is recency of use, oldest first. */
  private readonly paths = new Map<string, PathIndexes>();

  get size(): number {
    return this.byUuid.size;
  }

  get(uuid: string): InterfaceRecord | undefined {
    return this.byUuid.get(uuid);
  }

  /** Every record, oldest first. */
  ordered(): readonly InterfaceRecord[] {
    return this.all.items;
  }

  /** Replaces the whole content with these records; much faster than putting them one by one. */
  load(records: Iterable<InterfaceRecord>): void {
    this.byUuid.clear();
    this.all = OrderedList.of(createdAt, [...records]);
    for (const field of FIELDS) this.fields.set(field, new ValueMap());
    this.paths.clear();
    for (const record of this.all.items) {
      this.byUuid.set(record.uuid, record);
      for (const field of FIELDS) this.fields.get(field)!.ensure(record[field], () => new OrderedList(createdAt)).push(record);
    }
  }

  /** Adds the record, or replaces the one with its uuid. */
  put(record: InterfaceRecord): void {
    const old = this.byUuid.get(record.uuid);
    this.byUuid.set(record.uuid, record);
    // Label and archived updates keep created_at, so the record keeps its place in `all`.
    const placed = old?.created_at === record.created_at;
    if (old && placed) this.all.replace(old, record);
    else {
      if (old) this.all.replace(old, undefined);
      this.all.add(record);
    }
    for (const field of FIELDS) {
      const values = this.fields.get(field)!;
      if (old && placed && old[field] === record[field]) {
        values.get(old[field])!.replace(old, record);
        continue;
      }
      if (old) this.removeFromField(values, old[field], old);
      values.ensure(record[field], () => new OrderedList(createdAt)).add(record);
    }
    for (const { read, values, order } of this.paths.values()) {
      if (old) values?.replace(old, record);
      else values?.add(record);
      if (!order) continue;
      if (old && read(old) === read(record)) order.replace(old, record);
      else {
        if (old) order.replace(old, undefined);
        order.add(record);
      }
    }
  }

  /** Removes the record with this uuid; false when there was none. */
  delete(uuid: string): boolean {
    const old = this.byUuid.get(uuid);
    if (!old) return false;
    this.byUuid.delete(uuid);
    this.all.replace(old, undefined);
    for (const field of FIELDS) this.removeFromField(this.fields.get(field)!, old[field], old);
    for (const { values, order } of this.paths.values()) {
      values?.replace(old, undefined);
      order?.replace(old, undefined);
    }
    return true;
  }

  /** How `search` would answer the query (tests hold the common queries to their fast plans). */
  plan(query: CompiledQuery): Plan {
    return this.choose(query).plan;
  }

  /** The query's answer: the same items, order, total and cursor as a linear pass over every record. */
  search(query: CompiledQuery): SearchResult {
    return this.choose(query).answer();
  }

  private removeFromField(values: ValueMap<OrderedList>, value: unknown, old: InterfaceRecord): void {
    const list = values.get(value)!;
    list.replace(old, undefined);
    if (!list.items.length) values.delete(value);
  }

  private choose(query: CompiledQuery): { plan: Plan; answer: () => SearchResult } {
    const { filters, sort, includeArchived, after } = query.shape;
    let best: Candidates | undefined;
    for (const filter of filters) {
      const found = this.candidates(filter);
      if (found && (!best || found.records.length < best.records.length)) best = found;
    }
    const byCreatedAt = sort.length === 1 && sort[0]!.path.length === 1 && sort[0]!.path[0] === 'created_at';
    if (sort.length === 1 && (filters.length === 0 || (filters.length === 1 && filters[0]!.op === 'eq' && best))) {
      const { path, direction } = sort[0]!;
      const walk = (list: OrderedList, total: number, via: string) => ({
        plan: { strategy: 'ordered' as const, via },
        answer: () => query.runOrdered(list.walk(direction, after), total),
      });
      if (!best) return walk(byCreatedAt ? this.all : this.order(path), this.all.visible(includeArchived), path.join('.'));
      // The filter's own list is already in the order: the walk reads only the page.
      if (byCreatedAt && best.list) return walk(best.list, best.list.visible(includeArchived), best.via);
      // Records the walk passes before its page is full, if the filter's matches are spread evenly.
      const wanted = (after ? 0 : query.shape.offset) + query.shape.limit + 1;
      const reads = (wanted * this.size) / Math.max(best.records.length, 1);
      if (best.records.length && reads < best.records.length) {
        return walk(byCreatedAt ? this.all : this.order(path), best.visible(includeArchived), path.join('.'));
      }
    }
    if (best) {
      const { via, records } = best;
      return { plan: { strategy: 'candidates', via }, answer: () => query.run(records) };
    }
    return { plan: { strategy: 'scan' }, answer: () => query.run(this.all.items) };
  }

  /** Every record that can match an `eq` or `in` filter (a superset), or undefined when no index helps. */
  private candidates({ path, op, value }: NormalFilter): Candidates | undefined {
    if (op !== 'eq' && op !== 'in') return undefined;
    const wanted = op === 'eq' ? [value] : distinct(value as unknown[]);
    const via = path.join('.');
    const [root] = path;
    if (root === 'uuid') return counted(via, wanted.flatMap((uuid) => this.byUuid.get(uuid as string) ?? []));
    const field = fieldOf(path);
    if (field) {
      const lists = wanted.map((v) => this.fields.get(field)!.get(v));
      if (lists.length > 1) return counted(via, lists.flatMap((list) => list?.items ?? NO_RECORDS));
      const list = lists[0] ?? new OrderedList(createdAt);
      return { via, records: list.items, visible: (includeArchived) => list.visible(includeArchived), list };
    }
    // A map keyed by whole configs would hold a canonical text per record: not worth its memory.
    if (root !== 'config' || path.length < 2) return undefined;
    const indexes = this.pathIndexes(path);
    indexes.values ??= new ValueIndex(indexes.read, this.all.items);
    const { values } = indexes.values;
    if (wanted.length > 1) return counted(via, wanted.flatMap((v) => values.get(v)?.items ?? NO_RECORDS));
    const bucket = values.get(wanted[0]) ?? { items: [], archived: 0 };
    // Counted as the bucket changes: reading every record's flag costs a cache miss each.
    return { via, records: bucket.items, visible: (includeArchived) => (includeArchived ? bucket.items.length : bucket.items.length - bucket.archived) };
  }

  /** Every record ordered by the path, built on first use. */
  private order(path: string[]): OrderedList {
    const indexes = this.pathIndexes(path);
    indexes.order ??= OrderedList.of(keyReader(indexes.read), this.all.items);
    return indexes.order;
  }

  /** The path's indexes, marked as just used; the least recently used path goes beyond the cap. */
  private pathIndexes(path: string[]): PathIndexes {
    const key = path.join('.');
    let indexes = this.paths.get(key);
    if (indexes) this.paths.delete(key);
    else {
      indexes = { read: getter(path) };
      if (this.paths.size >= LIMITS.searchPathIndexes) this.paths.delete(this.paths.keys().next().value!);
    }
    this.paths.set(key, indexes);
    return indexes;
  }
}

function fieldOf(path: string[]): Field | undefined {
  const [root] = path;
  return path.length === 1 && (FIELDS as readonly string[]).includes(root!) ? (root as Field) : undefined;
}

/** Candidates whose visible records are counted when asked. */
function counted(via: string, records: readonly InterfaceRecord[]): Candidates {
  return {
    via,
    records,
    visible(includeArchived) {
      if (includeArchived) return records.length;
      let count = 0;
      for (const record of records) if (!record.archived) count++;
      return count;
    },
  };
}

/** The `in` list without elements equal under `eq`, so no bucket is taken twice. */
function distinct(values: unknown[]): unknown[] {
  const seen = new ValueMap<true>();
  return values.filter((value) => {
    if (seen.get(value)) return false;
    seen.ensure(value, () => true);
    return true;
  });
}
