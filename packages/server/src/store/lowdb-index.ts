/**
 * The embedded store's records in memory, with the secondary structures that let searches touch
 * only what they return instead of every record:
 *
 *   byUuid                              uuid → record, in the order records lie in memory (loaded
 *                                       segment by segment, then added): what a full pass follows
 *   all                                 every record, ordered by created_at (then uuid)
 *   archived                            the archived records, in the same order
 *   module, kind, class_name,           value → its records, in the same order
 *   created_by, label
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
 *
 * Rooms: the ordered lists and their walks are in lowdb-order.ts, the value buckets in
 * lowdb-values.ts, the sources a plan reads and the counting pass in lowdb-sources.ts.
 */
import { LIMITS } from '../config/constants.js';
import { OrderedList, createdAt, skipMatches } from './lowdb-order.js';
import { KEPT, NO_RECORDS, RANGE_OPS, SCATTERED, arraySource, bucketSource, cost, countMatches, listSource, PASS_CHUNK, requestOf, size, sliceSource, span, unionSource, type Candidate, type PathIndexes, type Plan, type Source, type WalkList } from './lowdb-sources.js';
import { ValueIndex, ValueMap } from './lowdb-values.js';
import { compileQuery, getter, reportTotal, type CompiledQuery, type NormalFilter, type SearchResult } from './query.js';
import type { InterfaceRecord } from './store.js';

export type { Plan };

/** The top-level fields with a list per value, ordered by created_at. */
const FIELDS = ['module', 'kind', 'class_name', 'created_by', 'label'] as const;
type Field = (typeof FIELDS)[number];


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
      const { matches, ...passed } = countMatches(query, best, () => this.byUuid.values(), cap);
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
          const skip = offset && walk.skippable ? skipMatches(list, { all: this.all, archived: this.archived }, walk, direction, includeArchived, offset) : undefined;
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
