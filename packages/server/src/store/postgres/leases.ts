/**
 * Instance leases in PostgreSQL (store/leases.ts): one row per live instance of a project,
 * naming the gateway that owns it, its address and when the lease ends. Every time is the
 * database's (`now()`), so gateways with skewed clocks agree on who holds a lease.
 */
import type { LeaseHolder, LeaseStore } from '../leases.js';
import { leaseKey } from '../leases.js';
import type pg from 'pg';

/** What leases need of the index (postgres-store.ts, PostgresIndex): its migrated schema and its pool. */
export interface LeaseDatabase {
  ready(): Promise<void>;
  query<R extends pg.QueryResultRow>(statement: string | pg.QueryConfig, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/**
 * When a lease may be taken by another gateway: a grace ($6 ms) after it ran out, counted from the
 * database's start when that is later. After an outage every lease has run out by the clock, and
 * its holder, still serving its instance, renews within one renewal period: the grace lets it.
 */
const CLAIMABLE = `greatest(expires_at, pg_postmaster_start_time()) + $6 * interval '1 millisecond'`;

/**
 * Takes the lease when it is free, claimable or the claimant's own, and answers the holder: the
 * claimant's row when the upsert wrote it (with the holder it replaced, as the statement's
 * snapshot saw it), else the row as this statement's snapshot saw it (empty when a racing claim
 * committed after the snapshot: `claim` then reads again). Remaining: how long until another
 * gateway may take it.
 */
const CLAIM = `WITH prior AS (
  SELECT owner, address FROM portico_instance_owners WHERE project = $1 AND uuid = $2
), claimed AS (
  INSERT INTO portico_instance_owners AS held (project, uuid, owner, address, expires_at)
  VALUES ($1, $2, $3, $4, now() + $5 * interval '1 millisecond')
  ON CONFLICT (project, uuid) DO UPDATE SET owner = EXCLUDED.owner, address = EXCLUDED.address, expires_at = EXCLUDED.expires_at
    WHERE greatest(held.expires_at, pg_postmaster_start_time()) + $6 * interval '1 millisecond' <= now() OR held.owner = EXCLUDED.owner
  RETURNING owner, address, expires_at
)
SELECT claimed.owner, claimed.address, extract(epoch FROM ${CLAIMABLE} - now()) * 1000 AS remaining, prior.owner AS prior_owner, prior.address AS prior_address
  FROM claimed LEFT JOIN prior ON true
UNION ALL
SELECT owner, address, extract(epoch FROM ${CLAIMABLE} - now()) * 1000, NULL, NULL FROM portico_instance_owners
  WHERE project = $1 AND uuid = $2 AND NOT EXISTS (SELECT 1 FROM claimed)`;

const HOLDER = `SELECT owner, address, extract(epoch FROM ${CLAIMABLE.replaceAll('$6', '$3')} - now()) * 1000 AS remaining FROM portico_instance_owners WHERE project = $1 AND uuid = $2`;

type Row = { owner: string; address: string; remaining: string | number; prior_owner?: string | null; prior_address?: string | null };

function holder(row: Row): LeaseHolder {
  const found: LeaseHolder = { owner: row.owner, address: row.address, remainingMs: Math.max(0, Number(row.remaining)) };
  if (row.prior_owner && row.prior_owner !== row.owner) found.previous = { owner: row.prior_owner, address: row.prior_address! };
  return found;
}

/** The migration that adds the table (schema.ts). */
export const LEASES_MIGRATION = `CREATE TABLE portico_instance_owners (
     project    text COLLATE "C" NOT NULL,
     uuid       text COLLATE "C" NOT NULL,
     owner      text COLLATE "C" NOT NULL,
     address    text NOT NULL,
     expires_at timestamptz NOT NULL,
     PRIMARY KEY (project, uuid)
   );
   CREATE INDEX portico_instance_owners_owner ON portico_instance_owners (owner);`;

export class PostgresLeases implements LeaseStore {
  constructor(private readonly index: LeaseDatabase) {}

  async claim(project: string, uuid: string, owner: string, address: string, leaseMs: number, graceMs: number): Promise<LeaseHolder> {
    await this.index.ready();
    for (;;) {
      const { rows } = await this.index.query<Row>({ name: 'portico_lease_claim', text: CLAIM, values: [project, uuid, owner, address, leaseMs, graceMs] });
      // A row of another that has run out is this statement's snapshot of a lease a racing claim
      // took over after it (the upsert saw the taker's row and left it): read it in a new one.
      if (rows[0] && (rows[0].owner === owner || Number(rows[0].remaining) > 0)) return holder(rows[0]);
      // A claim that committed after this statement's snapshot holds it: read it in a new one.
      const again = await this.index.query<Row>({ name: 'portico_lease_holder', text: HOLDER, values: [project, uuid, graceMs] });
      if (again.rows[0] && Number(again.rows[0].remaining) > 0) return holder(again.rows[0]);
      // Released or run out in between: claim again.
    }
  }

  async handBack(project: string, uuid: string, from: string, to: { owner: string; address: string }, leaseMs: number): Promise<boolean> {
    await this.index.ready();
    const { rowCount } = await this.index.query({
      name: 'portico_lease_hand_back',
      text: `UPDATE portico_instance_owners SET owner = $4, address = $5, expires_at = now() + $6 * interval '1 millisecond' WHERE project = $1 AND uuid = $2 AND owner = $3`,
      values: [project, uuid, from, to.owner, to.address, leaseMs],
    });
    return rowCount === 1;
  }

  async renew(owner: string, leaseMs: number): Promise<Set<string>> {
    await this.index.ready();
    const { rows } = await this.index.query<{ project: string; uuid: string }>({
      name: 'portico_lease_renew',
      text: `UPDATE portico_instance_owners SET expires_at = now() + $2 * interval '1 millisecond' WHERE owner = $1 RETURNING project, uuid`,
      values: [owner, leaseMs],
    });
    return new Set(rows.map((row) => leaseKey(row.project, row.uuid)));
  }

  async release(owner: string, keys?: readonly string[]): Promise<void> {
    await this.index.ready();
    if (!keys) {
      await this.index.query('DELETE FROM portico_instance_owners WHERE owner = $1', [owner]);
      return;
    }
    if (keys.length === 0) return;
    const split = keys.map((key) => key.split('\0') as [string, string]);
    await this.index.query(
      `DELETE FROM portico_instance_owners WHERE owner = $1 AND (project, uuid) IN (SELECT * FROM unnest($2::text[], $3::text[]))`,
      [owner, split.map(([project]) => project), split.map(([, uuid]) => uuid)],
    );
  }
}
