// Issue 30, item 4: durable creates through REST (new configs of the demo counter, 16 in flight)
// on each store, beside the raw insert floor of that store (embedded: append + fdatasync with
// group commit on the same disk; PostgreSQL: a bare INSERT of the same row, 16 in flight, from a
// pg client), and the CPU each process spends per create (gateway, Python worker, PostgreSQL
// backends, this bench as the HTTP client) beside the gateway's CPU per REST call (a trivial method
// of a live instance, 16 in flight) on the same gateway in the same run. Target: a create costs
// the gateway at most 2x a REST call. Also the record file's floor: the kernel's part of making an
// interface's folder and its record file on this disk, which every create pays.
// Issue 45: each store's creates/s beside the create floor (createFloor): in Node, exactly the work a
// create cannot avoid (one worker round trip, the durable write, the record folder and file), with
// 16 in flight; target 60% of it.
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { open, readFile, rm } from 'node:fs/promises';
import { loadavg } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { cpuMs, createRate, demoProject, jsonClient, medianOf, ROOT, startGateway } from './lib.mjs';
import { startCluster } from '../scripts/provision-postgres.mjs';
import { startPipeEcho } from './floor/pipe-echo.mjs';

const { recordValues, INSERT_COLUMNS } = await import(path.join(ROOT, 'packages/server/dist/store/postgres/coding.js'));
const { interfaceUuid } = await import(path.join(ROOT, 'packages/server/dist/store/identity.js'));

const IN_FLIGHT = 16;
const CREATES = 3000;
const CALLS = 3000;
/** About the size of a demo counter record's journal entry. */
const ENTRY_BYTES = 300;

const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');

/** The pids of a process's children (the gateway's Python worker). */
async function childPids(pid) {
  const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  return children.split(' ').filter(Boolean).map(Number);
}

/** `count` runs of `work` by `inFlight` loops; resolves with the rate per second. */
async function loops(count, inFlight, work) {
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) await work(next++);
    }),
  );
  return count / (Number(process.hrtime.bigint() - t0) / 1e9);
}

/** CPU ticks (1/100 s) of each thread of a process, by thread id (Linux /proc). */
async function threadTicks(pid) {
  const ticks = new Map();
  const { readdir } = await import('node:fs/promises');
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [])) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => null);
    if (!stat) continue;
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    ticks.set(Number(tid), Number(fields[11]) + Number(fields[12]));
  }
  return ticks;
}

/**
 * The gateway's CPU ms per op over `work`, split by thread: its event loop (the main thread), the
 * thread that writes record files (`recordThreads`), and the others (V8's garbage collector and
 * compiler, libuv's file-system pool).
 */
async function gatewayThreads(pid, recordThreads, ops, work) {
  const before = await threadTicks(pid);
  const result = await work();
  const after = await threadTicks(pid);
  const split = { loop: 0, records: 0, others: 0 };
  for (const [tid, ticks] of after) {
    const ms = (ticks - (before.get(tid) ?? 0)) * 10;
    split[tid === pid ? 'loop' : recordThreads.has(tid) ? 'records' : 'others'] += ms / ops;
  }
  return { result, split };
}

/** CPU ms per op of each named group of processes, and of this process, over `work`. */
async function perOp(processes, ops, work) {
  const before = {};
  for (const [name, pids] of Object.entries(processes)) before[name] = await cpuMs(await pids());
  const self0 = process.cpuUsage();
  const rate = await work();
  const self = process.cpuUsage(self0);
  const out = { rate, client: (self.user + self.system) / 1000 / ops };
  for (const [name, pids] of Object.entries(processes)) out[name] = ((await cpuMs(await pids())) - before[name]) / ops;
  return out;
}

/**
 * Floor for a durable create on the embedded store: `IN_FLIGHT` writers each appending a line of
 * a journal entry's size and waiting until it is durable, lines that arrive during a flush written
 * and fdatasync'd together in the next (as the store's journal does), on the disk the project is on.
 */
