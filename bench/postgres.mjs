// Issues 18 and 30: the PostgreSQL index at 1M records. Each search of issue 30's set is timed
// through the gateway (REST, with its total as the total rule reports it) and printed beside the
// same query run by the embedded engine (query.ts) over a plain Map of the same 1M records in this
// process, and beside GET /v1/health through the same gateway. Creates go through REST with 16 in flight (beside a
// bare HTTP server's rate, and with the CPU each process spent per create, this bench's client
// included, and the rate all cores would allow at that CPU per create), and the
// gateway's RSS is compared before and after the index grew to 1M rows.
// Runs against a throwaway cluster (scripts/provision-postgres.mjs), or PORTICO_BENCH_POSTGRES.
import { readFile, realpath } from 'node:fs/promises';
import { cpus } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { cpuMs, createRate, jsonClient, ROOT, rssMb, startGateway, summarize, us } from './lib.mjs';
import { startHttpFloor } from './floors.mjs';
import { seedPostgres } from './postgres-seed.mjs';
import { startCluster } from '../scripts/provision-postgres.mjs';

const { search } = await import(path.join(ROOT, 'packages/server/dist/store/query.js'));
const { planQuery } = await import(path.join(ROOT, 'packages/server/dist/store/query.js'));
const { PostgresIndex } = await import(path.join(ROOT, 'packages/server/dist/store/postgres/postgres-store.js'));

const RECORDS = 1_000_000;

/** The records seedPostgres writes, as plain objects (the Map the embedded engine scans). */
function seededMap(count) {
  const map = new Map();
  for (let i = 0; i < count; i++) {
    const config = {
      lr: (i % 1000) / 1000,
      depth: i % 12,
      optimizer: ['sgd', 'adam', 'rmsprop'][i % 3],
      opt: { beta: ((i * 7919) % 101) / 100, warm: i % 5 === 0 },
      tags: [`t${i % 7}`],
    };
    const uuid = `u${String(i).padStart(7, '0')}`;
    map.set(uuid, {
      uuid, module: `model${i % 10}`, kind: 'Interface', class_name: `Model${i % 3}`, config, predicate: {}, version: [config], label: i % 10 ? null : `run-${i}`, meta: {},
      created_by: ['ada', 'grace', 'alan', 'barbara'][i % 4], created_at: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(), archived: i % 50 === 0,
    });
  }
  return map;
}

/** The pids of a process's children (the gateway's Python worker). */
async function childPids(pid) {
  const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  return children.split(' ').filter(Boolean).map(Number);
}

async function timed(fn, runs) {
  for (let i = 0; i < 3; i++) await fn(); // warm up
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    samples.push(us(process.hrtime.bigint() - t0) / 1000);
  }
  return summarize(samples);
}

