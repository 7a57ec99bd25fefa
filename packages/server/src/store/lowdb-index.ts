/**
 * The embedded store's records in memory, with the secondary structures that let searches touch
 * only what they return instead of every record:
 *
 *   byUuid                              uuid → record, in the order records lie in memory (loaded
 *                                       segment by segment, then added): what a full pass follows
 *   all                                 every record, ordered by created_at (then uuid)
 *   archived                            the archived records, in the same order
 *   module, kind, created_by, label     value → its records, in the same order
 *   other paths                         per path, built on first use: value → its records (for
 *                                       `eq`/`in` on a config path), and every record ordered by
 *                                       the path (for a sort or a range on it); at most
 *                                       LIMITS.searchPathIndexes paths, least recently used goes
 *
 * Each filter a structure answers gives a *source*: exactly the records that pass it (a field's or
 * a config value's records, the archived list, or the slice of a path's order that a range or a
 * created_at equality covers, found by binary search). The plans of a query (`everyPlan`) each
 * return exactly what the linear pass (`CompiledQuery.run` over every record) returns:
 *   - ordered:    one sort key: walk a list that holds every match in that order from the cursor
 *                 (found by binary search) and stop after the page: the created_at list, a source's
 *                 own list for created_at (one module's newest first, archived only), a range's
 *                 slice of its own path, or the sort path's whole order. An offset is skipped by
 *                 binary search too when every record of the list matches (archived records are
 *                 counted by their own list), else read.
 *   - candidates: the engine runs over the cheapest source (or over the matches counted in it).
 *   - scan:       the engine runs over every record.
 * For a walk, `total` (the rule in query.ts) is the size the structures keep when one filter is
 * answered by a source, else a pass over the cheapest source counts the matches, stopping at
 * `shape.total.bound + 1` when the rule allows; a pass that read everything keeps the matches,
 * which the engine then sorts alone. The plan expected to read the fewest records is taken
 * (assuming the filters are independent of the order), weighing records read out of memory order
 * (SCATTERED) and the matches the engine keeps for a page (KEPT).
 *
 * Nothing here allocates per record read: a walk reuses its iterator result, and values are
 * compared where they lie. (Keys allocated per read were promoted to the old generation by V8's
 * allocation-site pretenuring, since the same site also made the keys a sort keeps: an offset page
 * half-way grew the gateway's RSS by 200 MB of garbage.) What the engine must decide (a filter's
 * test, the order of several sort keys) it decides itself, through a query with the same filters
 * and sort (`requestOf`).
 *
 * The structures hold the record objects themselves (search returns them, not copies). An update
 * replaces a record's object, so every structure that held the old one gets the new one.
 */
import { LIMITS } from '../config/constants.js';
import type { FindRequest } from '../contract/search.js';
import { canonicalJson, isCompound } from './canonical-json.js';
import type { Position } from './cursor.js';
import { compileQuery, getter, reportTotal, type CompiledQuery, type Getter, type NormalFilter, type QueryShape, type SearchResult } from './query.js';
import type { InterfaceRecord } from './store.js';

/** The top-level fields with a list per value, ordered by created_at. */
const FIELDS = ['module', 'kind', 'created_by', 'label'] as const;
type Field = (typeof FIELDS)[number];

/** Records a counting pass tests per call of the engine (its page limit caps it). */
const PASS_CHUNK = 1000;

/** How a query is answered; `via` names the structure it reads (`created_at`, `archived`, a field, `uuid`, a path). */
export type Plan = { strategy: 'ordered'; via: string } | { strategy: 'candidates'; via: string } | { strategy: 'scan' };

/**
 * The type rank of a value in the engine's sort order (query.ts `sortKey`): missing < null <
 * false < true < numbers < strings < arrays < objects.
 */
export function rankOf(value: unknown): number {
  switch (typeof value) {
    case 'undefined':
      return 0;
    case 'boolean':
      return value ? 3 : 2;
    case 'number':
      return 4;
    case 'string':
      return 5;
    default:
      return value === null ? 1 : Array.isArray(value) ? 6 : 7;
  }
}

/** The scalar ordering a value within its rank, as `sortKey` writes it. */
function scalarOf(value: unknown, rank: number): number | string {
  return rank === 4 || rank === 5 ? (value as number | string) : rank >= 6 ? canonicalJson(value) : 0;
}

