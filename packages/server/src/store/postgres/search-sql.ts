/**
 * Compiles a search (query.ts, planQuery) into one parameterized PostgreSQL statement with the
 * semantics documented in query.ts. Values only ever travel as parameters; the SQL text holds
 * nothing but fixed fragments, column names and parameter numbers.
 *
 * A record path becomes a jsonb expression that is SQL NULL when the path is missing (so missing
 * and JSON null stay apart). Strings are coded (coding.ts), so comparing coded text in the "C"
 * collation is comparing by UTF-16 code units, and jsonb equality is deep JSON equality (numbers
 * by value, keys in any order, `true` never 1). A sort key becomes the columns that order it: the
 * type rank, then the number or the text within the rank (arrays and objects by the canonical text
 * stored in sort_text). The statement takes the total (from the trigger-kept counts when they hold
 * it, else by counting every match) and returns the page (one row more than the limit, to tell
 * whether a next page exists) in one round trip.
 */
import { createHash } from 'node:crypto';
import type { NormalFilter, Position, QueryPlan, SortKey } from '../query.js';
import { codedPrefix, codeText, codeValue, indexedPrefix, PREFIX_INDEXED, RECORD_COLUMNS } from './coding.js';
import { countedGroup, CREATED_BUCKETS, type CountedGroup } from './counts.js';

export interface Statement {
  text: string;
  values: unknown[];
}

const INDEX = /^(?:0|[1-9][0-9]*)$/;
const TEXT_FIELDS = new Set(['uuid', 'module', 'kind', 'class_name', 'created_by', 'created_at']);

const isCompound = (value: unknown): value is object => value !== null && typeof value === 'object';

/** The SQL text of one statement, growing its parameter list. */
class Builder {
  readonly values: unknown[] = [];

  param(value: unknown, cast = ''): string {
    this.values.push(value);
    return `$${this.values.length}${cast}`;
  }

  /** A JSON value as a jsonb parameter, coded. */
  json(value: unknown): string {
    return this.param(JSON.stringify(codeValue(value)), '::jsonb');
  }
}

/** A SQL string literal (standard_conforming_strings, on by default since PostgreSQL 9.1). */
const literal = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/**
 * The jsonb value at a config path, or SQL NULL when it is missing. The path is written into the
 * text (its segments are [A-Za-z0-9_-], coded), not passed as parameters: an expression index on
 * the path (pathIndexStatement) serves a statement only when both spell the same expression.
 */
function configValueAt(rest: string[]): string {
  // A numeric segment indexes an array or names an object key, whichever the value is. The
  // CASE is needed: PostgreSQL answers `scalar -> 0` with the scalar itself.
  return rest.reduce(
    (at, segment) =>
      INDEX.test(segment)
        ? `(CASE WHEN jsonb_typeof(${at}) = 'array' THEN ${at} -> ${Number(segment)} ELSE ${at} -> ${literal(codeText(segment))} END)`
        : `(${at} -> ${literal(codeText(segment))})`,
    'config',
  );
}

/**
 * The expressions that order the values at a config path (query.ts, sortKey): the type rank, the
 * number within rank 4, the text within ranks 5–7 (a string's coded text; an array's or object's
 * coded canonical JSON from sort_text), and the text's indexed prefix, which an index can hold
 * whatever the value's length (coding.ts, INDEXED_PREFIX).
 */
export function configSortKeys(path: string[]): { rank: string; number: string; text: string; prefix: string } {
  const v = configValueAt(path.slice(1));
  const key = literal(path.slice(1).join('.'));
  const text = `((CASE jsonb_typeof(${v}) WHEN 'string' THEN ${v} #>> '{}' WHEN 'array' THEN sort_text ->> ${key} WHEN 'object' THEN sort_text ->> ${key} END) COLLATE "C")`;
  return {
    rank: `(CASE WHEN ${v} IS NULL THEN 0 ELSE CASE jsonb_typeof(${v}) WHEN 'null' THEN 1 WHEN 'boolean' THEN CASE WHEN ${v} = 'true'::jsonb THEN 3 ELSE 2 END WHEN 'number' THEN 4 WHEN 'string' THEN 5 WHEN 'array' THEN 6 ELSE 7 END END)`,
    number: `(CASE WHEN jsonb_typeof(${v}) = 'number' THEN (${v})::numeric END)`,
    text,
    prefix: indexedPrefix(text),
  };
}