export async function postgresBench(project) {
  console.log('\nPostgreSQL index (issues 18, 30): 1M rows, searches through the gateway beside a Map scan and GET /v1/health');
  const named = process.env.PORTICO_BENCH_POSTGRES;
  const cluster = named ? null : await startCluster({ durable: true });
  const url = named ?? cluster.url;
  const key = await realpath(project);
  const rows = [];
  const gw = await startGateway(project, ['--store', url, '--log-level', 'warn']);
  // Without keep-alive: the phases between requests (seeding, the Map scans) outlast the server's keep-alive timeout.
  const client = jsonClient(gw.url, { keepAlive: false, sockets: 16 });
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query('DELETE FROM portico_interfaces WHERE project = $1', [key]);
    await client.post('/v1/interfaces/search', { limit: 10 });
    const emptyRss = await rssMb(gw.pid);

    const t0 = process.hrtime.bigint();
    await seedPostgres(admin, key, RECORDS);
    await admin.query('VACUUM ANALYZE portico_interfaces, portico_counts');
    const seedSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
    rows.push({ name: `seed ${RECORDS / 1e6}M rows in bulk (INSERT … SELECT generate_series)`, value: seedSeconds, unit: ' s' });

    // Cursors half-way, as the gateway would have issued them (the Map's uuids differ from the
    // seeded md5 ones; its cursor names the same position).
    const index = PostgresIndex.connect(url);
    const deep = (await (await index.open(key)).search({ offset: RECORDS / 2, limit: 1 })).items[0];
    await index.close();
    const deepCursor = planQuery({ limit: 10 }).cursorAfter(deep);
    const map = seededMap(RECORDS);
    const mapDeep = [...map.values()].filter((r) => !r.archived).sort((a, b) => (a.created_at > b.created_at ? -1 : 1))[RECORDS / 2];
    const mapCursor = planQuery({ limit: 10 }).cursorAfter(mapDeep);

    // Issue 30's set; `limit` ≤ 20 ms at 1M for all but contains and the offset page (which read what they skip).
    const rangeSort = { config: { filters: [{ path: 'lr', op: 'gte', value: 0.9 }] }, sort: [{ by: 'config.opt.beta', direction: 'asc' }], limit: 10 };
    const queries = [
      ['newest first', { limit: 10 }],
      ['module', { module: 'model3', limit: 10 }],
      ['module + created_by', { module: 'model3', created_by: 'grace', limit: 10 }],
      ['config equality, 0.1% match', { config: { filters: [{ path: 'lr', value: 0.123 }] }, limit: 10 }],
      ['config equality, 33% match', { config: { filters: [{ path: 'optimizer', value: 'adam' }] }, limit: 10 }],
      ['range on config.lr sorted by config.opt.beta', rangeSort],
      ['contains', { config: { filters: [{ path: 'optimizer', op: 'contains', value: 'ms' }] }, limit: 10 }, undefined, 'scans'],
      ['archived only', { filters: [{ path: 'archived', value: true }], include_archived: true, limit: 10 }],
      ['offset page half-way', { limit: 10, offset: RECORDS / 2 }, undefined, 'scans'],
      ['cursor page half-way', { limit: 10, cursor: deepCursor }, { limit: 10, cursor: mapCursor }],
    ];
    // The Map scans first, then its memory is freed before the gateway is timed.
    const mapScans = [];
    for (const [, request, mapRequest = request] of queries) mapScans.push(await timed(async () => search(map.values(), mapRequest), 3));
    map.clear();
    // A sort or range on a config path makes its path index on first use (in the background): wait for both.
    await client.post('/v1/interfaces/search', rangeSort);
    const t1 = process.hrtime.bigint();
    while ((await admin.query("SELECT count(*)::int AS n FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname LIKE 'portico\\_path\\_%' AND i.indisvalid")).rows[0].n < 2) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    rows.push({ name: 'path indexes for config.lr and config.opt.beta made on first use', value: Number(process.hrtime.bigint() - t1) / 1e9, unit: ' s' });
    const health = await timed(() => client.get('/v1/health'), 50);
    rows.push({ name: 'GET /v1/health p50 (the floor of a request through the gateway)', value: health.p50, unit: ' ms' });
    for (const [i, [name, request, , scans]] of queries.entries()) {
      const answer = await client.post('/v1/interfaces/search', request);
      const viaGateway = await timed(() => client.post('/v1/interfaces/search', request), 20);
      const total = `${answer.total}${answer.total_exact ? '' : '+'} match`;
      rows.push({
        name: `search p50, ${name} (${total})`,
        value: viaGateway.p50,
        unit: ' ms',
        ...(scans ? {} : { target: 20 }),
        baseline: { name: 'Map scan', value: mapScans[i].p50 },
      });
      rows.push({ name: '  the same beside GET /v1/health', value: viaGateway.p50 / health.p50, unit: 'x' });
    }

    // Durable creates through REST: new configs, 16 in flight over keep-alive connections (as a
    // client that creates in a loop holds them), beside the floor: a bare node:http server in its
    // own process answering the same POSTs from the same kind of client. CPU per create shows
    // where the time goes on a shared machine, where the rate depends on the CPU share.
    const creates = 4000;
    const createLoop = (post, first) => createRate(post, { creates, inFlight: 16, first });
    const floor = await startHttpFloor();
    const floorClient = jsonClient(floor.url, { keepAlive: true, sockets: 16 });
    const floorRate = await createLoop(floorClient.post, 0);
    floorClient.close();
    await floor.stop();
    const creator = jsonClient(gw.url, { keepAlive: true, sockets: 16 });
    try {
      await createLoop(creator.post, 9_000_000); // warm up: the worker's imports, the JIT, the pool
      // The gateway's connections; one opened during the loop counts whole (it started at 0).
      const backendPids = async () =>
        (await admin.query('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()')).rows.map((row) => row.pid);
      const processes = { gateway: [gw.pid], worker: await childPids(gw.pid), backends: await backendPids() };
      const before = Object.fromEntries(await Promise.all(Object.entries(processes).map(async ([name, pids]) => [name, await cpuMs(pids)])));
      const client0 = process.cpuUsage();
      const rate = await createLoop(creator.post, 10_000_000);
      const client = process.cpuUsage(client0);
      processes.backends = [...new Set([...processes.backends, ...(await backendPids())])];
      const perCreate = { client: (client.user + client.system) / 1000 / creates };
      for (const [name, pids] of Object.entries(processes)) perCreate[name] = ((await cpuMs(pids)) - before[name]) / creates;
      // The CPU the four spend per create bounds the rate: n cores busy all the time give n × 1000 / spent creates per second.
      const spent = Object.values(perCreate).reduce((sum, ms) => sum + ms, 0);
      rows.push(
        { name: 'durable creates/s via REST, 16 in flight, 1M rows', value: rate, unit: '/s', target: 2000, higherIsBetter: true, floor: floorRate },
        { name: '  CPU per create: gateway', value: perCreate.gateway, unit: ' ms' },
        { name: '  CPU per create: Python worker', value: perCreate.worker, unit: ' ms' },
        { name: '  CPU per create: PostgreSQL backends', value: perCreate.backends, unit: ' ms' },
        { name: '  CPU per create: this bench process (the HTTP client)', value: perCreate.client, unit: ' ms' },
        { name: `  creates/s with all ${cpus().length} cores busy at that CPU per create`, value: (cpus().length * 1000) / spent, unit: '/s' },
      );
    } finally {
      creator.close();
    }
    rows.push(
      { name: 'gateway RSS, empty index', value: emptyRss, unit: ' MB' },
      { name: 'gateway RSS, 1M-row index (after the searches and creates)', value: await rssMb(gw.pid), unit: ' MB' },
    );
  } finally {
    client.close();
    await admin.end();
    await gw.stop();
    await cluster?.close();
  }
  return rows;
}
