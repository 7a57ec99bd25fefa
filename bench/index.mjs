// Issues 3, 18 and 30: the embedded store at 10k and 100k records. At 100k, each search of issue
// 30's set through REST, beside GET /v1/health through the same gateway (sampled in turn with it,
// so both see the same machine load) and beside the same query on a plain Map scan in this process;
// the gateway's RSS after the whole set; then search with filter + sort + page, durable creates per
// second and RSS at both sizes.
import { open, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { createRate, jsonClient, ROOT, rssMb, startGateway, summarize, us } from './lib.mjs';

const { LowdbStore } = await import(path.join(ROOT, 'packages/server/dist/store/lowdb-store.js'));
const { search } = await import(path.join(ROOT, 'packages/server/dist/store/query.js'));
const { interfaceUuid } = await import(path.join(ROOT, 'packages/server/dist/store/identity.js'));

const OPTIMIZERS = ['sgd', 'adam', 'rmsprop'];
const USERS = ['ada', 'grace', 'alan', 'barbara'];

/** The records bench/postgres-seed.mjs writes (ten modules, three classes, four creators, every 50th archived). */
function syntheticRecord(i) {
  const config = { lr: (i % 1000) / 1000, depth: i % 12, optimizer: OPTIMIZERS[i % 3], opt: { beta: ((i * 7919) % 101) / 100, warm: i % 5 === 0 }, tags: [`t${i % 7}`] };
  const module = `model${i % 10}`;
  return {
    uuid: interfaceUuid(module, config, {}),
    module, kind: 'Interface', class_name: `Model${i % 3}`, config, predicate: {}, version: [config], label: i % 10 ? null : `run-${i}`,
    meta: {}, created_by: USERS[i % 4], created_at: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(), archived: i % 50 === 0,
  };
}

/** Seeds `count` records straight into the project's store (what many gateway creates leave behind). */
async function seed(project, count) {
  const store = await LowdbStore.open(project);
  const batch = 2000;
  for (let i = 0; i < count; i += batch) {
    await Promise.all(Array.from({ length: Math.min(batch, count - i) }, (_, k) => store.insert(syntheticRecord(i + k))));
  }
  await store.close();
}

/** Floor for a durable create: one small append + fdatasync on the same disk. */
async function fsyncFloor(dir, count = 300) {
  const file = path.join(dir, 'fsync-floor.bin');
  const handle = await open(file, 'a');
  const samples = [];
  for (let i = 0; i < count; i++) {
    const t0 = process.hrtime.bigint();
    await handle.write('x'.repeat(400) + '\n');
    await handle.datasync();
    samples.push(us(process.hrtime.bigint() - t0));
  }
  await handle.close();
  await rm(file);
  return summarize(samples);
}

/** Median ms of `run` after a warm-up (the first run of a config path builds its structures). */
async function medianMs(run, samples) {
  for (let i = 0; i < 3; i++) await run();
  const ms = [];
  for (let i = 0; i < samples; i++) {
    const t0 = process.hrtime.bigint();
    await run();
    ms.push(us(process.hrtime.bigint() - t0) / 1000);
  }
  return summarize(ms).p50;
}

/**
 * Issue 30's set at `size` records, with the REST ratio each must stay within beside GET
 * /v1/health: 10x where a structure answers, 50x for a range with a sort; none for contains and
 * an offset page, which read what they test or skip. `cursor` continues half-way, newest first.
 */
function searchSet(size, cursor) {
  const range = { path: 'lr', op: 'gte', value: 0.9 };
  return [
    { name: 'newest first', request: { limit: 10 }, target: 10 },
    { name: 'module', request: { module: 'model3', limit: 10 }, target: 10 },
    { name: 'module + created_by', request: { module: 'model3', created_by: 'grace', limit: 10 }, target: 10 },
    { name: 'config equality, 0.1% match', request: { config: { filters: [{ path: 'lr', value: 0.123 }] }, limit: 10 }, target: 10 },
    { name: 'config equality, 33% match', request: { config: { filters: [{ path: 'optimizer', value: 'adam' }] }, limit: 10 }, target: 10 },
    { name: 'range on config.lr sorted by config.opt.beta', request: { config: { filters: [range] }, sort: [{ by: 'config.opt.beta', direction: 'asc' }], limit: 10 }, target: 50 },
    { name: 'range on config.lr sorted by itself', request: { config: { filters: [range] }, sort: [{ by: 'config.lr', direction: 'desc' }], limit: 10 }, target: 50 },
    { name: 'contains (reads until the bound)', request: { config: { filters: [{ path: 'optimizer', op: 'contains', value: 'ms' }] }, limit: 10 } },
    { name: 'archived only', request: { filters: [{ path: 'archived', value: true }], include_archived: true, limit: 10 }, target: 10 },
    { name: 'offset page half-way', request: { limit: 10, offset: size / 2 } },
    { name: 'cursor page half-way', request: { limit: 10, cursor }, target: 10 },
  ];
}

/**
 * The set's Map scans, in this process over the store's own records: each answer is checked
 * against the store's indexed one first (the same answer, or the figures mean nothing).
 */
async function mapScans(project, size) {
  const store = await LowdbStore.open(project);
  try {
    const map = new Map();
    for (let cursor = null; ; ) {
      const page = await store.search({ include_archived: true, limit: 1000, cursor });
      for (const record of page.items) map.set(record.uuid, record);
      if (!(cursor = page.next_cursor)) break;
    }
    const { next_cursor: cursor } = await store.search({ limit: 10, offset: size / 2 - 10 });
    const set = searchSet(size, cursor);
    for (const { name, request } of set) {
      const indexed = await store.search(request);
      const scanned = search(map.values(), request);
      if (indexed.total !== scanned.total || indexed.total_exact !== scanned.total_exact || indexed.next_cursor !== scanned.next_cursor || indexed.items.some((item, i) => item !== scanned.items[i])) {
        throw new Error(`indexed search and Map scan disagree on ${name}`);
      }
    }
    const scans = [];
    for (const { request } of set) scans.push(await medianMs(() => search(map.values(), request), 5));
    return { cursor, scans };
  } finally {
    await store.close();
  }
}

/** p50 of each, sampled in turn so that both see the same moments of a shared machine's load. */
async function pairedP50(a, b, samples) {
  for (let i = 0; i < 3; i++) {
    await a();
    await b();
  }
  const [ta, tb] = [[], []];
  for (let i = 0; i < samples; i++) {
    for (const [run, into] of [[a, ta], [b, tb]]) {
      const t0 = process.hrtime.bigint();
      await run();
      into.push(us(process.hrtime.bigint() - t0) / 1000);
    }
  }
  return [summarize(ta).p50, summarize(tb).p50];
}

const loadAverage = async () => Number((await readFile('/proc/loadavg', 'utf8')).split(' ')[0]);

/** Issue 30's set through the gateway: one row per search, then the gateway's RSS after them all. */
async function searchSetRows(gw, c, size, { cursor, scans }) {
  const rows = [];
  const label = `${size / 1000}k records`;
  const health = () => c.get('/v1/health');
  const load = [await loadAverage()];
  for (const [i, { name, request, target }] of searchSet(size, cursor).entries()) {
    const answer = await c.post('/v1/interfaces/search', request);
    const [searchP50, healthP50] = await pairedP50(() => c.post('/v1/interfaces/search', request), health, 40);
    rows.push({
      name: `REST search p50, ${name}, ${label} (${answer.total}${answer.total_exact ? '' : '+'} match)`,
      value: searchP50,
      unit: ' ms',
      // The floor: GET /v1/health p50, sampled in turn with this search.
      floor: healthP50,
      target,
      baseline: { name: 'Map scan', value: scans[i] },
    });
  }
  load.push(await loadAverage());
  rows.push(
    { name: `load average (1 min) before and after the set: ${load[0]} -> ${load[1]} on this machine`, value: Math.max(...load), unit: '' },
    { name: `gateway RSS after every search of the set, ${label}`, value: await rssMb(gw.pid), unit: ' MB', target: 300 },
  );
  return rows;
}

export async function indexBench(project, sizes = [10_000, 100_000]) {
  const rows = [];
  const floor = await fsyncFloor(project);
  rows.push({ name: 'append + fdatasync p50 (disk floor)', value: floor.p50, unit: ' µs' });
  for (const size of sizes) {
    await seed(project, size); // idempotent for the records already there: adds the rest
    const last = size === sizes.at(-1);
    const scanned = last ? await mapScans(project, size) : undefined;
    const gw = await startGateway(project, ['--log-level', 'warn']);
    const c = jsonClient(gw.url, { sockets: 64 });
    try {
      const label = `${size / 1000}k records`;
      if (last) {
        rows.push({ name: `gateway RSS after start, ${label}`, value: await rssMb(gw.pid), unit: ' MB' });
        rows.push(...(await searchSetRows(gw, c, size, scanned)));
      }
      const query = {
        config: { filters: [{ path: 'lr', op: 'gt', value: 0.5 }, { path: 'optimizer', op: 'in', value: ['adam', 'sgd'] }] },
        sort: [{ by: 'config.opt.beta', direction: 'asc' }, { by: 'created_at', direction: 'desc' }],
        limit: 50,
      };
      const first = await c.post('/v1/interfaces/search', query);
      for (let i = 0; i < 5; i++) await c.post('/v1/interfaces/search', query);
      const samples = [];
      for (let i = 0; i < 40; i++) {
        const t0 = process.hrtime.bigint();
        await c.post('/v1/interfaces/search', { ...query, offset: (i % 4) * 50 });
        samples.push(us(process.hrtime.bigint() - t0) / 1000);
      }
      const s = summarize(samples);
      rows.push(
        { name: `search p50, filter+sort (two keys)+page, ${label} (${first.total}${first.total_exact ? '' : '+'} match)`, value: s.p50, unit: ' ms', target: 25 },
        { name: `search p99, ${label}`, value: s.p99, unit: ' ms' },
      );
      // Durable creates through REST: new configs, 64 at a time.
      const perSecond = await createRate(c.post, { creates: 4000, inFlight: 64, first: size * 10 });
      rows.push(
        { name: `durable creates/s via REST, ${label}`, value: perSecond, unit: '/s', target: 1000, higherIsBetter: true },
        { name: `gateway RSS at the end, ${label}`, value: await rssMb(gw.pid), unit: ' MB', target: 300 },
      );
    } finally {
      c.close();
      await gw.stop();
    }
  }
  return rows;
}
