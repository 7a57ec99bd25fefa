// Issues 3 and 18: search latency, durable creates per second and gateway memory at 10k and 100k
// records; the embedded store's indexed search beside the same queries on a plain Map scan.
import { open, rm } from 'node:fs/promises';
import path from 'node:path';
import { createRate, jsonClient, ROOT, rssMb, startGateway, summarize, us } from './lib.mjs';

const { LowdbStore } = await import(path.join(ROOT, 'packages/server/dist/store/lowdb-store.js'));
const { search } = await import(path.join(ROOT, 'packages/server/dist/store/query.js'));
const { interfaceUuid } = await import(path.join(ROOT, 'packages/server/dist/store/identity.js'));

const OPTIMIZERS = ['sgd', 'adam', 'rmsprop'];
const USERS = ['ada', 'grace', 'alan', 'barbara'];

function syntheticRecord(i) {
  const config = { lr: (i % 1000) / 1000, depth: i % 12, optimizer: OPTIMIZERS[i % 3], opt: { beta: (i * 7919) % 101 / 100, warm: i % 5 === 0 }, tags: [`t${i % 7}`] };
  return {
    uuid: interfaceUuid('model', config, {}),
    module: 'model', kind: 'Model', config, predicate: {}, version: [config], label: i % 10 ? null : `run-${i}`,
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

/** Median ms of `run` after a warm-up (the first run of a config path builds its value map). */
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
 * Issue 18: the embedded store's search in process, each query beside the same query answered by
 * the engine's linear pass over a plain Map of the same record objects.
 */
async function indexedSearchBench(project, label) {
  const store = await LowdbStore.open(project);
  try {
    const map = new Map();
    for (let cursor = null; ; ) {
      const page = await store.search({ include_archived: true, limit: 1000, cursor });
      for (const record of page.items) map.set(record.uuid, record);
      if (!(cursor = page.next_cursor)) break;
    }
    const deep = await store.search({ limit: 1000, offset: Math.floor(map.size / 2) - 1000 });
    const queries = [
      { name: 'newest first, limit 10', request: { limit: 10 }, target: 2 },
      { name: 'module filter, limit 10', request: { module: 'model', limit: 10 }, target: 2 },
      { name: 'created_by filter, limit 10', request: { created_by: 'grace', limit: 10 }, target: 2 },
      { name: 'config eq + sort by config, limit 10', request: { config: { filters: [{ path: 'optimizer', value: 'adam' }] }, sort: [{ by: 'config.lr', direction: 'desc' }], limit: 10 }, target: 10 },
      { name: `cursor page at ${Math.floor(map.size / 2000)}k, newest first, limit 10`, request: { limit: 10, cursor: deep.next_cursor }, target: 2 },
    ];
    const rows = [];
    for (const { name, request, target } of queries) {
      const indexed = await store.search(request);
      const scanned = search(map.values(), request);
      // Same answer or the figures mean nothing.
      if (indexed.total !== scanned.total || indexed.next_cursor !== scanned.next_cursor || indexed.items.some((item, i) => item !== scanned.items[i])) {
        throw new Error(`indexed search and Map scan disagree on ${name}`);
      }
      rows.push({
        name: `embedded search p50, ${name}, ${label} (${indexed.total} match)`,
        value: await medianMs(() => store.search(request), 200),
        unit: ' ms',
        target,
        baseline: { name: 'Map scan', value: await medianMs(() => search(map.values(), request), 15) },
      });
    }
    return rows;
  } finally {
    await store.close();
  }
}

export async function indexBench(project, sizes = [10_000, 100_000]) {
  const rows = [];
  const floor = await fsyncFloor(project);
  rows.push({ name: 'append + fdatasync p50 (disk floor)', value: floor.p50, unit: ' µs' });
  let seeded = 0;
  for (const size of sizes) {
    await seed(project, size); // idempotent for the first `seeded` records: adds the rest
    seeded = size;
    if (size === sizes.at(-1)) rows.push(...(await indexedSearchBench(project, `${size / 1000}k records`)));
    const gw = await startGateway(project, ['--log-level', 'warn']);
    const c = jsonClient(gw.url, { sockets: 64 });
    try {
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
      const label = `${size / 1000}k records`;
      rows.push(
        { name: `search p50, filter+sort+page, ${label} (${first.total} match)`, value: s.p50, unit: ' ms', target: 25 },
        { name: `search p99, ${label}`, value: s.p99, unit: ' ms' },
      );
      // Durable creates through REST: new configs, 64 at a time.
      const perSecond = await createRate(c.post, { creates: 4000, inFlight: 64, first: size * 10 });
      rows.push(
        { name: `durable creates/s via REST, ${label}`, value: perSecond, unit: '/s', target: 1000, higherIsBetter: true },
        { name: `gateway RSS, ${label}`, value: await rssMb(gw.pid), unit: ' MB', target: 300, lowerIsBetter: true },
      );
    } finally {
      c.close();
      await gw.stop();
    }
  }
  return rows;
}