/** The name of the expression index on a config path's sort keys (a digest of the path: any length fits). */
export function pathIndexName(path: string[]): string {
  return `portico_path_${createHash('sha256').update(path.join('.')).digest('hex').slice(0, 16)}`;
}

/**
 * The index that walks a config path in sort order (either direction: the uuid tiebreak and whole
 * text within a prefix are sorted incrementally) and serves range filters on it. Made on demand
 * (postgres-store.ts): `CONCURRENTLY`, so writers never wait for it.
 */
export function pathIndexStatement(path: string[]): string {
  const { rank, number, prefix } = configSortKeys(path);
  // archived beside the keys: a range's bounded count then reads the index alone.
  return `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${pathIndexName(path)} ON portico_interfaces (project, ${rank}, ${number}, ${prefix}) INCLUDE (archived)`;
}

/** The config paths of a plan that a path index would serve: sort keys and range filters. */
export function indexablePaths(plan: QueryPlan): string[][] {
  const paths = [...plan.sorts.map((sort) => sort.path), ...plan.filters.filter((filter) => filter.op in ORDER_OPS).map((filter) => filter.path)];
  return paths.filter((path) => path[0] === 'config' && path.length > 1);
}

/** The jsonb value at a record path, or SQL NULL when it is missing. */
function valueAt(path: string[]): string {
  const [root, ...rest] = path;
  switch (root) {
    case 'config':
      return configValueAt(rest);
    case 'label':
      return `coalesce(to_jsonb(label), 'null'::jsonb)`;
    case 'archived':
      return 'to_jsonb(archived)';
    default:
      return `to_jsonb(${root})`;
  }
}

/** The config as nested objects down a path of plain keys, for GIN containment; null when a segment may index an array. */
function containment(path: string[], value: unknown): unknown {
  if (path[0] !== 'config' || path.length < 2 || path.some((segment) => INDEX.test(segment))) return null;
  return path.slice(1).reduceRight<unknown>((inner, key) => ({ [key]: inner }), value);
}

const ORDER_OPS = { lt: '<', lte: '<=', gt: '>', gte: '>=' } as const;

/**
 * One filter on a top-level text column (module, label, …): plain comparisons that its b-tree
 * index serves. On a column indexed by its prefix, the condition on the whole value comes with the
 * one on the prefix that it implies, which is what the index can answer.
 */
function textFieldFilter(b: Builder, column: string, { op, value }: NormalFilter): string | null {
  const prefixed = PREFIX_INDEXED.has(column);
  /** `whole` AND, on a prefixed column, `left(column) prefixOp left(coded)`. */
  const withPrefix = (whole: string, prefixOp: string, coded: string) =>
    prefixed ? `${indexedPrefix(column)} ${prefixOp} ${b.param(codedPrefix(coded))} AND ${whole}` : whole;
  switch (op) {
    case 'eq': {
      if (typeof value === 'string') {
        const coded = codeText(value);
        return withPrefix(`${column} = ${b.param(coded)}`, '=', coded);
      }
      return column === 'label' && value === null ? 'label IS NULL' : 'false';
    }
    case 'in': {
      const coded = (value as unknown[]).filter((element): element is string => typeof element === 'string').map(codeText);
      let anyOf = `${column} = ANY(${b.param(coded, '::text[]')})`;
      if (prefixed) anyOf = `(${indexedPrefix(column)} = ANY(${b.param(coded.map(codedPrefix), '::text[]')}) AND ${anyOf})`;
      return column === 'label' && (value as unknown[]).includes(null) ? `(${anyOf} OR label IS NULL)` : anyOf;
    }
    case 'lt':
    case 'lte':
    case 'gt':
    case 'gte': {
      if (typeof value !== 'string') return 'false';
      const coded = codeText(value);
      // x < v implies prefix(x) <= prefix(v): the prefix bound is never strict.
      return withPrefix(`${column} ${ORDER_OPS[op]} ${b.param(coded)}`, op === 'lt' || op === 'lte' ? '<=' : '>=', coded);
    }
    case 'contains':
      return typeof value === 'string' ? `strpos(${column}, ${b.param(codeText(value))}) > 0` : 'false';
    default:
      return null;
  }
}

