/**
 * Exact totals without counting a million rows. A search's `total` counts every match; for the
 * common searches (all records, or one module, kind, created_by or label, with or without the
 * archived ones) that is most of a project, and COUNT over it took 30–300 ms at 1M rows.
 *
 * portico_counts holds, per (project, dimension, value, archived), signed deltas written by
 * statement triggers on portico_interfaces in the same transaction as the rows they count, so
 * every snapshot sees counts that agree exactly with the rows it sees. Each statement appends new
 * delta rows instead of updating one counter row, so concurrent creates never wait on each other.
 * A total is the sum of its group's rows. Compaction folds a group's deltas into one row (in one
 * transaction, so readers see either the deltas or their sum); it runs periodically and when a
 * search summed many deltas (postgres-store.ts).
 *
 * Dimensions: 'all' (value ''), 'module', 'kind', 'class_name' (from schema version 5),
 * 'created_by', 'label' (the coded value), and 'unlabelled' (value '') for records whose label is null. Values are never NULL, so groups join
 * and index on plain equality.
 *
 * From schema version 6, 'created_hour' and 'created_minute': the first 13 and 16 code units of
 * created_at (`2026-12-06T12` and `2026-12-06T12:34` of the gateway's timestamps; any other
 * text just as well, since a prefix keeps the text order). An offset page newest (or oldest)
 * first finds from them which minute holds its first row and how many rows come before that
 * minute, and walks the index only within it (search-sql.ts): half-way through a million
 * records it walked half a million index entries otherwise.
 */
import { COUNTED_FIELDS, type QueryPlan } from '../query.js';
import { codeText, indexedPrefix } from './coding.js';

/** The counted text columns of schema versions 2 to 4; version 5 adds class_name. */
const FIELDS_V2 = ['module', 'kind', 'created_by'] as const;
const FIELDS_V5 = [...FIELDS_V2, 'class_name'] as const;

/** How many code units of created_at the 'created_hour' and 'created_minute' groups hold (schema version 6). */
export const CREATED_BUCKETS = [
  { dimension: 'created_hour', length: 13 },
  { dimension: 'created_minute', length: 16 },
] as const;

/** The (dimension, value) pairs one row of portico_interfaces counts in, when `fields` (and label, and with `buckets` created_at's) are counted. */
const groups = (fields: readonly string[], buckets = false) => `LATERAL (VALUES ('all', ''), ${fields.map((f) => `('${f}', ${f})`).join(', ')},
  (CASE WHEN label IS NULL THEN 'unlabelled' ELSE 'label' END, coalesce(label, ''))${
    buckets ? CREATED_BUCKETS.map(({ dimension, length }) => `,
  ('${dimension}', left(created_at, ${length}))`).join('') : ''
  }) AS counted(dimension, value)`;

/** Appends the deltas of the rows in `changed` (with a signed `delta` column each), one row per group that changed. */
const appendDeltas = (fields: readonly string[], buckets: boolean, changed: string) => `INSERT INTO portico_counts (project, dimension, value, archived, delta)
      SELECT project, dimension, value, archived, sum(delta) FROM (${changed}) AS changed, ${groups(fields, buckets)}
      GROUP BY project, dimension, value, archived HAVING sum(delta) <> 0;`;

/** The trigger function that appends the deltas of a statement's rows, counting `fields` (and with `buckets` created_at's). */
const countChanges = (fields: readonly string[], replace = false, buckets = false) => {
  const columns = `project, ${fields.join(', ')}, label, archived${buckets ? ', created_at' : ''}`;
  return `CREATE ${replace ? 'OR REPLACE ' : ''}FUNCTION portico_count_changes() RETURNS trigger LANGUAGE plpgsql AS $count$
   BEGIN
     IF TG_OP = 'INSERT' THEN
       ${appendDeltas(fields, buckets, `SELECT ${columns}, 1 AS delta FROM new_rows`)}
     ELSIF TG_OP = 'DELETE' THEN
       ${appendDeltas(fields, buckets, `SELECT ${columns}, -1 AS delta FROM old_rows`)}
     ELSE
       ${appendDeltas(fields, buckets, `SELECT ${columns}, 1 AS delta FROM new_rows UNION ALL SELECT ${columns}, -1 FROM old_rows`)}
     END IF;
     RETURN NULL;
   END
   $count$;`;
};

/**
 * Schema version 2: the counts table, the triggers that keep it, and the counts of the rows that
 * exist (the triggers are created first, in the migration's transaction, whose lock on
 * portico_interfaces holds writers off until the backfill is committed).
 * Transition tables require one trigger per event; INSERT … ON CONFLICT DO NOTHING puts only the
 * rows it inserted in new_rows.
 */
export const COUNTS_MIGRATION = `CREATE TABLE portico_counts (
     project    text COLLATE "C" NOT NULL,
     dimension  text COLLATE "C" NOT NULL,
     value      text COLLATE "C" NOT NULL,
     archived   boolean NOT NULL,
     delta      bigint NOT NULL,
     compacted  boolean NOT NULL DEFAULT false
   );
   CREATE INDEX portico_counts_group ON portico_counts (project, dimension, value, archived) INCLUDE (delta);
   CREATE INDEX portico_counts_pending ON portico_counts (project) WHERE NOT compacted;
   ${countChanges(FIELDS_V2)}
   CREATE TRIGGER portico_count_inserts AFTER INSERT ON portico_interfaces
     REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION portico_count_changes();
   CREATE TRIGGER portico_count_updates AFTER UPDATE ON portico_interfaces
     REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION portico_count_changes();
   CREATE TRIGGER portico_count_deletes AFTER DELETE ON portico_interfaces
     REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION portico_count_changes();
   INSERT INTO portico_counts (project, dimension, value, archived, delta, compacted)
     SELECT project, dimension, value, archived, count(*), true FROM portico_interfaces, ${groups(FIELDS_V2)}
     GROUP BY project, dimension, value, archived;`;

