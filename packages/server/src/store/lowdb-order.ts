/**
 * Records in one order, for the embedded store's index (lowdb-index.ts): the engine's type ranks
 * and comparisons applied where values lie, walks that reuse one iterator result (nothing is
 * allocated per record read), and OrderedList, a list kept in a path's order with binary searches
 * for cursors, ranges, equal values and offsets.
 */
import { canonicalJson, isCompound } from './canonical-json.js';
import type { Position } from './cursor.js';
import type { Getter } from './query.js';
import type { InterfaceRecord } from './store.js';

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
export function sameValue(a: unknown, b: unknown): boolean {
  return a === b || (isCompound(a) && isCompound(b) && canonicalJson(a) === canonicalJson(b));
}

export const createdAt: Getter = (record) => record.created_at;

const DONE: IteratorReturnResult<undefined> = { value: undefined, done: true };

/**
 * Walks `items[lo, hi)` ascending, or descending by groups of equal values, each group in uuid
 * order (as the engine sorts `desc`). One result object serves every step.
 */
export class Walk implements Iterator<InterfaceRecord>, Iterable<InterfaceRecord> {
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
export class Take implements Iterator<InterfaceRecord>, Iterable<InterfaceRecord> {
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
export class OrderedList {
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
 * Where a walk over a list that holds only matches (but for archived records) can start to pass
 * at most `offset` matches before it: found by binary search when the list is `all` (counting
 * archived records by their own list), the archived list or any list when archived records are
 * included; undefined otherwise. `skipped` matches lie before the new start.
 */
export function skipMatches(
  list: OrderedList,
  { all, archived }: { all: OrderedList; archived: OrderedList },
  range: { lo: number; hi: number },
  direction: 'asc' | 'desc',
  includeArchived: boolean,
  offset: number,
): { lo: number; hi: number; skipped: number } | undefined {
  const { items, read } = list;
  // Archived records of `all` before index i, by their place in the archived list.
  const archivedBefore = (i: number) => (i === items.length ? archived.items.length : archived.before(items[i]!));
  let visible: (from: number, to: number) => number;
  if (includeArchived) visible = (from, to) => to - from;
  else if (list === archived) visible = () => 0;
  else if (list === all) visible = (from, to) => to - from - (archivedBefore(to) - archivedBefore(from));
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