/** One filter as a SQL condition (never NULL where it matters: every branch is AND-ed under WHERE). */
function filterSql(b: Builder, filter: NormalFilter): string {
  const { path, op, value } = filter;
  const [root] = path;
  if (path.length === 1 && (TEXT_FIELDS.has(root!) || root === 'label')) {
    const fast = textFieldFilter(b, root!, filter);
    if (fast) return fast;
  }
  if (root === 'archived' && op === 'eq') {
    // The plain column, so that the partial index on archived records answers it.
    return typeof value === 'boolean' ? `archived = ${b.param(value)}` : 'false';
  }
  const v = valueAt(path);
  switch (op) {
    case 'eq': {
      const equal = `${v} = ${b.json(value)}`;
      const contained = containment(path, value);
      // Implied by the equality; written out so that the GIN index on config can answer it.
      return contained === null ? equal : `config @> ${b.json(contained)} AND ${equal}`;
    }
    case 'ne':
      return `${v} <> ${b.json(value)}`;
    case 'lt':
    case 'lte':
    case 'gt':
    case 'gte': {
      if (root !== 'config') {
        // CASE, not AND: PostgreSQL may evaluate AND's operands in any order, and the cast fails on a non-number.
        return typeof value === 'number'
          ? `(CASE WHEN jsonb_typeof(${v}) = 'number' THEN (${v})::numeric ${ORDER_OPS[op]} ${b.param(JSON.stringify(value), '::numeric')} ELSE false END)`
          : `(jsonb_typeof(${v}) = 'string' AND (${v} #>> '{}') COLLATE "C" ${ORDER_OPS[op]} ${b.param(codeText(value as string))})`;
      }
      // In the sort keys' terms, so that the path's index (pathIndexStatement) answers it: the
      // number (text) is NULL outside rank 4 (5), and NULL never passes a WHERE.
      const keys = configSortKeys(path);
      if (typeof value === 'number') return `(${keys.rank} = 4 AND ${keys.number} ${ORDER_OPS[op]} ${b.param(JSON.stringify(value), '::numeric')})`;
      const coded = codeText(value as string);
      // x < v implies prefix(x) <= prefix(v): the prefix bound is never strict.
      const prefixOp = op === 'lt' || op === 'lte' ? '<=' : '>=';
      return `(${keys.rank} = 5 AND ${keys.prefix} ${prefixOp} ${b.param(codedPrefix(coded))} AND ${keys.text} ${ORDER_OPS[op]} ${b.param(coded)})`;
    }
    case 'in':
    case 'nin': {
      const elements = (value as unknown[]).map((element) => JSON.stringify(codeValue(element)));
      const anyOf = `${v} = ANY(${b.param(elements, '::jsonb[]')})`;
      return op === 'in' ? anyOf : `(${v} IS NOT NULL AND NOT ${anyOf})`;
    }
    case 'contains': {
      const element = isCompound(value)
        ? `EXISTS (SELECT 1 FROM jsonb_array_elements(${v}) AS element WHERE element = ${b.json(value)})`
        : `${v} @> ${b.json([value])}`;
      const inArray = `(CASE WHEN jsonb_typeof(${v}) = 'array' THEN ${element} ELSE false END)`;
      return typeof value === 'string' ? `((jsonb_typeof(${v}) = 'string' AND strpos(${v} #>> '{}', ${b.param(codeText(value))}) > 0) OR ${inArray})` : inArray;
    }
    case 'exists':
      return value ? `${v} IS NOT NULL` : `${v} IS NULL`;
  }
}