async function appendFloor(dir, count) {
  const handle = await open(path.join(dir, 'floor-journal.jsonl'), 'a');
  try {
    return await loops(count, IN_FLIGHT, groupCommit(handle));
  } finally {
    await handle.close();
    await rm(path.join(dir, 'floor-journal.jsonl'), { force: true });
  }
}

/**
 * A journal line of an entry's size appended to `handle`, resolving once durable: lines that
 * arrive during a flush are written and fdatasync'd together in the next, as the store's journal does.
 */
function groupCommit(handle) {
  const line = `${'x'.repeat(ENTRY_BYTES - 1)}\n`;
  let waiting = [];
  let flushing;
  const flush = async () => {
    while (waiting.length) {
      const batch = waiting;
      waiting = [];
      await handle.write(line.repeat(batch.length));
      await handle.datasync();
      for (const done of batch) done();
    }
    flushing = undefined;
  };
  return () =>
    new Promise((done) => {
      waiting.push(done);
      flushing ??= flush();
    });
}

/**
 * The kernel's part of a record file on this disk: a new folder beside the project's interface
 * folders and a new file of a record's size in it, made with blocking calls (no thread hand-off),
 * CPU ms each. On a file system that avoids reusing recently freed inodes (ext4 without a journal)
 * this grows with what was deleted lately nearby, other programs' files too. Left in place for the
 * caller to remove with the project.
 */
async function recordFileFloor(project, count = 1000) {
  const root = path.join(project, '.portico', 'interfaces');
  const { mkdirSync, writeFileSync } = await import('node:fs');
  const text = `${'x'.repeat(ENTRY_BYTES - 1)}\n`;
  const t0 = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    mkdirSync(path.join(root, `floor-${i}`));
    writeFileSync(path.join(root, `floor-${i}`, 'interface.json'), text, { flag: 'wx' });
  }
  const used = process.cpuUsage(t0);
  return (used.user + used.system) / 1000 / count;
}

/** About the size of the worker's answer to a create's resolve (a demo counter's module, kind, config and version). */
const RESOLVE_ANSWER_BYTES = 140;

/**
 * One worker round trip per create, as the gateway makes for a config it has not resolved yet: a
 * frame of a resolve answer's size through a raw Python pipe echo with the bridge's framing
 * (bench/floor/pipe_echo.py), any number in flight (answers come back in order). `roundTrip(i)`
 * resolves when the echo is back; `stop()` ends the echo; `pid` is the Python process.
 */
function pipeRoundTrips() {
  const echo = startPipeEcho();
  const roundTrip = (i) => echo.roundTrip({ id: i, ok: true, payload: { module: 'counter', kind: 'Counter', config: { start: i, step: 1 }, version: [{ start: i }] } }, RESOLVE_ANSWER_BYTES);
  return { roundTrip, pid: echo.pid, stop: echo.stop };
}

/** The create floor's record folders made so far in this process (each round makes new ones). */
let floorFolders = 0;

/**
 * Issue 45: the floor of a durable create, in Node: exactly the work a create cannot avoid, with
 * `IN_FLIGHT` in flight. Each create makes one worker round trip (pipeRoundTrips), then its
 * durable write: on the embedded store (`insert` absent) a journal line of a record's size
 * appended and fdatasync'd with group commit (as the store's journal does: lines that arrive
 * during a flush go together in the next), on PostgreSQL `insert(i)` (the bare INSERT of the same
 * row) in its place; then the record's folder beside the project's interface folders and its file
 * in it (made with blocking calls, no thread hand-off, the cheapest way: the store makes them on
 * its record-file thread), and only then is it done. Resolves with the rate and the CPU ms per
 * create of this process (the floor's Node side) and of the Python echo.
 */