/** Where a value lies against a place in the order given as a rank and a scalar (a cursor's key). */
export function compareTo(value: unknown, rank: number, scalar: number | string): number {
  const own = rankOf(value);
  if (own !== rank) return own < rank ? -1 : 1;
  if (rank < 4) return 0;
  const mine = rank >= 6 ? canonicalJson(value) : (value as number | string);
  return mine === scalar ? 0 : mine < scalar ? -1 : 1;
}

/** Where record `a` lies against record `b` in the order of the values `read` reads, ties by uuid. */
function compareRecords(read: Getter, a: InterfaceRecord, b: InterfaceRecord): number {
  const value = read(b);
  const rank = rankOf(value);
  return compareTo(read(a), rank, scalarOf(value, rank)) || (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0);
}

/** Whether two values hold one place in the order (equal under `eq`: arrays and objects by canonical text). */
function sameValue(a: unknown, b: unknown): boolean {
  return a === b || (isCompound(a) && isCompound(b) && canonicalJson(a) === canonicalJson(b));
}

const createdAt: Getter = (record) => record.created_at;

const DONE: IteratorReturnResult<undefined> = { value: undefined, done: true };

/**
 * Walks `items[lo, hi)` ascending, or descending by groups of equal values, each group in uuid
 * order (as the engine sorts `desc`). One result object serves every step.
 */
class Walk implements Iterator<InterfaceRecord>, Iterable<InterfaceRecord> {
  private readonly result: IteratorYieldResult<InterfaceRecord> = { value: undefined as unknown as InterfaceRecord, done: false };
  /** Next index; descending, within the group [begin, end). */
  private at: number;
  private begin: number;
  private end: number;

  constructor(
    private readonly items: readonly InterfaceRecord[],
    private readonly read: Getter,
    private readonly lo: number,
    private readonly hi: number,
    private readonly descending: boolean,
  ) {
    this.at = descending ? hi : lo;
    this.begin = this.end = hi;
  }

  [Symbol.iterator](): this {
    return this;
  }

  next(): IteratorResult<InterfaceRecord> {
    const { items, result } = this;
    if (!this.descending) {
      if (this.at >= this.hi) return DONE;
      result.value = items[this.at++]!;
      return result;
    }
    if (this.at === this.end) {
      // The group is done: the next one ends where it began.
      const end = this.begin;
      if (end <= this.lo) return DONE;
      const value = this.read(items[end - 1]!);
      let begin = end - 1;
      while (begin > this.lo && sameValue(this.read(items[begin - 1]!), value)) begin--;
      this.begin = this.at = begin;
      this.end = end;
    }
    result.value = items[this.at++]!;
    return result;
  }
}

/**
 * Walks `list.items[lo, hi)` by groups of equal values, ascending or descending, and passes on
 * each group's records as `sort` orders them.
 */
class GroupWalk implements Iterator<InterfaceRecord>, Iterable<InterfaceRecord> {
  private readonly result: IteratorYieldResult<InterfaceRecord> = { value: undefined as unknown as InterfaceRecord, done: false };
  private group: InterfaceRecord[] = [];
  private at = 0;
  /** Where the next group starts (ascending) or ends (descending). */
  private edge: number;

  constructor(
    private readonly list: OrderedList,
    private readonly lo: number,
    private readonly hi: number,
    private readonly descending: boolean,
    private readonly sort: (group: InterfaceRecord[]) => InterfaceRecord[],
  ) {
    this.edge = descending ? hi : lo;
  }

  [Symbol.iterator](): this {
    return this;
  }

  next(): IteratorResult<InterfaceRecord> {
    while (this.at === this.group.length) {
      const { items, read } = this.list;
      let begin = this.edge;
      let end = this.edge;
      if (this.descending) {
        if (end <= this.lo) return DONE;
        const value = read(items[end - 1]!);
        for (begin = end - 1; begin > this.lo && sameValue(read(items[begin - 1]!), value); ) begin--;
        this.edge = begin;
      } else {
        if (begin >= this.hi) return DONE;
        const value = read(items[begin]!);
        for (end = begin + 1; end < this.hi && sameValue(read(items[end]!), value); ) end++;
        this.edge = end;
      }
      this.group = this.sort(items.slice(begin, end));
      this.at = 0;
    }
    this.result.value = this.group[this.at++]!;
    return this.result;
  }
}

/** Passes on at most `count` records of an iterator at a time (each `take` starts a new batch). */
class Take implements Iterator<InterfaceRecord>, Iterable<InterfaceRecord> {
  /** Records passed on so far, over every batch. */
  taken = 0;
  done = false;
  private left = 0;