/** The columns that order one sort key, ascending, with how a cursor's [rank, scalar] compares to them. */
interface SortColumns {
  /** ORDER BY expressions (ascending form). */
  order: string[];
  /** SQL conditions for "this record's key is after / equal to the cursor's" in ascending order. */
  compare(rank: number, scalar: number | string, desc: boolean): { after: string; equal: string; bound?: string };
}

function sortColumns(b: Builder, path: string[]): SortColumns {
  const [root] = path;
  const beyond = (desc: boolean) => (desc ? '<' : '>');
  if (path.length === 1 && TEXT_FIELDS.has(root!)) {
    // Always a string (rank 5): the column itself orders it, as its indexes do.
    return {
      order: [root!],
      compare: (_rank, scalar, desc) => {
        const at = b.param(codeText(scalar as string));
        return { after: `${root} ${beyond(desc)} ${at}`, equal: `${root} = ${at}`, bound: `${root} ${beyond(desc)}= ${at}` };
      },
    };
  }
  if (root === 'label') {
    // Null (rank 1) before strings (rank 5).
    return {
      order: ['(label IS NOT NULL)', 'label'],
      compare: (rank, scalar, desc) => {
        if (rank === 1) return { after: desc ? 'false' : 'label IS NOT NULL', equal: 'label IS NULL' };
        const at = b.param(codeText(scalar as string));
        return { after: desc ? `(label IS NULL OR label < ${at})` : `label > ${at}`, equal: `label = ${at}` };
      },
    };
  }
  if (root === 'archived') {
    return {
      order: ['archived'],
      compare: (rank, _scalar, desc) => {
        const value = rank === 3;
        const after = desc ? (value ? 'NOT archived' : 'false') : value ? 'false' : 'archived';
        return { after, equal: value ? 'archived' : 'NOT archived' };
      },
    };
  }
  if (root !== 'config') throw new Error(`no sort columns for ${path.join('.')}`); // the schema admits no other path
  const { rank, number, text, prefix } = configSortKeys(path);
  return {
    // The prefix adds no order of its own (it orders as the text does), but it is what the path's index holds.
    order: [rank, number, prefix, text],
    compare: (cursorRank, scalar, desc) => {
      const at = b.param(cursorRank, '::int');
      const after = `${rank} ${beyond(desc)} ${at}`;
      if (cursorRank < 4) return { after, equal: `${rank} = ${at}` };
      const [column, value] = cursorRank === 4 ? [number, b.param(JSON.stringify(scalar), '::numeric')] : [text, b.param(codeText(scalar as string))];
      return { after: `(${after} OR (${rank} = ${at} AND ${column} ${beyond(desc)} ${value}))`, equal: `(${rank} = ${at} AND ${column} = ${value})` };
    },
  };
}

/** "After the cursor's position": lexicographic over the sort keys, then uuid ascending. */
function afterSql(b: Builder, sorts: Array<{ columns: SortColumns; desc: boolean }>, after: Position): string {
  let condition = `uuid > ${b.param(codeText(after.uuid))}`;
  let bound: string | undefined;
  for (let i = sorts.length - 1; i >= 0; i--) {
    const { columns, desc } = sorts[i]!;
    const cmp = columns.compare(after.key[2 * i] as number, after.key[2 * i + 1]!, desc);
    condition = `(${cmp.after} OR (${cmp.equal} AND ${condition}))`;
    if (i === 0) bound = cmp.bound;
  }
  // A plain range on the first key too, so that an index on it starts the scan at the cursor.
  return bound ? `${bound} AND ${condition}` : condition;
}