async function createFloor(project, count, insert) {
  const root = path.join(project, '.portico', 'interfaces');
  const journalFile = path.join(project, '.portico', `floor-journal-${process.pid}.jsonl`);
  const handle = insert ? undefined : await open(journalFile, 'a');
  const text = `${'x'.repeat(ENTRY_BYTES - 1)}\n`;
  const echo = pipeRoundTrips();
  const recordFile = () => {
    const dir = path.join(root, `floor-create-${process.pid}-${floorFolders++}`);
    mkdirSync(dir);
    const fd = openSync(path.join(dir, 'interface.json'), 'wx');
    writeSync(fd, text);
    closeSync(fd);
  };
  const journaled = handle && groupCommit(handle);
  const one = async (i) => {
    await echo.roundTrip(i);
    await (insert ? insert(i) : journaled());
    recordFile();
  };
  try {
    await loops(200, IN_FLIGHT, (i) => one(count + i)); // warm up: the JIT, the echo, the statement
    const self0 = process.cpuUsage();
    const py0 = await cpuMs([echo.pid]);
    const rate = await loops(count, IN_FLIGHT, one);
    const self = process.cpuUsage(self0);
    return { rate, nodeMs: (self.user + self.system) / 1000 / count, echoMs: ((await cpuMs([echo.pid])) - py0) / count };
  } finally {
    echo.stop();
    await handle?.close();
    await rm(journalFile, { force: true });
  }
}

/**
 * Floor for a durable create on PostgreSQL: the row a create writes (same columns, same coded
 * values, same table, triggers and indexes) by a bare single-row INSERT, `IN_FLIGHT` connections
 * each with one in flight (each commits on its own; PostgreSQL shares WAL flushes among them).
 * Resolves with the rate and the backends' CPU ms per INSERT; with `projectDir`, also `create`:
 * the create floor (createFloor) with that INSERT as its durable write, and the backends' CPU ms
 * per create of it (`createBackendsMs`).
 */
async function insertFloor(url, count, projectDir) {
  const project = `/bench-floor-${process.pid}`;
  const pool = new pg.Pool({ connectionString: url, max: IN_FLIGHT });
  const text = `INSERT INTO portico_interfaces (project, ${INSERT_COLUMNS.join(', ')}) VALUES (${['$1', ...INSERT_COLUMNS.map((_, i) => `$${i + 2}`)].join(', ')})`;
  const row = (i) => {
    const config = { start: 20_000_000 + i, step: 1 };
    return recordValues({
      uuid: interfaceUuid('counter', config, {}), module: 'counter', kind: 'Interface', class_name: 'Counter', config, predicate: {}, version: [{ start: 20_000_000 + i }],
      label: null, meta: {}, created_by: 'bench', created_at: new Date().toISOString(), archived: false,
    });
  };
  try {
    const clients = await Promise.all(Array.from({ length: IN_FLIGHT }, () => pool.connect()));
    const backends = (await Promise.all(clients.map((c) => c.query('SELECT pg_backend_pid() AS pid')))).map((r) => r.rows[0].pid);
    clients.forEach((c) => c.release());
    const insert = (i) => pool.query({ name: 'bench_floor_insert', text, values: [project, ...row(i)] });
    await loops(500, IN_FLIGHT, (i) => insert(count + i)); // warm up: every connection prepares the statement
    const cpu0 = await cpuMs(backends);
    const rate = await loops(count, IN_FLIGHT, insert);
    const backendsMs = ((await cpuMs(backends)) - cpu0) / count;
    if (!projectDir) return { rate, backendsMs };
    const cpu1 = await cpuMs(backends);
    const create = await createFloor(projectDir, count, (i) => insert(1_000_000 + i));
    return { rate, backendsMs, create: create.rate, createNodeMs: create.nodeMs, createEchoMs: create.echoMs, createBackendsMs: ((await cpuMs(backends)) - cpu1) / count };
  } finally {
    await pool.query('DELETE FROM portico_interfaces WHERE project = $1', [project]).catch(() => undefined);
    await pool.end();
  }
}