  constructor(private readonly from: Iterator<InterfaceRecord>) {}

  take(count: number): this {
    this.left = count;
    return this;
  }

  [Symbol.iterator](): this {
    return this;
  }

  next(): IteratorResult<InterfaceRecord> {
    if (this.left === 0 || this.done) return DONE;
    const step = this.from.next();
    if (step.done) {
      this.done = true;
      return DONE;
    }
    this.left--;
    this.taken++;
    return step;
  }
}

/** Records ordered by one path's value, ascending as the engine sorts it, ties by uuid. */
class OrderedList {
  items: InterfaceRecord[] = [];
  archived = 0;
  /**
   * Records added since the list was last read, when adds wait for it (`deferred`): in a path's
   * order a new record lands anywhere, and moving the records after it (each a pointer the
   * collector must track while the new record is young) cost 150 µs per create at 100k.
   */
  private pending: InterfaceRecord[] | undefined;

  constructor(readonly read: Getter) {}

  /** Makes adds wait for the next `settled()`, which merges them in one pass. */
  deferred(): this {
    this.pending = [];
    return this;
  }

  /** The list of `records` (any order); sorts them once, each value read once. */
  static of(read: Getter, records: readonly InterfaceRecord[]): OrderedList {
    const ranks = new Uint8Array(records.length);
    const scalars = new Array<number | string>(records.length);
    records.forEach((record, i) => {
      const value = read(record);
      ranks[i] = rankOf(value);
      scalars[i] = scalarOf(value, ranks[i]!);
    });
    const order = Array.from(records, (_, i) => i);
    order.sort((a, b) => {
      if (ranks[a] !== ranks[b]) return ranks[a]! < ranks[b]! ? -1 : 1;
      if (scalars[a] !== scalars[b]) return scalars[a]! < scalars[b]! ? -1 : 1;
      const ua = records[a]!.uuid;
      const ub = records[b]!.uuid;
      return ua < ub ? -1 : ua > ub ? 1 : 0;
    });
    const list = new OrderedList(read);
    for (const i of order) list.push(records[i]!);
    return list;
  }

  /** The number of records a query with this archived flag can see. */
  visible(includeArchived: boolean): number {
    const held = this.items.length + (this.pending?.length ?? 0);
    return includeArchived ? held : held - this.archived;
  }

  add(record: InterfaceRecord): void {
    if (this.pending) this.pending.push(record);
    else this.items.splice(this.seek(record, false), 0, record);
    if (record.archived) this.archived++;
  }

  /** The list with every deferred add in place: merged from the end, each record moved once. */
  settled(): this {
    const { pending, items, read } = this;
    if (!pending?.length) return this;
    const added = OrderedList.of(read, pending).items;
    this.pending = [];
    let held = items.length - 1;
    for (const record of added) items.push(record);
    for (let at = items.length - 1, next = added.length - 1; next >= 0; at--) {
      const record = added[next]!;
      if (held >= 0 && compareRecords(read, items[held]!, record) > 0) items[at] = items[held--]!;
      else {
        items[at] = record;
        next--;
      }
    }
    return this;
  }

  /** Appends a record that sorts after every record held (lists built in order). */
  push(record: InterfaceRecord): void {
    this.items.push(record);
    if (record.archived) this.archived++;
  }

  /** Swaps `old` for `next` (same sort value and uuid), or removes it when `next` is undefined. */
  replace(old: InterfaceRecord, next: InterfaceRecord | undefined): void {
    const { pending } = this;
    const waiting = pending ? pending.indexOf(old) : -1;
    if (waiting >= 0) {
      if (next) pending![waiting] = next;
      else pending!.splice(waiting, 1);
    } else {
      const i = this.seek(old, true);
      if (next) this.items[i] = next;
      else this.items.splice(i, 1);
    }
    this.archived += (next?.archived ? 1 : 0) - (old.archived ? 1 : 0);
  }

  /**
   * The records of [lo, hi) in `direction` order (desc reverses the values, ties stay by uuid
   * ascending, as the engine sorts), starting at the first group of equal values that can follow
   * `after` (its key's first rank and scalar). The engine skips the records of that group at or
   * before the cursor.
   */
  walk(direction: 'asc' | 'desc', after: Readonly<Position> | null, lo = 0, hi = this.items.length): Iterable<InterfaceRecord> {
    const [from, to] = this.from(direction, after, lo, hi);
    return new Walk(this.items, this.read, from, to, direction === 'desc');
  }

