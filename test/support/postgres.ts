/**
 * A real PostgreSQL for a test suite: a throwaway cluster (initdb in a temporary folder, a unix
 * socket there, no TCP) started in beforeAll and removed in afterAll, or the server named by
 * PORTICO_TEST_POSTGRES. Either way each suite gets a fresh database of its own. Nothing here
 * skips: a suite whose PostgreSQL cannot start fails with the reason.
 */
import pg from 'pg';
import { expect } from 'vitest';
import type { FindRequest, SearchResponse } from '../../packages/server/src/contract/search.js';
import { search } from '../../packages/server/src/store/query.js';
import type { InterfaceRecord, Store } from '../../packages/server/src/store/store.js';
import { startCluster } from '../../scripts/provision-postgres.mjs';

export interface TestPostgres {
  /** A connection string for the suite's own database. */
  url: string;
  /** Stops the server (fast shutdown) when this suite owns it; refuses otherwise. */
  stop(): Promise<void>;
  /** Starts the stopped server again on the same socket. */
  start(): Promise<void>;
  /** Drops the database and, for a throwaway cluster, stops it and removes its folder. */
  close(): Promise<void>;
}

async function createDatabase(adminUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `portico_test_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const again = new pg.Client({ connectionString: adminUrl });
      await again.connect();
      try {
        await again.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await again.end();
      }
    },
  };
}

/**
 * Starts (or borrows) a PostgreSQL and makes a fresh database on it. `durable: false` turns off
 * fsync in a throwaway cluster (scripts/provision-postgres.mjs, startCluster), for suites that
 * test semantics and never crash the server.
 */
export async function startPostgres({ durable = true } = {}): Promise<TestPostgres> {
  const named = process.env.PORTICO_TEST_POSTGRES;
  if (named) {
    const db = await createDatabase(named);
    const refuse = async () => {
      throw new Error('this test stops and starts its PostgreSQL; it needs a throwaway cluster (unset PORTICO_TEST_POSTGRES)');
    };
    return { url: db.url, stop: refuse, start: refuse, close: db.drop };
  }
  const cluster = await startCluster({ durable });
  try {
    const db = await createDatabase(cluster.url);
    return { url: db.url, stop: cluster.stop, start: cluster.start, close: cluster.close };
  } catch (err) {
    await cluster.close();
    throw err;
  }
}

/** Every record of a store, archived too, walked by cursor in uuid order (the walk never reads `total`). */
export async function allRecords(store: Store): Promise<InterfaceRecord[]> {
  const all: InterfaceRecord[] = [];
  let cursor: string | null = null;
  do {
    const page: SearchResponse = await store.search({ include_archived: true, sort: [{ by: 'uuid', direction: 'asc' }], limit: 1000, cursor });
    all.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return all;
}

/**
 * Asserts that the total of every search the trigger-kept counts answer (all records, each module,
 * kind, class_name, created_by and label present, unlabelled, archived or not) equals the number of records
 * the store holds that match, counted here by the embedded engine over all of them.
 */
export async function expectExactTotals(store: Store): Promise<void> {
  const records = await allRecords(store);
  const values = (field: 'module' | 'kind' | 'class_name' | 'created_by' | 'label') => [...new Set(records.map((r) => r[field]))];
  const requests: FindRequest[] = [{}, { include_archived: true }, { filters: [{ path: 'archived', value: true }], include_archived: true }];
  for (const field of ['module', 'kind', 'class_name', 'created_by', 'label'] as const) {
    for (const value of values(field)) {
      const filter = { path: field, value };
      requests.push({ filters: [filter] }, { filters: [filter], include_archived: true }, { filters: [filter, { path: 'archived', value: true }], include_archived: true });
    }
  }
  for (const request of requests) {
    const { total } = await store.search({ ...request, limit: 1 });
    expect({ request, total }).toEqual({ request, total: search(records, request).total });
  }
}

/**
 * Text PostgreSQL cannot compress much (it compresses a long index row, so 'aaa…' fits in a b-tree
 * where a real label of the same length does not): `length` characters drawn from
 * `[first, first + span)` by the high bits of a fixed linear congruential sequence.
 */
export function incompressibleText(length: number, first: number, span: number, seed: number): string {
  let state = seed;
  return Array.from({ length }, () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return String.fromCodePoint(first + Math.floor((state / 2 ** 31) * span));
  }).join('');
}