/**
 * Creates and REST calls on one gateway: `RUNS` rounds, each a create loop, then `floor()` (its
 * figures under `floor`: measured right after the creates, so that both see the same load on a
 * shared machine), then a call loop; each figure the median of the rounds. `backends` lists
 * PostgreSQL's backend pids (or nothing).
 */
async function gatewayFigures(gw, runs, floor, backends = async () => []) {
  const client = jsonClient(gw.url, { sockets: IN_FLIGHT });
  const call = () => client.post('/v1/interfaces/call', { target: 'counter', method: 'value' });
  let first = 10_000_000;
  try {
    // The thread that writes record files is the one the second create starts (a REST call would
    // create its record too): every other thread is there once the gateway has started.
    const threads = new Set((await threadTicks(gw.pid)).keys());
    await createRate(client.post, { creates: 2, inFlight: 1, first });
    first += 2;
    const recordThreads = new Set([...(await threadTicks(gw.pid)).keys()].filter((tid) => !threads.has(tid)));
    // Warm up: the worker's imports, the JIT, the pool.
    await createRate(client.post, { creates: 2000, inFlight: IN_FLIGHT, first });
    first += 2000;
    await loops(2000, IN_FLIGHT, call);
    const processes = { gateway: async () => [gw.pid], worker: () => childPids(gw.pid), backends };
    return await medianOf(runs, async () => {
      const { result: creates, split } = await gatewayThreads(gw.pid, recordThreads, CREATES, () =>
        perOp(processes, CREATES, () => createRate(client.post, { creates: CREATES, inFlight: IN_FLIGHT, first })),
      );
      first += CREATES;
      const floorFigures = await floor();
      const calls = await perOp(processes, CALLS, () => loops(CALLS, IN_FLIGHT, call));
      return {
        ...Object.fromEntries(Object.entries(floorFigures).map(([key, value]) => [`floor.${key}`, value])),
        rate: creates.rate, gateway: creates.gateway, worker: creates.worker, backends: creates.backends, client: creates.client,
        loop: split.loop, records: split.records, others: split.others,
        callRate: calls.rate, callGateway: calls.gateway, callWorker: calls.worker, callBackends: calls.backends,
      };
    });
  } finally {
    client.close();
  }
}

/** The floor's figures of gatewayFigures' answer (its `floor.` keys), by their own names. */
const floorOf = (f) => Object.fromEntries(Object.entries(f).filter(([key]) => key.startsWith('floor.')).map(([key, value]) => [key.slice('floor.'.length), value]));

/** The rows of one store: its creates beside the floor, and the CPU per create beside a REST call's. */
function storeRows(store, f, floor, restElsewhere) {
  const rows = [
    { name: `${store}: durable creates/s via REST, ${IN_FLIGHT} in flight, beside the create floor`, value: f.rate, unit: '/s', floor: floor.rate, target: 0.6 * floor.rate, higherIsBetter: true },
    { name: `${store}:   create floor: CPU per create of its Node side (gateway's beside it: "CPU per create: gateway")`, value: floor.nodeMs, unit: ' ms' },
    { name: `${store}:   create floor: CPU per create of its Python echo (the worker's beside it)`, value: floor.echoMs, unit: ' ms' },
    { name: `${store}: REST calls/s (counter.value), ${IN_FLIGHT} in flight`, value: f.callRate, unit: '/s' },
    { name: `${store}: gateway CPU per create, beside its CPU per REST call`, value: f.gateway, unit: ' ms', floor: f.callGateway, target: 2 },
  ];
  if (restElsewhere) rows.push({ name: `${store}: gateway CPU per create, beside the embedded gateway's per REST call`, value: f.gateway, unit: ' ms', floor: restElsewhere });
  rows.push(
    { name: `${store}:   CPU per create: gateway`, value: f.gateway, unit: ' ms' },
    { name: `${store}:     its event loop`, value: f.loop, unit: ' ms' },
    { name: `${store}:     the thread writing record files (their folders and files)`, value: f.records, unit: ' ms' },
    { name: `${store}:     its other threads (garbage collector, compiler, file-system pool)`, value: f.others, unit: ' ms' },
    { name: `${store}:   CPU per create: Python worker`, value: f.worker, unit: ' ms' },
    ...(store === 'postgres' ? [{ name: `${store}:   CPU per create: PostgreSQL backends, beside the create floor's`, value: f.backends, unit: ' ms', floor: floor.createBackendsMs }] : []),
    { name: `${store}:   CPU per create: this bench (the HTTP client)`, value: f.client, unit: ' ms' },
    { name: `${store}:   CPU per REST call: gateway`, value: f.callGateway, unit: ' ms' },
    { name: `${store}:   CPU per REST call: Python worker`, value: f.callWorker, unit: ' ms' },
    ...(store === 'postgres' ? [{ name: `${store}:   CPU per REST call: PostgreSQL backends`, value: f.callBackends, unit: ' ms' }] : []),
  );
  return rows;
}