  /**
   * As `walk`, for a query with more sort keys: group by group of equal values, each group's
   * matches in the query's whole order (`sort`: the engine's sort of one group).
   */
  walkGroups(direction: 'asc' | 'desc', after: Readonly<Position> | null, lo: number, hi: number, sort: (group: InterfaceRecord[]) => InterfaceRecord[]): Iterable<InterfaceRecord> {
    const [from, to] = this.from(direction, after, lo, hi);
    return new GroupWalk(this, from, to, direction === 'desc', sort);
  }

  /** How many records the first group of equal values `walk` would pass holds. */
  firstGroup(direction: 'asc' | 'desc', after: Readonly<Position> | null, lo: number, hi: number): number {
    const [from, to] = this.from(direction, after, lo, hi);
    if (from >= to) return 0;
    const value = this.read(this.items[direction === 'asc' ? from : to - 1]!);
    const rank = rankOf(value);
    const scalar = scalarOf(value, rank);
    const begin = this.bound((held) => compareTo(held, rank, scalar) >= 0);
    const end = this.bound((held) => compareTo(held, rank, scalar) > 0);
    return Math.min(end, to) - Math.max(begin, from);
  }

  /** The part of [lo, hi) a walk reads: from the first group of equal values that can follow `after`. */
  private from(direction: 'asc' | 'desc', after: Readonly<Position> | null, lo: number, hi: number): [number, number] {
    if (!after) return [lo, hi];
    const [rank, scalar] = after.key as [number, number | string];
    if (direction === 'asc') return [Math.max(lo, this.bound((value) => compareTo(value, rank, scalar) >= 0)), hi];
    return [lo, Math.min(hi, this.bound((value) => compareTo(value, rank, scalar) > 0))];
  }

  /** Where the records that a range filter (`lt`, `lte`, `gt`, `gte` of a number or string) matches lie: [lo, hi). */
  range(op: string, query: number | string): [number, number] {
    const rank = rankOf(query);
    const rankStart = () => this.bound((value) => rankOf(value) >= rank);
    const rankEnd = () => this.bound((value) => rankOf(value) > rank);
    // The first value past the query (`strict`), or at it.
    const from = (strict: boolean) => this.bound((value) => compareTo(value, rank, query) >= (strict ? 1 : 0));
    switch (op) {
      case 'gt':
        return [from(true), rankEnd()];
      case 'gte':
        return [from(false), rankEnd()];
      case 'lt':
        return [rankStart(), from(false)];
      default:
        return [rankStart(), from(true)];
    }
  }

  /** Where the records holding `value` lie: [lo, hi). */
  equal(value: unknown): [number, number] {
    const rank = rankOf(value);
    const scalar = scalarOf(value, rank);
    return [this.bound((held) => compareTo(held, rank, scalar) >= 0), this.bound((held) => compareTo(held, rank, scalar) > 0)];
  }

  /** How many records sort before `record` (held or not). */
  before(record: InterfaceRecord): number {
    return this.seek(record, true);
  }

  /** Where `record` goes (`at`: where it is), by binary search. */
  private seek(record: InterfaceRecord, at: boolean): number {
    const value = this.read(record);
    const rank = rankOf(value);
    const scalar = scalarOf(value, rank);
    const { uuid } = record;
    return this.boundRecord((other) => {
      const order = compareTo(this.read(other), rank, scalar);
      return order > 0 || (order === 0 && (other.uuid > uuid || (at && other.uuid === uuid)));
    });
  }

  /** The first index whose value satisfies `past` (false for a prefix, true after it). */
  private bound(past: (value: unknown) => boolean): number {
    return this.boundRecord((record) => past(this.read(record)));
  }

  /** The first index whose record satisfies `past` (false for a prefix, true after it). */
  private boundRecord(past: (record: InterfaceRecord) => boolean): number {
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
    if (isCompound(value)) {
      const key = canonicalJson(value);
      let bucket = this.compounds.get(key);
      if (bucket === undefined) this.compounds.set(key, (bucket = create()));
      return bucket;
    }
    let bucket = this.scalars.get(value);
    if (bucket === undefined) this.scalars.set(value, (bucket = create()));
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
    records: Iterable<InterfaceRecord>,
  ) {
    for (const record of records) this.add(record);
  }

