/**
 * The PostgreSQL schema, versioned. Each migration moves the schema one version up and runs in
 * the transaction that records the new version; `migrate` runs at start under an advisory lock, so
 * gateways starting together migrate once. A gateway refuses a schema newer than it knows.
 *
 * One table holds every project's records, keyed by (project, uuid). Every string in it is coded
 * (coding.ts) and every text column uses the "C" collation, so text order is UTF-16 code-unit
 * order, as the search semantics require. The indexes serve the common searches: newest first
 * (optionally by module, kind, class_name, created_by or label, or among archived records) walk one b-tree in
 * order; config-field equality uses the GIN index on config. The b-trees carry `archived`, so that
 * counting the matches for `total` reads the index alone. The totals of the common searches come
 * from portico_counts, kept by triggers (counts.ts). The indexes on module, kind, class_name,
 * created_by and label (and on count values) hold a bounded prefix of the value, so that values of any length fit
 * in a b-tree row (coding.ts, INDEXED_PREFIX).
 */
import type pg from 'pg';
import { PorticoError } from '../../errors.js';
import { codeText, indexedPrefix } from './coding.js';
import { COUNTS_CLASS_NAME_MIGRATION, COUNTS_CREATED_MIGRATION, COUNTS_MIGRATION, COUNTS_PREFIX_MIGRATION } from './counts.js';
import { LEASES_MIGRATION } from './leases.js';
import { INTERFACE_KIND } from '../store.js';

/** The b-trees that serve text columns' searches newest first, on their bounded prefix (coding.ts, INDEXED_PREFIX, PREFIX_INDEXED). */
const prefixIndexes = (columns: readonly string[]) =>
  columns.map((column) => `CREATE INDEX portico_${column} ON portico_interfaces (project, ${indexedPrefix(column)}, created_at DESC, uuid) INCLUDE (archived);`).join('\n   ');

/** A string as a SQL literal (a coded string holds no quote, but this says so rather than assumes it). */
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** Migration n (1-based) takes the schema from version n - 1 to n. */
export const MIGRATIONS: readonly string[] = [
  `CREATE TABLE portico_interfaces (
     project    text COLLATE "C" NOT NULL,
     uuid       text COLLATE "C" NOT NULL,
     module     text COLLATE "C" NOT NULL,
     kind       text COLLATE "C" NOT NULL,
     label      text COLLATE "C",
     created_by text COLLATE "C" NOT NULL,
     created_at text COLLATE "C" NOT NULL,
     archived   boolean NOT NULL,
     config     jsonb NOT NULL,
     predicate  jsonb NOT NULL,
     version    jsonb NOT NULL,
     meta       jsonb NOT NULL,
     sort_text  jsonb NOT NULL,
     PRIMARY KEY (project, uuid)
   );
   CREATE INDEX portico_newest ON portico_interfaces (project, created_at DESC, uuid) INCLUDE (archived);
   CREATE INDEX portico_newest_archived ON portico_interfaces (project, created_at DESC, uuid) WHERE archived;
   CREATE INDEX portico_module ON portico_interfaces (project, module, created_at DESC, uuid) INCLUDE (archived);
   CREATE INDEX portico_kind ON portico_interfaces (project, kind, created_at DESC, uuid) INCLUDE (archived);
   CREATE INDEX portico_created_by ON portico_interfaces (project, created_by, created_at DESC, uuid) INCLUDE (archived);
   CREATE INDEX portico_label ON portico_interfaces (project, label, created_at DESC, uuid) INCLUDE (archived);
   CREATE INDEX portico_config ON portico_interfaces USING gin (config jsonb_path_ops);`,
  // Exact totals without counting: see counts.ts.
  COUNTS_MIGRATION,
  // Long values: the indexes on module, kind, created_by, label and count values hold a bounded prefix.
  `DROP INDEX portico_module, portico_kind, portico_created_by, portico_label;
   ${prefixIndexes(['module', 'kind', 'created_by', 'label'])}
   ${COUNTS_PREFIX_MIGRATION}`,
  // Who owns each live instance when several gateways serve a project: see leases.ts.
  LEASES_MIGRATION,
  // kind means what the reference means ('Interface' for every interface record); the interface
  // class name, which kind held until now, moves to its own column, indexed and counted as kind was.
  // One transaction: an interrupted migration leaves version 4 whole, and the next start runs it again.
  `ALTER TABLE portico_interfaces ADD COLUMN class_name text COLLATE "C";
   UPDATE portico_interfaces SET class_name = kind, kind = ${literal(codeText(INTERFACE_KIND))};
   ALTER TABLE portico_interfaces ALTER COLUMN class_name SET NOT NULL;
   ${prefixIndexes(['class_name'])}
   ${COUNTS_CLASS_NAME_MIGRATION}`,
  // Offset pages newest or oldest first skip whole minutes by their counts: see counts.ts.
  COUNTS_CREATED_MIGRATION,
];

/** The schema version this gateway writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

// Any constant: it names the lock that serializes migrations across gateways.
const MIGRATION_LOCK = 0x706f7274;

/** Brings the database's schema to SCHEMA_VERSION (inside the caller's transaction); refuses one newer than that. */
export async function migrate(client: pg.ClientBase): Promise<void> {
  {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query('CREATE TABLE IF NOT EXISTS portico_schema (version integer NOT NULL)');
    const { rows } = await client.query<{ version: number }>('SELECT version FROM portico_schema');
    const current = rows[0]?.version ?? 0;
    if (current > SCHEMA_VERSION) {
      throw new PorticoError(
        'store_unavailable',
        `The index database has schema version ${current}, newer than this gateway knows (${SCHEMA_VERSION}): upgrade this gateway to serve it.`,
      );
    }
    for (let version = current + 1; version <= SCHEMA_VERSION; version++) await client.query(MIGRATIONS[version - 1]!);
    if (!rows.length) await client.query('INSERT INTO portico_schema (version) VALUES ($1)', [SCHEMA_VERSION]);
    else if (current < SCHEMA_VERSION) await client.query('UPDATE portico_schema SET version = $1', [SCHEMA_VERSION]);
  }
}