export async function createsBench(runs) {
  const rows = [];
  console.log(`  load average at the start: ${load()}`);
  // Every folder this section makes is removed at its end, none before: on a file system that
  // skips recently freed inodes (ext4 without a journal), thousands of record folders removed
  // between the parts would make the next part's record files dearer.
  const embedded = await demoProject();
  const project = await demoProject();
  const cluster = await startCluster({ durable: true });
  try {
    // Embedded store.
    let restEmbedded;
    const gw = await startGateway(embedded.dir, ['--log-level', 'warn']);
    try {
      const f = await gatewayFigures(gw, runs, async () => ({ append: await appendFloor(embedded.dir, CREATES), ...(await createFloor(embedded.dir, CREATES)) }));
      restEmbedded = f.callGateway;
      const floor = floorOf(f);
      rows.push(
        ...storeRows('embedded', f, floor),
        { name: 'embedded:   floor: append + fdatasync, group commit, same disk, per s', value: floor.append, unit: '/s' },
        { name: "embedded:   floor: a record folder + file beside the others, kernel CPU each", value: await recordFileFloor(embedded.dir), unit: ' ms' },
      );
    } finally {
      await gw.stop();
    }

    // PostgreSQL (fsync on), on another copy of the demo project.
    const pgw = await startGateway(project.dir, ['--store', cluster.url, '--log-level', 'warn']);
    const admin = new pg.Client({ connectionString: cluster.url });
    await admin.connect();
    try {
      // The gateway's connections; one opened during a loop counts whole (it started at 0).
      const seen = new Set();
      const backends = async () => {
        const { rows: found } = await admin.query("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'");
        for (const { pid } of found) seen.add(pid);
        return [...seen];
      };
      const f = await gatewayFigures(
        pgw,
        runs,
        async () => {
          const { rate, backendsMs, create, createNodeMs, createEchoMs, createBackendsMs } = await insertFloor(cluster.url, CREATES, project.dir);
          return { insert: rate, backendsMs, rate: create, nodeMs: createNodeMs, echoMs: createEchoMs, createBackendsMs };
        },
        backends,
      );
      const floor = floorOf(f);
      rows.push(
        ...storeRows('postgres', f, floor, restEmbedded),
        { name: 'postgres:   floor: bare INSERT of the same row, per s', value: floor.insert, unit: '/s' },
        { name: "postgres:   floor: a record folder + file beside the others, kernel CPU each", value: await recordFileFloor(project.dir), unit: ' ms' },
      );
    } finally {
      await admin.end();
      await pgw.stop();
    }
  } finally {
    await cluster.close();
    await embedded.remove();
    await project.remove();
  }
  console.log(`  load average at the end: ${load()}`);
  return rows;
}