  add(record: InterfaceRecord): void {
    const value = this.read(record);
    if (value === undefined) return;
    let bucket = this.values.get(value);
    if (bucket) bucket.items.push(record);
    // A new bucket holds a one-element array: most values of a path with many values are held once.
    else bucket = this.values.ensure(value, () => ({ items: [record], archived: 0 }));
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

/** Exactly the records that pass one filter (archived ones included): `items[lo, hi)`. */
interface Source {
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
interface Candidate {
  plan: Plan;
  /** Records it is expected to read, weighted by how they lie in memory (see SCATTERED). */
  cost: number;
  answer: () => SearchResult;
}

/** A list to walk for an ordered plan: `list.items[lo, hi)` holds every match, in sort order. */
interface WalkList {
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

function listSource(via: string, list: OrderedList): Source {
  return { via, items: list.items, lo: 0, hi: list.items.length, visible: (includeArchived) => list.visible(includeArchived), scattered: true, list };
}

function arraySource(via: string, items: readonly InterfaceRecord[], scattered: boolean): Source {
  return { via, items, lo: 0, hi: items.length, visible: (includeArchived, cap) => (includeArchived ? items.length : countVisible(items, 0, items.length, cap)), scattered };
}

/** The records of several lists (an `in` filter's values): put together only when the engine reads them all. */
function unionSource(via: string, parts: ReadonlyArray<readonly InterfaceRecord[]>, scattered: boolean): Source {
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
function* chain(parts: ReadonlyArray<readonly InterfaceRecord[]>): Generator<InterfaceRecord> {
  for (const part of parts) yield* part;
}

function sliceSource(via: string, path: string, order: OrderedList, [lo, hi]: [number, number]): Source {
  const { items } = order;
  return { via, items, lo, hi, visible: (includeArchived, cap) => (includeArchived ? hi - lo : countVisible(items, lo, hi, cap)), scattered: true, slice: { path, order } };
}

/** A value's records; buckets fill in the order records lie in memory. */
function bucketSource(via: string, bucket: Bucket | undefined): Source {
  if (!bucket) return arraySource(via, NO_RECORDS, false);
  const { items } = bucket;
  // Counted as the bucket changes: reading every record's flag costs a cache miss each.
  return { via, items, lo: 0, hi: items.length, visible: (includeArchived) => (includeArchived ? items.length : items.length - bucket.archived), scattered: false };
}

const size = (source: { lo: number; hi: number }): number => source.hi - source.lo;

/**
 * What reading a record out of the order records lie in memory costs, against reading it in that
 * order (a pass over 100k records: 82 against 41 ms). Walks and the lists kept in created_at order
 * read out of it: records are loaded segment by segment, and segments are spread by uuid.
 */
const SCATTERED = 2;

/**
 * What each match the engine keeps for its page costs, in records read: an entry with its sort key
 * and a place in the heap (an offset of 50,000 on 100k records: 230 ms against 31 ms for limit 10).
 */
const KEPT = 10;

/** What the engine spends reading every record of a source. */
const cost = (source: Source): number => size(source) * (source.scattered ? SCATTERED : 1);

/**
 * A request with the query's filters, archived flag and sort (so its cursors are the query's) and
 * `extra`: how a plan asks the engine's own tests and order for part of an answer.
 */
function requestOf(shape: QueryShape, extra: FindRequest): FindRequest {
  return {
    filters: shape.filters.map(({ path, op, value }) => ({ path: path.join('.'), op, value })),
    sort: shape.sort.map(({ path, direction }) => ({ by: path.join('.'), direction })),
    include_archived: shape.includeArchived,
    ...extra,
  };
}

/** The source's records as an array (the engine reads arrays faster than any other iterable). */
function span({ items, lo, hi }: Source): readonly InterfaceRecord[] {
  return lo === 0 && hi === items.length ? items : items.slice(lo, hi);
}

const NO_RECORDS: readonly InterfaceRecord[] = [];
const RANGE_OPS = new Set(['lt', 'lte', 'gt', 'gte']);

/** Records held in memory and indexed for search. */
export class RecordIndex {
  /**
   * Every record, in the order they were loaded or added: the order they lie in memory, which a
   * pass over every record follows (in created_at order it would miss the cache on most records).
   */
  private readonly byUuid = new Map<string, InterfaceRecord>();
  private all = new OrderedList(createdAt);
  private archived = new OrderedList(createdAt);
  private readonly fields = new Map<Field, ValueMap<OrderedList>>(FIELDS.map((field) => [field, new ValueMap()]));
  /** Dotted record-level path → what it has built; Map order is recency of use, oldest first. */
  private readonly paths = new Map<string, PathIndexes>();

  get size(): number {
    return this.byUuid.size;
  }

  get(uuid: string): InterfaceRecord | undefined {
    return this.byUuid.get(uuid);
  }

  /**
   * Replaces the whole content with these records (unique uuids, in the order they lie in memory);
   * much faster than putting them one by one.
   */
  load(records: readonly InterfaceRecord[]): void {
    this.byUuid.clear();
    for (const record of records) this.byUuid.set(record.uuid, record);
    this.all = OrderedList.of(createdAt, records);
    this.archived = new OrderedList(createdAt);
    for (const field of FIELDS) this.fields.set(field, new ValueMap());
    this.paths.clear();
    for (const record of this.all.items) {
      if (record.archived) this.archived.push(record);
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
    if (old?.archived) this.archived.replace(old, record.archived && placed ? record : undefined);
    if (record.archived && !(old?.archived && placed)) this.archived.add(record);
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
    if (old.archived) this.archived.replace(old, undefined);
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

  /**
   * Every plan that could answer the query, each with its answer (tests hold each to the linear
   * pass, whichever the costs would pick).
   */
  everyPlan(query: CompiledQuery): Array<{ plan: Plan; answer: SearchResult }> {
    return this.candidatePlans(query).map(({ plan, answer }) => ({ plan, answer: answer() }));
  }

  /** The cheapest plan; a walk when it ties (it needs no sort). */
  private choose(query: CompiledQuery): Candidate {
    return this.candidatePlans(query).reduce((cheapest, next) => (next.cost < cheapest.cost || (next.cost === cheapest.cost && next.plan.strategy === 'ordered') ? next : cheapest));
  }

  private removeFromField(values: ValueMap<OrderedList>, value: unknown, old: InterfaceRecord): void {
    const list = values.get(value)!;
    list.replace(old, undefined);
    if (!list.items.length) values.delete(value);
  }

  /** The ways to answer the query, each with what it is expected to cost (in records read in memory order). */
  private candidatePlans(query: CompiledQuery): Candidate[] {
    const { filters, sort, includeArchived, after, offset, limit, total } = query.shape;
    const sources: Source[] = [];
    for (const filter of filters) {
      const found = this.source(filter);
      if (found) sources.push(found);
    }
    const best = sources.reduce<Source | undefined>((small, found) => (small && cost(small) <= cost(found) ? small : found), undefined);
    // The engine keeps offset + limit matches (limit after a cursor) in its heap while it reads.
    const kept = (records: number) => KEPT * Math.min(records, (after ? 0 : offset) + limit);
    // Candidates before the scan: of two plans that cost the same, the first is picked.
    const plans: Candidate[] = best ? [{ plan: { strategy: 'candidates', via: best.via }, cost: cost(best) + kept(size(best)), answer: () => query.run(span(best)) }] : [];
    plans.push({ plan: { strategy: 'scan' }, cost: this.size + kept(this.size), answer: () => query.run(this.byUuid.values()) });

    // The matches: counted exactly, or (when the total rule allows) up to the bound and one more.
    const cap = total.exact ? Infinity : total.bound + 1;
    let count: number;
    let estimate: number;
    if (!filters.length) count = estimate = this.all.visible(includeArchived);
    else if (filters.length === 1 && best) {
      count = best.visible(includeArchived, cap);
      estimate = count < cap ? count : size(best);
    } else {
      const { matches, ...passed } = this.pass(query, best, cap);
      count = passed.count;
      estimate = matches ? count : (count * (best ? size(best) : this.size)) / passed.read;
      // Every match, counted: the engine sorts them alone.
      if (matches) plans.push({ plan: best ? { strategy: 'candidates', via: best.via } : { strategy: 'scan' }, cost: matches.length + kept(matches.length), answer: () => query.run(matches) });
    }
    if (count === 0) return [{ plan: plans.at(-1)!.plan, cost: 0, answer: () => query.run(NO_RECORDS) }];

    const { path, direction } = sort[0]!;
    const key = path.join('.');
    // Lists holding every match in the sort order. An offset is skipped without reading when every
    // record of the list matches but for the archived rule, and archived records are counted
    // without reading (skip).
    const walks: WalkList[] = [];
    const skippable = (list: OrderedList | undefined, whole: boolean) => whole && (includeArchived || list === this.all || list === this.archived);
    if (key === 'created_at') walks.push({ via: key, list: () => this.all, lo: 0, hi: this.all.items.length, skippable: skippable(this.all, !filters.length) });
    else walks.push({ via: key, list: () => this.order(path), lo: 0, hi: this.size, skippable: skippable(undefined, !filters.length) });
    for (const source of sources) {
      const whole = filters.length === 1;
      if (key === 'created_at' && source.list) walks.push({ via: source.via, list: () => source.list!, lo: 0, hi: source.hi, skippable: skippable(source.list, whole) });
      if (source.slice?.path === key) {
        const { order } = source.slice;
        walks.push({ via: source.via, list: () => order, lo: source.lo, hi: source.hi, skippable: skippable(order, whole) });
      }
    }
    if (sort.length > 1) {
      // Several keys: walk the first one's order group by group, each group sorted by the engine.
      for (const walk of walks) plans.push(this.groupWalk(query, walk, count, estimate));
      return plans;
    }
    for (const walk of walks) {
      // Records the walk passes before its page is full, if the matches are spread evenly over it.
      const wanted = (after || walk.skippable ? 0 : offset) + limit + 1;
      plans.push({
        plan: { strategy: 'ordered', via: walk.via },
        cost: SCATTERED * Math.min(size(walk), (wanted * size(walk)) / estimate),
        answer: () => {
          const list = walk.list();
          const skip = offset && walk.skippable ? this.skip(list, walk, direction, includeArchived, offset) : undefined;
          if (!skip) return query.runOrdered(list.walk(direction, after, walk.lo, walk.hi), count);
          // The same query from past the records skipped: the same page and cursor (the cursor names
          // the filters, archived flag and sort, not the offset), with the total of the whole query.
          const rest = compileQuery(requestOf(query.shape, { limit, offset: offset - skip.skipped }));
          return { ...rest.runOrdered(list.walk(direction, null, skip.lo, skip.hi), count), ...reportTotal(total, count) };
        },
      });
    }
    return plans;
  }

  /**
   * A walk over a list in the order of the query's first sort key, group of equal values by group,
   * each group's matches sorted by the engine through a query with the same filters and sort (a
   * page of 1,000 at a time, each page a pass over the group). It reads whole groups up to the
   * page; its cost takes the first group's size for every group's.
   */
  private groupWalk(query: CompiledQuery, walk: WalkList, count: number, estimate: number): Candidate {
    const { sort, after, offset, limit } = query.shape;
    const { direction } = sort[0]!;
    const list = walk.list();
    const wanted = (after ? 0 : offset) + limit + 1;
    const group = Math.max(1, list.firstGroup(direction, after, walk.lo, walk.hi));
    const groupMatches = group * Math.min(1, estimate / size(walk));
    const pages = Math.max(1, Math.ceil(groupMatches / PASS_CHUNK));
    const groups = Math.min(Math.ceil(size(walk) / group), Math.ceil(wanted / groupMatches));
    let sorter: CompiledQuery | undefined;
    const sortGroup = (records: InterfaceRecord[]) => {
      const sorted: InterfaceRecord[] = [];
      sorter ??= compileQuery(requestOf(query.shape, { limit: PASS_CHUNK }));
      for (let page = sorter.run(records); ; ) {
        for (const record of page.items) sorted.push(record);
        if (!page.next_cursor) return sorted;
        page = compileQuery(requestOf(query.shape, { limit: PASS_CHUNK, cursor: page.next_cursor })).run(records);
      }
    };
    return {
      plan: { strategy: 'ordered', via: walk.via },
      // The engine keeps each group's matches (up to a page) while it sorts them.
      cost: groups * pages * (SCATTERED * group + KEPT * Math.min(groupMatches, PASS_CHUNK)),
      answer: () => query.runOrdered(list.walkGroups(direction, after, walk.lo, walk.hi, sortGroup), count),
    };
  }

  /**
   * Where a walk over a list that holds only matches (but for archived records) can start to pass
   * at most `offset` matches before it: found by binary search when the list is `all` (counting
   * archived records by their own list), the archived list or any list when archived records are
   * included; undefined otherwise. `skipped` matches lie before the new start.
   */
  private skip(list: OrderedList, range: { lo: number; hi: number }, direction: 'asc' | 'desc', includeArchived: boolean, offset: number): { lo: number; hi: number; skipped: number } | undefined {
    const { items, read } = list;
    // Archived records of `all` before index i, by their place in the archived list.
    const archivedBefore = (i: number) => (i === items.length ? this.archived.items.length : this.archived.before(items[i]!));
    let visible: (from: number, to: number) => number;
    if (includeArchived) visible = (from, to) => to - from;
    else if (list === this.archived) visible = () => 0;
    else if (list === this.all) visible = (from, to) => to - from - (archivedBefore(to) - archivedBefore(from));
    else return undefined;
    const { lo, hi } = range;
    if (direction === 'asc') {
      // The last start with at most `offset` matches before it.
      let [low, high] = [lo, hi];
      while (low < high) {
        const mid = (low + high + 1) >>> 1;
        if (visible(lo, mid) <= offset) low = mid;
        else high = mid - 1;
      }
      return { lo: low, hi, skipped: visible(lo, low) };
    }
    // Descending, the walk passes [end, hi) first: the lowest end with at most `offset` matches
    // there, raised to where a group of equal values begins (a group is walked whole).
    let [low, high] = [lo, hi];
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (visible(mid, hi) <= offset) high = mid;
      else low = mid + 1;
    }
    let end = low;
    while (end > lo && end < hi && sameValue(read(items[end - 1]!), read(items[end]!))) end++;
    return { lo, hi: end, skipped: visible(end, hi) };
  }

  /**
   * Counts the query's matches among the source's records (every record without one), stopping
   * once `cap` are seen; keeps them all when it read every record.
   */
  private pass(query: CompiledQuery, source: Source | undefined, cap: number): { count: number; read: number; matches?: InterfaceRecord[] } {
    const from = !source ? this.byUuid.values() : source.parts ? chain(source.parts) : new Walk(source.items, createdAt, source.lo, source.hi, false);
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

  /** Exactly the records that pass the filter (archived or not), or undefined when no structure answers it. */
  private source({ path, op, value }: NormalFilter): Source | undefined {
    const via = path.join('.');
    const [root] = path;
    if (RANGE_OPS.has(op)) {
      // Archived flags and whole configs are never numbers or strings.
      if (root === 'archived' || (path.length === 1 && root === 'config')) return arraySource(via, NO_RECORDS, false);
      const order = root === 'created_at' ? this.all : this.order(path);
      return sliceSource(via, via, order, order.range(op, value as number | string));
    }
    if (op !== 'eq' && op !== 'in') return undefined;
    const wanted = op === 'eq' ? [value] : distinct(value as unknown[]);
    if (root === 'uuid') return arraySource(via, wanted.flatMap((uuid) => this.byUuid.get(uuid as string) ?? []), true);
    if (root === 'archived') {
      if (op !== 'eq' || value === false) return undefined; // nearly every record: nothing to narrow
      return value === true ? listSource(via, this.archived) : arraySource(via, NO_RECORDS, false);
    }
    if (root === 'created_at') return op === 'eq' ? sliceSource(via, via, this.all, this.all.equal(value)) : undefined;
    const field = fieldOf(path);
    if (field) {
      const lists = wanted.map((v) => this.fields.get(field)!.get(v));
      if (lists.length > 1) return unionSource(via, lists.map((list) => list?.items ?? NO_RECORDS), true);
      return listSource(via, lists[0] ?? new OrderedList(createdAt));
    }
    // A map keyed by whole configs would hold a canonical text per record: not worth its memory.
    if (root !== 'config' || path.length < 2) return undefined;
    const indexes = this.pathIndexes(path);
    indexes.values ??= new ValueIndex(indexes.read, this.byUuid.values());
    const { values } = indexes.values;
    if (wanted.length > 1) return unionSource(via, wanted.map((v) => values.get(v)?.items ?? NO_RECORDS), false);
    return bucketSource(via, values.get(wanted[0]));
  }

  /** Every record ordered by the path, built on first use, with the records added since in place. */
  private order(path: string[]): OrderedList {
    const indexes = this.pathIndexes(path);
    indexes.order ??= OrderedList.of(indexes.read, this.all.items).deferred();
    return indexes.order.settled();
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

/** The `in` list without elements equal under `eq`, so no bucket is taken twice. */
function distinct(values: unknown[]): unknown[] {
  const seen = new ValueMap<true>();
  return values.filter((value) => {
    if (seen.get(value)) return false;
    seen.ensure(value, () => true);
    return true;
  });
}
