/**
 * The PostgreSQL store (DESIGN §8): one index shared by every gateway that points at the same
 * database. A `PostgresIndex` owns the pool (one per gateway and database) and migrates the schema
 * once; each project gets a `PostgresStore` over it, keyed by the project's directory. There is no
 * lock: the database orders concurrent writers, so several gateways may serve one project.
 *
 * - insert is `INSERT … ON CONFLICT DO NOTHING`: the same uuid created at once through two
 *   gateways is one record, and both callers get that record.
 * - update writes only the fields in the patch, so the last write of each field wins.
 * - Every write is checked and serialized first (record-json.ts): one the index cannot take whole
 *   is refused before any statement runs.
 * - Every write is acknowledged only after PostgreSQL committed it (durable with its fsync).
 *   Creates and reads by uuid that arrive together share one statement (batch.ts).
 * - Totals come from counts that triggers keep (counts.ts); this index folds their deltas
 *   every LIMITS.storeCountCompactionMs, and at once after a search summed many of them. Other
 *   totals are counted only up to the total rule's bound (query.ts).
 * - A config path that a search sorts by or ranges over gets an expression index on its sort keys
 *   on first use (search-sql.ts, pathIndexStatement), as the embedded store builds its path
 *   indexes: made in the background, at most LIMITS.searchPathIndexes of them in the database.
 * - When the database cannot be reached, calls fail with `store_unavailable` (503); the pool opens
 *   new connections on the next call, so the gateway recovers by itself once it is back.
 */
import pg from 'pg';
import { LIMITS } from '../../config/constants.js';
import type { FindRequest, SearchResponse } from '../../contract/search.js';
import { PorticoError } from '../../errors.js';
import { noteFreshFolder, removeInterfaceDir, writeNewRecordFile, writeRecordFile } from '../files.js';
import { planQuery, reportTotal } from '../query.js';
import { checkPatch, isStorable, newRecordJson, recordJson } from '../record-json.js';
import type { InterfaceRecord, RecordPatch, Store } from '../store.js';
import { codeText, INSERT_COLUMNS, RECORD_COLUMNS, recordValues, rowRecord, type RecordRow } from './coding.js';
import { Batcher } from './batch.js';
import { COMPACT } from './counts.js';
import { migrate } from './schema.js';
import { connectionRefusal } from './refusals.js';
import { indexablePaths, pathIndexName, pathIndexStatement, searchStatement } from './search-sql.js';

/** True for a store option naming a PostgreSQL server rather than the embedded store. */
export function isPostgresUrl(store: string | undefined): store is string {
  return store !== undefined && /^postgres(?:ql)?:\/\//.test(store);
}

/** A connection string with its password masked, for messages. */
export function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//***@');
  }
}

// SQLSTATE classes and codes that mean "the server is not there (now)", not "the query is wrong":
// 08 connection exception, 57P01-57P03 shutdown / cannot connect now, 53300 too many connections.
const UNAVAILABLE_STATES = /^(08|57P0[123]|53300)/;
const UNAVAILABLE_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOENT', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/**
 * The PorticoError a driver error becomes: store_unavailable for a lost server or a refused
 * connection (no such user or database, …; refusals.ts says what to do), else the error itself.
 */
function unavailable(err: unknown, url: string): unknown {
  if (err instanceof PorticoError) return err;
  const { code, message } = err as { code?: string; message?: string };
  const lost =
    (code !== undefined && (UNAVAILABLE_STATES.test(code) || UNAVAILABLE_ERRNOS.has(code))) ||
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(message ?? '');
  const todo = connectionRefusal(err as { code?: string; message?: string }, url);
  if (!lost && !todo) return err;
  const what = lost ? 'cannot be reached' : 'refused the connection';
  return new PorticoError('store_unavailable', `The index database ${what}; retry shortly (the gateway's log says why)`, {
    internal: `The index database (${redact(url)}) ${what}: ${message ?? code}.${todo ? ` ${todo}` : ''}`,
  });
}

const SELECT = RECORD_COLUMNS.join(', ');

// The batched statements take one array per column (unnest), so their text stays the same whatever
// the batch size, and each is a named (prepared) statement: every connection parses and plans it
// once, then only binds and executes it. Planning them anew for each batch (an unnamed statement)
// took 0.25 ms of a backend's CPU per statement. Each call makes its own config object, since pg
// writes the call's values and callback into the one it is given.
const JSONB_COLUMNS = new Set(['config', 'predicate', 'version', 'meta', 'sort_text']);
const INSERT = `INSERT INTO portico_interfaces (project, ${INSERT_COLUMNS.join(', ')})
SELECT * FROM unnest($1::text[], ${INSERT_COLUMNS.map((column, i) => `$${i + 2}::${column === 'archived' ? 'boolean' : JSONB_COLUMNS.has(column) ? 'jsonb' : 'text'}[]`).join(', ')})
ON CONFLICT (project, uuid) DO NOTHING RETURNING project, uuid`;
const insertStatement = (values: unknown[]): pg.QueryConfig => ({ name: 'portico_insert', text: INSERT, values });
const GET = `SELECT project, ${SELECT} FROM portico_interfaces
WHERE (project, uuid) IN (SELECT project COLLATE "C", uuid COLLATE "C" FROM unnest($1::text[], $2::text[]) AS wanted(project, uuid))`;
const getStatement = (values: unknown[]): pg.QueryConfig => ({ name: 'portico_get', text: GET, values });

