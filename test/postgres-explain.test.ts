/**
 * The common searches are answered by indexes: EXPLAIN of the statement each one compiles to
 * (over a seeded project of 20 000 records beside another project) finds its page through an
 * index, never a sequential scan, and the total of each search the trigger-kept counts answer
 * (store/postgres/counts.ts) reads only its group's count rows, never the records.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FindRequest } from '../packages/server/src/contract/search.js';
import { PostgresIndex } from '../packages/server/src/store/postgres/postgres-store.js';
import { pathIndexName, searchStatement } from '../packages/server/src/store/postgres/search-sql.js';
import { planQuery } from '../packages/server/src/store/query.js';
import { seedPostgres } from '../bench/postgres-seed.mjs';
import { startPostgres, type TestPostgres } from './support/postgres.js';

const PROJECT = '/srv/explained';
let postgres: TestPostgres;
let client: pg.Client;

beforeAll(async () => {
  postgres = await startPostgres({ durable: false });
  const index = PostgresIndex.connect(postgres.url);
  await index.ready();
  await index.close();
  client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  await seedPostgres(client, '/srv/other', 5000);
  await seedPostgres(client, PROJECT, 20_000);
  await client.query('VACUUM ANALYZE portico_interfaces, portico_counts');
});

afterAll(async () => {
  await client?.end();
  await postgres?.close();
});

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** Every node of a plan, and those under one node. */
function nodesOf(root: PlanNode): PlanNode[] {
  const nodes: PlanNode[] = [];
  const visit = (node: PlanNode) => {
    nodes.push(node);
    node.Plans?.forEach(visit);
  };
  visit(root);
  return nodes;
}

