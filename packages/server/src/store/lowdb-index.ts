/**
 * The embedded store's records in memory, with the secondary structures that let common searches
 * touch only what they return instead of every record:
 *
 *   byUuid                              uuid → record
 *   all                                 every record, ordered by created_at, then uuid
 *   module, kind, created_by, label     value → its records, in the same order
 *   config paths                        value → its records, one map per path, built on first use;
 *                                       at most LIMITS.searchPathIndexes, least recently used goes
 *
 * `plan` picks how a compiled query is answered; every plan returns exactly what the linear pass
 * (`CompiledQuery.run` over all records) returns:
 *   - ordered:    sort by created_at alone, at most one field equality and no other filter: walk
 *                 that ordered list from the cursor (found by binary search) and stop after the
 *                 page; `total` is the list's size (minus its archived records unless included).
 *   - candidates: the smallest set that an `eq` or `in` filter on a field, the uuid or a config path
 *                 allows; the engine runs over that set only, so `total` is what it counts there.
 *   - scan:       the linear pass over every record.
 *
 * The structures hold the record objects themselves (search returns them, not copies). An update
 * replaces a record's object, so every structure that held the old one gets the new one.
 */
import { LIMITS } from '../config/constants.js';
import { canonicalJson, getter, isCompound, RANK, type CompiledQuery, type Getter, type NormalFilter, type Position, type SearchResult } from './query.js';
import type { InterfaceRecord } from './store.js';

/** The top-level fields with an ordered list per value. */
const FIELDS = ['module', 'kind', 'created_by', 'label'] as const;
type Field = (typeof FIELDS)[number];

/** How a query is answered; `via` names the structure it reads (`all`, a field, `uuid`, `config.<path>`). */
export type Plan = { strategy: 'ordered'; via: 'all' | Field } | { strategy: 'candidates'; via: string } | { strategy: 'scan' };

/** Records ordered by created_at, then uuid (both by UTF-16 code units, as the engine sorts them). */
class OrderedList {
  readonly items: InterfaceRecord[] = [];
  archived = 0;

  /** The number of records a query with this archived flag can see. */
  visible(includeArchived: boolean): number {
    return includeArchived ? this.items.length : this.items.length - this.archived;
  }

  add(record: InterfaceRecord): void {
    const { created_at: at, uuid } = record;
    this.items.splice(this.bound((r) => r.created_at > at || (r.created_at === at && r.uuid > uuid)), 0, record);
    if (record.archived) this.archived++;
  }

  /** Appends a record that sorts after every record held (bulk loads in order). */
  push(record: InterfaceRecord): void {
    this.items.push(record);
    if (record.archived) this.archived++;
  }

  /** Swaps `old` for `next` (same created_at and uuid), or removes it when `next` is undefined. */
  replace(old: InterfaceRecord, next: InterfaceRecord | undefined): void {
    const { created_at: at, uuid } = old;
    const i = this.bound((r) => r.created_at > at || (r.created_at === at && r.uuid >= uuid));
    if (next) this.items[i] = next;
    else this.items.splice(i, 1);
    this.archived += (next?.archived ? 1 : 0) - (old.archived ? 1 : 0);
  }