/** A record of one project, as the batched statements carry it. */
interface Keyed<T> {
  project: string;
  /** The coded uuid. */
  uuid: string;
  value: T;
}

const keyOf = (project: string, codedUuid: string) => `${project}\0${codedUuid}`;

/** The parameters of INSERT for some records: the projects, then one array per column. */
function insertValues(records: Array<Keyed<InterfaceRecord>>): unknown[] {
  const rows = records.map(({ value }) => recordValues(value));
  return [records.map(({ project }) => project), ...INSERT_COLUMNS.map((_, column) => rows.map((row) => row[column]))];
}

/** True for an error that one record of a batch may have caused (not a lost server): its records are then tried one by one. */
const perRecord = (err: unknown) => !(err instanceof PorticoError && err.code === 'store_unavailable');

/** One database's pool and schema, shared by the stores of every project this gateway serves. */
export class PostgresIndex {
  private migrated: Promise<void> | undefined;
  private compacting: Promise<void> | undefined;
  /** Path indexes this gateway has made, found or given up on (by index name), so each is asked for once. */
  private readonly pathIndexes = new Map<string, Promise<void>>();
  /** The last path index build asked for: builds run one at a time (two at once on one table deadlock). */
  private pathIndexBuilds: Promise<void> = Promise.resolve();
  private readonly compactionTimer: NodeJS.Timeout;
  /** Creates in flight, inserted together: true for the one that inserted its row, false for one whose uuid was there. */
  private readonly inserts = new Batcher<Keyed<InterfaceRecord>, boolean>(
    (records) => this.insertBatch(records),
    LIMITS.storeBatchRows,
    LIMITS.storeBatchStatements,
    perRecord,
  );
  /** Reads by uuid in flight, read together. */
  private readonly reads = new Batcher<Keyed<null>, RecordRow | undefined>(
    (keys) => this.readBatch(keys),
    LIMITS.storeBatchRows,
    LIMITS.storeBatchStatements,
    perRecord,
  );

  private constructor(
    readonly url: string,
    private readonly pool: pg.Pool,
    private readonly log: (line: string) => void,
  ) {
    // Cheap when there is nothing to fold: the pending deltas have a partial index of their own.
    this.compactionTimer = setInterval(() => this.compactSoon(), LIMITS.storeCountCompactionMs).unref();
  }

  /** A pool for the database at `url`; nothing connects until the first store opens. */
  static connect(url: string, log: (line: string) => void = () => {}): PostgresIndex {
    const pool = new pg.Pool({
      connectionString: url,
      max: LIMITS.storePoolSize,
      connectionTimeoutMillis: LIMITS.storeConnectTimeoutMs,
      idleTimeoutMillis: 30_000,
      // JIT compiles any statement the planner costs high, such as a count over a big table that a
      // LIMIT ends after a few thousand rows: 10–15 ms of compiling for a few ms of work. A URL's
      // own `options` parameter replaces this one.
      options: '-c jit=off',
    });
    // An idle connection the server dropped emits here; without a listener it would crash the process.
    pool.on('error', (err) => log(`index database connection lost: ${err.message}`));
    return new PostgresIndex(url, pool, log);
  }