/**
 * The count of a search's matches (column `total`) and how many count rows it summed (`deltas`, 0
 * when it counted): from portico_counts when one group holds it (counts.ts); else by counting,
 * every match when the request's total rule asks an exact total, or else only up to one more than
 * the rule's bound (query.ts, TotalRule), so that a page never waits for a million rows counted.
 */
function totalSql(b: Builder, project: string, plan: QueryPlan, where: string[]): string {
  const group = countedGroup(plan);
  if (!group) {
    const matches = `SELECT 1 FROM portico_interfaces WHERE ${where.join(' AND ')}`;
    const counted = plan.total.exact ? matches : `${matches} LIMIT ${b.param(plan.total.bound + 1, '::int')}`;
    return `SELECT count(*) AS total, 0 AS deltas FROM (${counted}) AS matches`;
  }
  if (!group.archived.length) return 'SELECT 0 AS total, 0 AS deltas'; // archived eq true without include_archived, or both values
  const archived = group.archived.length === 1 ? `archived = ${b.param(group.archived[0])}` : 'archived IN (false, true)';
  return `SELECT coalesce(sum(delta), 0) AS total, count(*) AS deltas FROM portico_counts
  WHERE project = ${b.param(project)} AND dimension = ${b.param(group.dimension)}
    AND ${indexedPrefix('value')} = ${b.param(codedPrefix(group.value))} AND value = ${b.param(group.value)} AND ${archived}`;
}

/**
 * An offset page in created_at order over a set the counts hold (no filter but on archived): its
 * direction and group, or null. Its rows skip whole hours, then whole minutes, by their counts.
 */
function createdJump(plan: QueryPlan): { desc: boolean; group: CountedGroup } | null {
  const [sort, ...more] = plan.sorts;
  if (plan.offset === 0 || plan.after || !sort || more.length || sort.path.length !== 1 || sort.path[0] !== 'created_at') return null;
  const group = countedGroup(plan);
  return group && group.dimension === 'all' && group.archived.length ? { desc: sort.direction === 'desc', group } : null;
}

/**
 * The page of an offset search in created_at order (createdJump), without walking what it skips:
 * from the counts (counts.ts, one snapshot with the rows, so exact), the hour that holds the page's
 * first row and how many rows come before that hour, then the minute within that hour, then a walk
 * of the index from that minute's edge for the rest of the offset. A minute is a range of
 * created_at: its rows are those whose text starts with it, so newest first it ends just below
 * the minute followed by the highest code point (coded text never holds it), or, for a created_at
 * shorter than a minute's prefix (the minute is all of it), at the minute itself; oldest first it
 * starts at the minute.
 */