/** The plan of the statement a request compiles to: the page's nodes (under its Limit) and the total's (the rest). */
async function planOf(request: FindRequest): Promise<{ page: PlanNode[]; total: PlanNode[] }> {
  const { text, values } = searchStatement(PROJECT, planQuery(request));
  const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${text}`, values);
  const nodes = nodesOf(rows[0]['QUERY PLAN'][0].Plan);
  // The page's Limit comes last: a total counted up to the rule's bound has a Limit of its own, first.
  const limit = nodes.filter((node) => node['Node Type'] === 'Limit').at(-1);
  expect(limit).toBeDefined();
  const page = nodesOf(limit!);
  return { page, total: nodes.filter((node) => !page.includes(node)) };
}

const pageNodes = async (request: FindRequest) => (await planOf(request)).page;

async function cursorOf(request: FindRequest, pages: number): Promise<string> {
  const index = PostgresIndex.connect(postgres.url);
  try {
    const store = await index.open(PROJECT);
    let cursor: string | null = null;
    for (let page = 0; page < pages; page++) cursor = (await store.search({ ...request, cursor })).next_cursor;
    return cursor!;
  } finally {
    await index.close();
  }
}

const COMMON: Array<[string, FindRequest, string[]]> = [
  ['newest first', { limit: 10 }, ['portico_newest']],
  ['module', { module: 'model3', limit: 10 }, ['portico_module']],
  ['kind', { kind: 'Execution', limit: 10 }, ['portico_kind']],
  ['class_name', { class_name: 'Model1', limit: 10 }, ['portico_class_name']],
  ['created_by', { created_by: 'grace', limit: 10 }, ['portico_created_by']],
  ['label', { label: 'run-120', limit: 10 }, ['portico_label']],
  ['archived', { filters: [{ path: 'archived', value: true }], include_archived: true, limit: 10 }, ['portico_newest_archived']],
  ['config-field equality, newest first', { config: { filters: [{ path: 'lr', value: 0.25 }] }, limit: 10 }, ['portico_config']],
  ['config-field equality, nested', { config: { filters: [{ path: 'opt.beta', value: 0.5 }, { path: 'optimizer', value: 'adam' }] }, limit: 10 }, ['portico_config']],
];

describe('EXPLAIN of the common searches', () => {
  it.each(COMMON)('%s: index scans, no sequential scan', async (_name, request, indexes) => {
    const nodes = await pageNodes(request);
    expect(nodes.filter((node) => node['Node Type'] === 'Seq Scan')).toEqual([]);
    const used = new Set(nodes.map((node) => node['Index Name']).filter(Boolean));
    for (const index of indexes) expect(used).toContain(index);
  });

  it.each(COMMON.slice(0, 6))('%s: the total sums its group in portico_counts and reads no record', async (_name, request) => {
    const { total } = await planOf(request);
    expect(total.filter((node) => node['Relation Name'] === 'portico_interfaces')).toEqual([]);
    expect(total.map((node) => node['Index Name'])).toContain('portico_counts_group');
  });

  it('a config path sorted by gets its path index on first use; the page then walks it, and a range on it counts from it', async () => {
    const request: FindRequest = { config: { filters: [{ path: 'lr', op: 'gte', value: 0.9 }] }, sort: [{ by: 'config.opt.beta', direction: 'asc' }], limit: 10 };
    const beta = pathIndexName(['config', 'opt', 'beta']);
    const lr = pathIndexName(['config', 'lr']);
    expect(new Set((await pageNodes(request)).map((node) => node['Index Name']))).not.toContain(beta);
    const index = PostgresIndex.connect(postgres.url);
    try {
      const store = await index.open(PROJECT);
      const first = await store.search(request);
      await index.pathIndexesSettled();
      await client.query('ANALYZE portico_interfaces');
      const { rows } = await client.query<{ name: string; valid: boolean }>(
        `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname LIKE 'portico_path_%' ORDER BY 1`,
      );
      expect(rows).toEqual([{ name: beta, valid: true }, { name: lr, valid: true }].sort((a, b) => (a.name < b.name ? -1 : 1)));
      // The same answer with the index as without it.
      expect(await store.search(request)).toEqual(first);
      const descending = { ...request, sort: [{ by: 'config.opt.beta', direction: 'desc' }] };
      expect((await store.search(descending)).items.map((item) => item.config.opt)).toEqual(
        (await store.search({ ...descending, exact_total: true, limit: 1000 })).items.slice(0, 10).map((item) => item.config.opt),
      );
    } finally {
      await index.close();
    }
    for (const direction of ['asc', 'desc'] as const) {
      const nodes = await pageNodes({ ...request, sort: [{ by: 'config.opt.beta', direction }] });
      expect(nodes.filter((node) => node['Node Type'] === 'Seq Scan')).toEqual([]);
      expect(nodes.map((node) => node['Index Name'])).toContain(beta);
    }
    const { total } = await planOf({ config: { filters: [{ path: 'lr', op: 'gte', value: 0.99 }] }, limit: 10 });
    expect(total.filter((node) => node['Node Type'] === 'Seq Scan')).toEqual([]);
    expect(total.map((node) => node['Index Name'])).toContain(lr);
  });

  it('an offset page deep in the results skips by the counts and in the index alone, and reads only its own rows (a deferred join)', async () => {
    for (const request of [{ offset: 2000, limit: 10 }, { offset: 2000, limit: 10, include_archived: true }] satisfies FindRequest[]) {
      const skipped = await pageNodes(request);
      expect(skipped.map((node) => node['Node Type']), JSON.stringify(request)).toContain('Index Only Scan');
      expect(skipped.filter((node) => node['Node Type'] === 'Seq Scan')).toEqual([]);
    }
    // Newest or oldest first with no filter, the counts skip whole hours and minutes: the records'
    // indexes are walked only within the minute that holds the page (the seed is a record a second).
    for (const request of [
      { offset: 10_000, limit: 10 },
      { offset: 10_000, limit: 10, include_archived: true },
      { offset: 19_000, limit: 10, sort: [{ by: 'created_at', direction: 'asc' }] },
    ] satisfies FindRequest[]) {
      const { text, values } = searchStatement(PROJECT, planQuery(request));
      const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values);
      const nodes = nodesOf(rows[0]['QUERY PLAN'][0].Plan) as Array<PlanNode & { 'Actual Rows': number; 'Actual Loops': number; 'Rows Removed by Filter'?: number }>;
      expect(nodes.filter((node) => node['Node Type'] === 'Seq Scan'), JSON.stringify(request)).toEqual([]);
      const read = (relation: string) =>
        nodes
          .filter((node) => node['Relation Name'] === relation)
          .reduce((sum, node) => sum + (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops'], 0);
      expect(read('portico_interfaces'), JSON.stringify(request)).toBeLessThanOrEqual(60 + 11 + 11);
      // The count rows of each archived value of every hour, of one hour's minutes and of the total
      // (the seed leaves one row per group): as many as the project's hours, not as its records.
      expect(read('portico_counts'), JSON.stringify(request)).toBeLessThanOrEqual(2 * (6 + 60 + 1));
    }
    // The page is the one a cursor reaches after the same 10,000 records (no offset: the plain statement).
    const cursor = await cursorOf({ limit: 1000 }, 10);
    const index = PostgresIndex.connect(postgres.url);
    try {
      const store = await index.open(PROJECT);
      const byOffset = (await store.search({ offset: 10_000, limit: 3 })).items.map((i) => i.uuid);
      const byCursor = (await store.search({ cursor, limit: 3 })).items.map((i) => i.uuid);
      expect(byOffset).toHaveLength(3);
      expect(byOffset).toEqual(byCursor);
    } finally {
      await index.close();
    }
  });

  it('a cursor page deep in the results starts its index scan at the cursor', async () => {
    const request = { limit: 100 };
    const cursor = await cursorOf(request, 50);
    const nodes = await pageNodes({ ...request, cursor });
    expect(nodes.filter((node) => node['Node Type'] === 'Seq Scan')).toEqual([]);
    expect(nodes.map((node) => node['Index Name'])).toContain('portico_newest');
  });
});