  /**
   * Whether the database answers now (one `SELECT 1`, at most LIMITS.storeProbeMs): undefined
   * when it does, else the client's message of store_unavailable (no host or driver detail).
   */
  async probe(): Promise<string | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`The index database did not answer within ${LIMITS.storeProbeMs} ms`), LIMITS.storeProbeMs);
    });
    const answered = this.query('SELECT 1').then(
      () => undefined,
      (err: unknown) => (err instanceof PorticoError ? err.message : 'The index database cannot be reached'),
    );
    try {
      return await Promise.race([answered, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Runs a query; a lost server becomes store_unavailable. */
  async query<R extends pg.QueryResultRow>(statement: string | pg.QueryConfig, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    try {
      return await (typeof statement === 'string' ? this.pool.query<R>(statement, values) : this.pool.query<R>(statement));
    } catch (err) {
      throw unavailable(err, this.url);
    }
  }

  /** Runs `work` in one transaction on one connection; a lost server becomes store_unavailable. */
  async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw unavailable(err, this.url);
    }
    // A checked-out client has no listener of the pool's: a connection the server ends between
    // two statements (a restart, pg_terminate_backend) would emit an 'error' nobody handles and
    // end the gateway. The statement in progress, or the next, fails and says why.
    let broken: Error | undefined;
    const onError = (err: Error) => {
      broken = err;
      this.log(`index database connection lost during a transaction: ${err.message}`);
    };
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      if (!broken) await client.query('ROLLBACK').catch(() => undefined);
      throw unavailable(err, this.url);
    } finally {
      client.off('error', onError);
      client.release(broken); // a broken connection is closed, not handed out again
    }
  }

  /** Inserts a record unless its uuid is there: true when this call inserted it. Committed when it resolves. */
  insert(project: string, record: InterfaceRecord): Promise<boolean> {
    return this.inserts.submit({ project, uuid: codeText(record.uuid), value: record });
  }

  /** The row of a uuid, or undefined. */
  read(project: string, uuid: string): Promise<RecordRow | undefined> {
    return this.reads.submit({ project, uuid: codeText(uuid), value: null });
  }

  /** One INSERT for many records; of several with one uuid, the first inserts it. */
  private async insertBatch(records: Array<Keyed<InterfaceRecord>>, client?: pg.ClientBase): Promise<boolean[]> {
    const statement = insertStatement(insertValues(records));
    const { rows } = client
      ? await client.query<{ project: string; uuid: string }>(statement)
      : await this.query<{ project: string; uuid: string }>(statement);
    const inserted = new Set(rows.map((row) => keyOf(row.project, row.uuid)));
    return records.map(({ project, uuid }) => inserted.delete(keyOf(project, uuid)));
  }

  /** Inserts many records in the caller's transaction (portico reindex), in batches. */
  async insertAll(client: pg.ClientBase, project: string, records: InterfaceRecord[]): Promise<void> {
    for (let at = 0; at < records.length; at += LIMITS.storeBatchRows) {
      const batch = records.slice(at, at + LIMITS.storeBatchRows).map((record) => ({ project, uuid: codeText(record.uuid), value: record }));
      await this.insertBatch(batch, client);
    }
  }

  private async readBatch(keys: Array<Keyed<null>>): Promise<Array<RecordRow | undefined>> {
    const { rows } = await this.query<RecordRow & { project: string }>(getStatement([keys.map(({ project }) => project), keys.map(({ uuid }) => uuid)]));
    const found = new Map(rows.map((row) => [keyOf(row.project, row.uuid as string), row]));
    return keys.map(({ project, uuid }) => found.get(keyOf(project, uuid)));
  }

  /** Migrates the schema (once per gateway; again after a failed attempt). */
  ready(): Promise<void> {
    this.migrated ??= this.transaction(migrate).catch((err) => {
      this.migrated = undefined;
      throw err;
    });
    return this.migrated;
  }

  /**
   * Folds the count deltas into one row per group (counts.ts, COMPACT); resolves when done. A
   * call while one runs joins it.
   */
  compact(): Promise<void> {
    this.compacting ??= (async () => {
      try {
        await this.transaction(async (client) => {
          const { rows } = await client.query<{ locked: boolean }>(COMPACT[0]);
          if (rows[0]!.locked) await client.query(COMPACT[1]);
        });
      } finally {
        this.compacting = undefined;
      }
    })();
    return this.compacting;
  }

  /** Starts a compaction in the background; a failure is logged (the deltas stay, and totals stay exact). */
  compactSoon(): void {
    this.compact().catch((err: Error) => this.log(`compacting the index counts failed: ${err.message}`));
  }

  /**
   * Makes the expression index for a config path's sort keys unless it exists, in the background;
   * searches are answered meanwhile, without it. A build that failed (or another gateway's,
   * interrupted) leaves an invalid index, which is dropped and built again. Beyond
   * LIMITS.searchPathIndexes path indexes in the database none is made: the searches still work,
   * and a log line says how to add one by hand.
   */
  wantPathIndex(path: string[]): void {
    const name = pathIndexName(path);
    if (this.pathIndexes.has(name)) return;
    const build = async () => {
      const { rows } = await this.query<{ name: string; valid: boolean }>(
        `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname LIKE 'portico\\_path\\_%'`,
      );
      const found = rows.find((row) => row.name === name);
      if (found?.valid) return;
      if (found) await this.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
      else if (rows.filter((row) => row.valid).length >= LIMITS.searchPathIndexes) {
        this.log(
          `not indexing config path ${path.join('.')}: the database holds ${LIMITS.searchPathIndexes} path indexes, the most a gateway makes; searches sorted by it read every match. To add it by hand: ${pathIndexStatement(path)}`,
        );
        return;
      }
      await this.query(pathIndexStatement(path));
    };
    const made = this.pathIndexBuilds
      .then(build)
      .catch((err: Error) => this.log(`indexing config path ${path.join('.')} failed (searches sorted by it read every match): ${err.message}`));
    this.pathIndexBuilds = made;
    this.pathIndexes.set(name, made);
  }

  /** Settles when every path index asked for so far is made or given up on (tests, close). */
  async pathIndexesSettled(): Promise<void> {
    await Promise.all(this.pathIndexes.values());
  }

  /** The store of one project. */
  async open(project: string): Promise<PostgresStore> {
    await this.ready();
    return new PostgresStore(this, project);
  }

  async close(): Promise<void> {
    clearInterval(this.compactionTimer);
    await this.pathIndexesSettled();
    await this.compacting?.catch(() => undefined);
    await this.pool.end();
  }
}