/**
 * Schema version 3: the group index keys a bounded prefix of the value (coding.ts, INDEXED_PREFIX),
 * so that a count row of a long label fits in it; a total then reads its group's rows and checks the
 * whole value on each (so the index no longer carries delta: the row is read anyway). The rows
 * themselves are unchanged.
 */
export const COUNTS_PREFIX_MIGRATION = `DROP INDEX portico_counts_group;
   CREATE INDEX portico_counts_group ON portico_counts (project, dimension, ${indexedPrefix('value')}, archived);`;

// Any constant: it names the lock that lets one gateway at a time compact.
const COMPACTION_LOCK = 0x636f756e;

/**
 * Folds every group that has new deltas into one row (none when its sum is 0), in the caller's
 * transaction. Only one gateway compacts at a time (a busy lock means another one is at it, and
 * this call does nothing); deltas committed while it runs are outside its snapshot and stay.
 */
export const COMPACT = [
  `SELECT pg_try_advisory_xact_lock(${COMPACTION_LOCK}) AS locked`,
  `WITH pending AS (SELECT DISTINCT project, dimension, value, archived FROM portico_counts WHERE NOT compacted),
   moved AS (
     DELETE FROM portico_counts AS c USING pending AS p
     WHERE c.project = p.project AND c.dimension = p.dimension AND ${indexedPrefix('c.value')} = ${indexedPrefix('p.value')}
       AND c.value = p.value AND c.archived = p.archived
     RETURNING c.project, c.dimension, c.value, c.archived, c.delta
   )
   INSERT INTO portico_counts (project, dimension, value, archived, delta, compacted)
   SELECT project, dimension, value, archived, sum(delta), true FROM moved
   GROUP BY project, dimension, value, archived HAVING sum(delta) <> 0`,
] as const;

/**
 * Schema version 5, the counts' part (schema.ts runs it after class_name is filled in): the
 * trigger function counts class_name too, and the class_name groups of the rows that exist are
 * backfilled. The kind groups need nothing: the statement that moved the class names out of kind
 * ran under the previous function, whose deltas moved each row's count from its old kind to
 * 'Interface'. Last, those deltas are folded (COMPACT's fold, in the migration's transaction), so that
 * the migration leaves one row per group, as the backfills do.
 */
export const COUNTS_CLASS_NAME_MIGRATION = `${countChanges(FIELDS_V5, true)}
   INSERT INTO portico_counts (project, dimension, value, archived, delta, compacted)
     SELECT project, 'class_name', class_name, archived, count(*), true FROM portico_interfaces
     GROUP BY project, class_name, archived;
   ${COMPACT[1]};`;

/**
 * Schema version 6: the trigger function counts created_at's hour and minute prefixes too
 * (CREATED_BUCKETS), and those groups of the rows that exist are backfilled, one row each.
 */
export const COUNTS_CREATED_MIGRATION = `${countChanges(FIELDS_V5, true, true)}
   INSERT INTO portico_counts (project, dimension, value, archived, delta, compacted)
     SELECT project, dimension, value, archived, count(*), true
     FROM portico_interfaces, LATERAL (VALUES ${CREATED_BUCKETS.map(({ dimension, length }) => `('${dimension}', left(created_at, ${length}))`).join(', ')}) AS counted(dimension, value)
     GROUP BY project, dimension, value, archived;`;

/** The group whose sum is a search's total, with the archived values it covers (none: no record can match). */
export interface CountedGroup {
  dimension: string;
  /** Coded, as stored. */
  value: string;
  archived: boolean[];
}

/**
 * The group that holds a search's total, or null when the counts cannot answer it (any filter
 * other than one `eq` on module, kind, class_name, created_by or label, plus `eq` on archived): such totals
 * are counted (search-sql.ts). It answers at least what query.ts `countedFilters` promises exact.
 */
export function countedGroup(plan: Pick<QueryPlan, 'filters' | 'includeArchived'>): CountedGroup | null {
  let group: CountedGroup = { dimension: 'all', value: '', archived: plan.includeArchived ? [false, true] : [false] };
  for (const { path, op, value } of plan.filters) {
    if (path.length !== 1 || op !== 'eq') return null;
    const [field] = path as [string];
    if (field === 'archived' && typeof value === 'boolean') {
      group = { ...group, archived: group.archived.filter((archived) => archived === value) };
    } else if (!COUNTED_FIELDS.has(field) || group.dimension !== 'all') {
      return null;
    } else if (typeof value === 'string') {
      group = { ...group, dimension: field, value: codeText(value) };
    } else if (field === 'label' && value === null) {
      group = { ...group, dimension: 'unlabelled' };
    } else {
      return null;
    }
  }
  return group;
}