function createdJumpRows(b: Builder, project: string, plan: QueryPlan, page: string[], order: string[], jump: { desc: boolean; group: CountedGroup }): string {
  const [hour, minute] = CREATED_BUCKETS;
  const direction = jump.desc ? 'DESC' : 'ASC';
  const archived = jump.group.archived.length === 1 ? `archived = ${b.param(jump.group.archived[0])}` : 'archived IN (false, true)';
  const at = b.param(project);
  const offset = b.param(plan.offset, '::bigint');
  const edge = jump.desc
    ? `created_at < (SELECT value || (CASE WHEN length(value) = ${minute.length} THEN chr(1114111) ELSE chr(1) END) FROM minute)`
    : 'created_at >= (SELECT value FROM minute)';
  return `WITH hours AS (
    SELECT value, sum(delta) AS n FROM portico_counts
    WHERE project = ${at} AND dimension = '${hour.dimension}' AND ${archived}
    GROUP BY value HAVING sum(delta) <> 0
  ), hour AS (
    SELECT value, before FROM (SELECT value, n, sum(n) OVER (ORDER BY value ${direction} ROWS UNBOUNDED PRECEDING) - n AS before FROM hours) AS h
    WHERE before + n > ${offset} ORDER BY value ${direction} LIMIT 1
  ), minutes AS (
    SELECT c.value, sum(c.delta) AS n FROM portico_counts AS c, hour
    WHERE c.project = ${at} AND c.dimension = '${minute.dimension}' AND c.${archived}
      AND ${indexedPrefix('c.value')} >= hour.value AND ${indexedPrefix('c.value')} < hour.value || chr(1114111) AND left(c.value, ${hour.length}) = hour.value
    GROUP BY c.value HAVING sum(c.delta) <> 0
  ), minute AS (
    SELECT m.value, hour.before + m.before AS before
    FROM (SELECT value, n, sum(n) OVER (ORDER BY value ${direction} ROWS UNBOUNDED PRECEDING) - n AS before FROM minutes) AS m, hour
    WHERE hour.before + m.before + m.n > ${offset} ORDER BY m.value ${direction} LIMIT 1
  )
  SELECT ${RECORD_COLUMNS.join(', ')} FROM portico_interfaces
  WHERE project = ${at} AND uuid IN (
    SELECT uuid FROM portico_interfaces WHERE ${[...page, edge].join(' AND ')} ORDER BY ${order.join(', ')}
    LIMIT ${b.param(plan.limit + 1, '::int')} OFFSET (SELECT ${offset} - before FROM minute)
  )
  ORDER BY ${order.join(', ')}`;
}

/**
 * The statement for a planned search in one project. Its rows: `total` and `deltas` on each, and the page's
 * records (RECORD_COLUMNS, coded), at most limit + 1 of them; one row with null columns when
 * the page is empty.
 */
export function searchStatement(project: string, plan: QueryPlan): Statement {
  const b = new Builder();
  const where = [`project = ${b.param(project)}`];
  if (!plan.includeArchived) where.push('NOT archived');
  for (const filter of plan.filters) where.push(filterSql(b, filter));
  const sorts = plan.sorts.map((sort: SortKey) => ({ columns: sortColumns(b, sort.path), desc: sort.direction === 'desc' }));
  const order = [...sorts.flatMap(({ columns, desc }) => columns.order.map((column) => `${column} ${desc ? 'DESC' : 'ASC'}`)), 'uuid ASC'];
  const page = [...where];
  if (plan.after) page.push(afterSql(b, sorts, plan.after));
  const jump = createdJump(plan);
  const limit = jump ? '' : `LIMIT ${b.param(plan.limit + 1, '::int')} OFFSET ${b.param(plan.offset, '::int')}`;
  // In created_at order, the counts skip whole minutes (createdJumpRows). Else past the first page, a deferred join: the rows skipped are walked in an index alone (the
  // uuids, with what the filters and the order read), and only the page's own rows are read whole;
  // an offset half-way through a million records read a half-million rows otherwise.
  const rows = jump
    ? createdJumpRows(b, project, plan, page, order, jump)
    : plan.offset > 0
      ? `SELECT ${RECORD_COLUMNS.join(', ')} FROM portico_interfaces
  WHERE project = ${b.param(project)} AND uuid IN (
    SELECT uuid FROM portico_interfaces WHERE ${page.join(' AND ')} ORDER BY ${order.join(', ')} ${limit}
  )
  ORDER BY ${order.join(', ')}`
      : `SELECT ${RECORD_COLUMNS.join(', ')} FROM portico_interfaces
  WHERE ${page.join(' AND ')}
  ORDER BY ${order.join(', ')}
  ${limit}`;
  const text = `SELECT counted.total, counted.deltas, page.*
FROM (${totalSql(b, project, plan, where)}) AS counted
LEFT JOIN LATERAL (
  ${rows}
) AS page ON true`;
  return { text, values: b.values };
}