export class PostgresStore implements Store {
  constructor(
    readonly index: PostgresIndex,
    readonly project: string,
  ) {}

  async get(uuid: string): Promise<InterfaceRecord | undefined> {
    const row = await this.index.read(this.project, uuid);
    return row && rowRecord(row);
  }

  /** A row is there to read only once its insert committed. */
  existing(uuid: string): Promise<InterfaceRecord | undefined> {
    return this.get(uuid);
  }

  async insert(record: InterfaceRecord): Promise<{ record: InterfaceRecord; created: boolean }> {
    // Refused before a row exists: a uuid that cannot name a directory, a record over its bounds.
    const text = newRecordJson(record);
    if (await this.index.insert(this.project, record)) {
      // Beside the interface's data, for `portico reindex` and for travel, as the embedded store does.
      if (await writeNewRecordFile(this.project, record.uuid, text)) noteFreshFolder(record);
      return { record, created: true };
    }
    // ON CONFLICT waited for the winner's commit, so its row is there to read.
    const existing = await this.get(record.uuid);
    if (!existing) throw new PorticoError('conflict', `Interface '${record.uuid}' was deleted while being created; retry`);
    return { record: existing, created: false };
  }

  async update(uuid: string, patch: RecordPatch): Promise<InterfaceRecord | undefined> {
    checkPatch(patch, uuid);
    const sets: string[] = [];
    const values: unknown[] = [this.project, codeText(uuid)];
    if (patch.label !== undefined) sets.push(`label = $${values.push(patch.label === null ? null : codeText(patch.label))}`);
    if (patch.archived !== undefined) sets.push(`archived = $${values.push(patch.archived)}`);
    const text = sets.length
      ? `UPDATE portico_interfaces SET ${sets.join(', ')} WHERE project = $1 AND uuid = $2 RETURNING ${SELECT}`
      : `SELECT ${SELECT} FROM portico_interfaces WHERE project = $1 AND uuid = $2`;
    const { rows } = await this.index.query<RecordRow>(text, values);
    if (!rows[0]) return undefined;
    const record = rowRecord(rows[0]);
    await writeRecordFile(this.project, uuid, recordJson(record));
    return record;
  }

  async delete(uuid: string): Promise<boolean> {
    const { rowCount } = await this.index.query('DELETE FROM portico_interfaces WHERE project = $1 AND uuid = $2', [this.project, codeText(uuid)]);
    if (!rowCount) return false;
    await removeInterfaceDir(this.project, uuid);
    return true;
  }

  async search(request: FindRequest): Promise<SearchResponse> {
    const plan = planQuery(request);
    for (const path of indexablePaths(plan)) this.index.wantPathIndex(path);
    const { text, values } = searchStatement(this.project, plan);
    const { rows } = await this.index.query<RecordRow & { total: string; deltas: string }>(text, values);
    if (Number(rows[0]!.deltas) > LIMITS.storeCountDeltasBeforeCompaction) this.index.compactSoon();
    const items = rows.filter((row) => row.uuid !== null).map(rowRecord);
    const more = items.length > plan.limit;
    if (more) items.pop();
    return { items, ...reportTotal(plan.total, Number(rows[0]!.total)), next_cursor: more ? plan.cursorAfter(items.at(-1)!) : null };
  }

  /**
   * Replaces the project's records with `records` in one transaction (portico reindex), keeping
   * every field as given; a record the store cannot write back is left out. Returns how many it wrote.
   */
  async replaceAll(records: InterfaceRecord[]): Promise<number> {
    const storable = records.filter(isStorable);
    await this.index.transaction(async (client) => {
      await client.query('DELETE FROM portico_interfaces WHERE project = $1', [this.project]);
      await this.index.insertAll(client, this.project, storable);
    });
    return storable.length;
  }

  /** Nothing to release per project: the pool belongs to the PostgresIndex. */
  async close(): Promise<void> {}
}