  /**
   * The records in created_at order (`desc`: newest first), ties by uuid ascending either way,
   * starting at the first group of equal created_at that can follow `after`. The engine skips the
   * records of that group at or before the cursor.
   */
  *walk(direction: 'asc' | 'desc', after: Readonly<Position> | null): Generator<InterfaceRecord> {
    const { items } = this;
    // Every created_at is a string, so a cursor of a lower rank sorts before all records, a
    // higher one after all of them; desc reverses that.
    const rank = after ? (after.key[0] as number) : RANK.string;
    const value = after?.key[1] as string;
    if (direction === 'asc') {
      const start = !after || rank < RANK.string ? 0 : rank > RANK.string ? items.length : this.bound((r) => r.created_at >= value);
      for (let i = start; i < items.length; i++) yield items[i]!;
      return;
    }
    let end = !after || rank > RANK.string ? items.length : rank < RANK.string ? 0 : this.bound((r) => r.created_at > value);
    while (end > 0) {
      const at = items[end - 1]!.created_at;
      let begin = end - 1;
      while (begin > 0 && items[begin - 1]!.created_at === at) begin--;
      for (let i = begin; i < end; i++) yield items[i]!;
      end = begin;
    }
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

/** The records holding each value at one config path (records missing it are in no bucket). */
class PathIndex {
  readonly values = new ValueMap<InterfaceRecord[]>();

  constructor(readonly read: Getter) {}

  add(record: InterfaceRecord): void {
    const value = this.read(record);
    if (value !== undefined) this.values.ensure(value, () => []).push(record);
  }

  /** Swaps `old` for `next` in its bucket, or removes it when `next` is undefined. */
  replace(old: InterfaceRecord, next: InterfaceRecord | undefined): void {
    const value = this.read(old);
    const bucket = value === undefined ? undefined : this.values.get(value);
    if (!bucket) return;
    const i = bucket.indexOf(old);
    // Order inside a bucket is irrelevant (the engine sorts), so a removal swaps in the last one.
    if (next && this.read(next) === value) bucket[i] = next;
    else {
      bucket[i] = bucket.at(-1)!;
      bucket.pop();
      if (!bucket.length) this.values.delete(value);
      if (next) this.add(next);
    }
  }
}

const NO_RECORDS = new OrderedList();

/** Records held in memory and indexed for search. */
export class RecordIndex {
  private readonly byUuid = new Map<string, InterfaceRecord>();
  private all = new OrderedList();
  private readonly fields = new Map<Field, ValueMap<OrderedList>>(FIELDS.map((field) => [field, new ValueMap()]));
  /** Path (dotted, record-level) → its index; Map order is recency of use, oldest first. */
  private readonly paths = new Map<string, PathIndex>();

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
    this.all = new OrderedList();
    for (const field of FIELDS) this.fields.set(field, new ValueMap());
    this.paths.clear();
    const sorted = [...records].sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
    for (const record of sorted) {
      this.byUuid.set(record.uuid, record);
      this.all.push(record);
      for (const field of FIELDS) this.fields.get(field)!.ensure(record[field], () => new OrderedList()).push(record);
    }
  }

  /** Adds the record, or replaces the one with its uuid. */
  put(record: InterfaceRecord): void {
    const old = this.byUuid.get(record.uuid);
    this.byUuid.set(record.uuid, record);
    // A replacement with the same created_at and field values (label and archived updates keep
    // created_at; a label update moves the record between label lists) swaps in place.
    if (old && old.created_at === record.created_at) this.all.replace(old, record);
    else {
      if (old) this.all.replace(old, undefined);
      this.all.add(record);
    }
    for (const field of FIELDS) {
      const values = this.fields.get(field)!;
      if (old && old[field] === record[field] && old.created_at === record.created_at) {
        values.get(old[field])!.replace(old, record);
        continue;
      }
      if (old) this.removeFromField(values, old[field], old);
      values.ensure(record[field], () => new OrderedList()).add(record);
    }
    for (const path of this.paths.values()) {
      if (old) path.replace(old, record);
      else path.add(record);
    }
  }

  /** Removes the record with this uuid; false when there was none. */
  delete(uuid: string): boolean {
    const old = this.byUuid.get(uuid);
    if (!old) return false;
    this.byUuid.delete(uuid);
    this.all.replace(old, undefined);
    for (const field of FIELDS) this.removeFromField(this.fields.get(field)!, old[field], old);
    for (const path of this.paths.values()) path.replace(old, undefined);
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
    const [first] = sort;
    if (sort.length === 1 && first!.path.length === 1 && first!.path[0] === 'created_at' && filters.length <= 1) {
      const [only] = filters;
      const field = only && fieldOf(only);
      if (!only || (field && only.op === 'eq')) {
        const list = field ? (this.fields.get(field)!.get(only!.value) ?? NO_RECORDS) : this.all;
        return {
          plan: { strategy: 'ordered', via: field ?? 'all' },
          answer: () => query.runOrdered(list.walk(first!.direction, after), list.visible(includeArchived)),
        };
      }
    }
    let best: { via: string; records: readonly InterfaceRecord[] } | undefined;
    for (const filter of filters) {
      const records = this.candidates(filter);
      if (records && (!best || records.length < best.records.length)) best = { via: filter.path.join('.'), records };
    }
    if (best) {
      const { via, records } = best;
      return { plan: { strategy: 'candidates', via }, answer: () => query.run(records) };
    }
    return { plan: { strategy: 'scan' }, answer: () => query.run(this.all.items) };
  }

  /** Every record that can match an `eq` or `in` filter (a superset), or undefined when no index helps. */
  private candidates({ path, op, value }: NormalFilter): readonly InterfaceRecord[] | undefined {
    if (op !== 'eq' && op !== 'in') return undefined;
    const wanted = op === 'eq' ? [value] : distinct(value as unknown[]);
    const [root] = path;
    if (root === 'uuid') return wanted.flatMap((uuid) => this.byUuid.get(uuid as string) ?? []);
    const field = fieldOf({ path });
    if (field) return wanted.flatMap((v) => this.fields.get(field)!.get(v)?.items ?? []);
    // A map keyed by whole configs would hold a canonical text per record: not worth its memory.
    if (root !== 'config' || path.length < 2) return undefined;
    const values = this.pathIndex(path).values;
    return wanted.flatMap((v) => values.get(v) ?? []);
  }

  /** The path's index, built on first use; the least recently used one goes beyond the cap. */
  private pathIndex(path: string[]): PathIndex {
    const key = path.join('.');
    let index = this.paths.get(key);
    if (index) this.paths.delete(key);
    else {
      index = new PathIndex(getter(path));
      for (const record of this.all.items) index.add(record);
      if (this.paths.size >= LIMITS.searchPathIndexes) this.paths.delete(this.paths.keys().next().value!);
    }
    this.paths.set(key, index);
    return index;
  }
}

function fieldOf(filter: Pick<NormalFilter, 'path'>): Field | undefined {
  const [root] = filter.path;
  return filter.path.length === 1 && (FIELDS as readonly string[]).includes(root!) ? (root as Field) : undefined;
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
