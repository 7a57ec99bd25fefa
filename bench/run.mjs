#!/usr/bin/env node
// `npm run bench`: every figure beside its floor measured in this same run. Never part of `npm test`.
// `npm run bench -- calls binary` runs only the named sections (floors, calls, rest, binary, compression, sockets, widgets,
// anywidgets, kernel, executions, display, index, postgres, creates, slurm, slurm-workers, lifetime, owners), so a before/after comparison of one part need not wait for all of them.
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { restBesideFloors, restCalls, streamFirstItem, wsCallLoop, wsCallPipelined } from './calls.mjs';
import { binaryFloor, binaryGateway, bufferFloorRoundTrip, diskFloor, startBinaryFloor, widgetBufferRoundTrip } from './binary.mjs';
import { compressionBench } from './compression.mjs';
import { displayBench } from './display.mjs';
import { echoFloor, manySockets, SOCKETS } from './sockets.mjs';
import { executionsBench } from './executions.mjs';
import { widgetsBench } from './widgets.mjs';
import { anywidgetsBench } from './anywidgets.mjs';
import { indexBench } from './index.mjs';
import { lifetimeBench } from './lifetime.mjs';
import { postgresBench } from './postgres.mjs';
import { pipeEchoRtt, startHttpFloor, startKoaFloor, startKoaPipeFloor, startWsEcho, wsEchoRtt, wsEchoThroughput } from './floors.mjs';
import { demoProject, fmt, medianOf, onDemoCopy, recorded, report, ROOT, rssMb, section, startGateway } from './lib.mjs';

if (!existsSync(path.join(ROOT, 'packages/server/dist/cli/main.js'))) {
  console.error('Build first: npm run build');
  process.exit(1);
}

const SECTIONS = ['floors', 'calls', 'rest', 'binary', 'compression', 'sockets', 'widgets', 'anywidgets', 'kernel', 'executions', 'display', 'index', 'postgres', 'creates', 'slurm', 'slurm-workers', 'lifetime', 'owners'];
const args = process.argv.slice(2);
// --json [file]: also write every figure as JSON (to the file, or to stdout when none is named).
const jsonAt = args.indexOf('--json');
const jsonTarget = jsonAt < 0 ? undefined : args[jsonAt + 1] && !SECTIONS.includes(args[jsonAt + 1]) && !args[jsonAt + 1].startsWith('--') ? args[jsonAt + 1] : '-';
// --runs N: each call figure is the median of N runs (default 3; the machine is shared and noisy).
const runsAt = args.indexOf('--runs');
const RUNS = runsAt < 0 ? 3 : Number(args[runsAt + 1]);
const only = args.filter((a, i) => !a.startsWith('--') && !(jsonAt >= 0 && i === jsonAt + 1 && jsonTarget !== '-') && !(runsAt >= 0 && i === runsAt + 1));
for (const name of only) {
  if (!SECTIONS.includes(name)) {
    console.error(`Unknown bench section ${name}; one of ${SECTIONS.join(', ')}`);
    process.exit(2);
  }
}
if (!(RUNS >= 1)) {
  console.error('--runs takes a positive number');
  process.exit(2);
}
const want = (name) => only.length === 0 || only.includes(name);
// With --json on stdout, the human-readable lines go to stderr so that stdout is the JSON alone.
if (jsonTarget === '-') console.log = (...line) => console.error(...line);

const CORES = cpus().length;
console.log(`Portico bench — node ${process.version}, ${CORES} cores, each call figure the median of ${RUNS} runs`);

const echo = await startWsEcho();
const httpFloor = await startHttpFloor();
const koaFloor = await startKoaFloor();
const koaPipeFloor = await startKoaPipeFloor();
const project = await demoProject();
const gw = await startGateway(project.dir);
try {
  // The call rows are reported against the floors, so asking for calls measures them too.
  const wantFloors = want('floors') || want('calls');
  let floors;
  if (wantFloors) {
    section('floors', 'Floors (same run, same machine)');
    floors = {
      ws: await medianOf(RUNS, () => wsEchoRtt(echo.url)),
      pipe: await medianOf(RUNS, () => pipeEchoRtt()),
      wsPipelined: await medianOf(RUNS, () => wsEchoThroughput(echo.url, { connections: 8, inFlight: 32 })),
      http1: await medianOf(RUNS, () => restCalls(httpFloor.url, { path: '/', concurrency: 16, serverPid: httpFloor.pid })),
      koa: await medianOf(RUNS, () => restCalls(koaFloor.url, { concurrency: 16, serverPid: koaFloor.pid })),
      koaPipe: await medianOf(RUNS, () => restCalls(koaPipeFloor.url, { concurrency: 16, serverPid: koaPipeFloor.pid })),
    };
    floors.callP50 = floors.ws.p50 + floors.pipe.p50;
    floors.callP99 = floors.ws.p99 + floors.pipe.p99;
    report([
      { name: 'raw ws echo RTT p50', value: floors.ws.p50, unit: ' µs' },
      { name: 'raw ws echo RTT p99', value: floors.ws.p99, unit: ' µs' },
      { name: 'raw pipe echo RTT p50 (Node<->Python)', value: floors.pipe.p50, unit: ' µs' },
      { name: 'raw pipe echo RTT p99', value: floors.pipe.p99, unit: ' µs' },
      { name: 'floor for a call (ws + pipe) p50', value: floors.callP50, unit: ' µs' },
      { name: 'raw ws echo msgs/s pipelined (8 conns x 32)', value: floors.wsPipelined, unit: '/s' },
      { name: 'raw http POST p50 (1 keep-alive client)', value: floors.http1.p50, unit: ' µs' },
      { name: 'raw http POST/s (16 keep-alive clients)', value: floors.http1.perSecond, unit: '/s' },
      { name: 'raw http server CPU per POST', value: floors.http1.cpuUs, unit: ' µs' },
      { name: 'bare Koa + @koa/router POST p50 (1 keep-alive client)', value: floors.koa.p50, unit: ' µs', floor: floors.http1.p50 },
      { name: 'bare Koa + @koa/router POST/s (16 keep-alive clients)', value: floors.koa.perSecond, unit: '/s', floor: floors.http1.perSecond },
      { name: 'bare Koa + @koa/router server CPU per POST', value: floors.koa.cpuUs, unit: ' µs', floor: floors.http1.cpuUs },
      { name: 'Koa + a Python pipe round trip POST p50 (1 keep-alive client)', value: floors.koaPipe.p50, unit: ' µs', floor: floors.koa.p50 },
      { name: 'Koa + a Python pipe round trip POST/s (16 keep-alive clients)', value: floors.koaPipe.perSecond, unit: '/s', floor: floors.koa.perSecond },
      { name: 'Koa + a Python pipe round trip server CPU per POST', value: floors.koaPipe.cpuUs, unit: ' µs', floor: floors.koa.cpuUs },
    ]);
  }

  if (want('calls')) {
    section('calls', 'Remote calls (issues 2, 22): demo streamer.echo through the gateway');
    const rows = [];
    for (const connections of [1, 8, 64]) {
      const r = await medianOf(RUNS, () => wsCallLoop(gw.url, { connections, perConnection: connections === 1 ? 3000 : Math.ceil(6000 / connections) }));
      rows.push(
        { name: `ws call RTT p50, ${connections} conn`, value: r.p50, unit: ' µs', floor: floors.callP50, ...(connections === 1 ? { target: 1.5 } : {}) },
        { name: `ws call RTT p99, ${connections} conn`, value: r.p99, unit: ' µs', floor: floors.callP99 },
        { name: `ws calls/s closed loop, ${connections} conn`, value: r.perSecond, unit: '/s' },
      );
    }
    const perCall = (m, calls) => ({ cpuUs: (m.cpu * 1e6) / calls, workerUs: (m.workerCpu * 1e6) / calls, allocB: m.allocated / calls });
    const pipelined = await medianOf(RUNS, () => gw.measure(() => wsCallPipelined(gw.url, { connections: 8, inFlight: 32 })).then((m) => ({ rate: m.result.rate, ...perCall(m, m.result.calls) })));
    rows.push(
      { name: 'ws calls/s pipelined (8 conns x 32)', value: pipelined.rate, unit: '/s', floor: floors.wsPipelined, target: 0.5 * floors.wsPipelined, higherIsBetter: true },
      { name: 'gateway CPU per ws call (pipelined)', value: pipelined.cpuUs, unit: ' µs' },
      { name: 'gateway allocations per ws call (pipelined)', value: pipelined.allocB, unit: ' B' },
      { name: 'Python worker CPU per ws call (pipelined)', value: pipelined.workerUs, unit: ' µs' },
    );
    const http = await medianOf(RUNS, () => restCalls(gw.url, { path: '/v1/health', method: 'GET', total: 2000 }));
    const besides = await restBesideFloors(gw, { http: httpFloor, koa: koaFloor, koaPipe: koaPipeFloor }, RUNS, perCall);
    const rest = besides.gateway;
    rows.push(
      { name: 'REST GET /v1/health p50 (HTTP stack, no Python)', value: http.p50, unit: ' µs' },
      ...restRows(besides, floors.pipe.p50),
      { name: 'gateway allocations per REST call', value: rest.allocB, unit: ' B' },
      { name: 'Python worker CPU per REST call', value: rest.workerUs, unit: ' µs' },
      { name: 'gateway RSS after the load', value: await rssMb(gw.pid), unit: ' MB' },
    );
    // Issue 43: a stream over plain HTTP (NDJSON) beside the same stream over the WebSocket.
    const first = await streamFirstItem(gw.url);
    rows.push(
      { name: 'stream first item p50 over the WebSocket (streamer.ticks(1))', value: first.ws.p50, unit: ' µs' },
      { name: 'stream first item p50 over HTTP, Accept: application/x-ndjson', value: first.http.p50, unit: ' µs', floor: first.ws.p50 },
    );
    report(rows);
  }

  if (want('rest')) {
    section('rest', 'REST calls (issue 45): demo streamer.echo(1) beside a bare Koa + @koa/router server and a raw http server, interleaved in each round');
    const perCall = (m, calls) => ({ cpuUs: (m.cpu * 1e6) / calls, workerUs: (m.workerCpu * 1e6) / calls, allocB: m.allocated / calls });
    const besides = await restBesideFloors(gw, { http: httpFloor, koa: koaFloor, koaPipe: koaPipeFloor }, RUNS, perCall);
    report([
      ...restRows(besides),
      { name: 'gateway allocations per REST call', value: besides.gateway.allocB, unit: ' B' },
      { name: 'Python worker CPU per REST call', value: besides.gateway.workerUs, unit: ' µs' },
    ]);
  }

  if (want('binary')) {
    section('binary', 'Binary data plane (issues 5, 22): 1 GiB upload and read, 1 MiB frames');
    const GiB = 1024 ** 3;
    const MiB = 1024 ** 2;
    const binary = await startBinaryFloor();
    try {
      // Floor and gateway back to back in each run, so that both see the same load on a shared machine.
      const runs = await medianOf(RUNS, async () => {
        const f = await binaryFloor(binary.url, GiB);
        return { floorUp: f.up, floorDown: f.down, disk: await diskFloor(project.dir, GiB), ...(await binaryGateway(gw.url, gw.pid, project.dir, GiB)) };
      });
      const floor = { up: runs.floorUp, down: runs.floorDown };
      const through = runs;
      report([
        { name: 'upload MB/s (client -> gateway -> disk, fsync)', value: through.up, unit: ' MB/s', floor: floor.up, target: 0.6 * floor.up, higherIsBetter: true },
        { name: 'upload MB/s beside the disk alone (1 MiB writes + fsync, no network)', value: through.up, unit: ' MB/s', floor: runs.disk },
        { name: 'read MB/s (disk -> worker -> gateway -> client)', value: through.down, unit: ' MB/s', floor: floor.down, target: 0.6 * floor.down, higherIsBetter: true },
        { name: 'gateway peak RSS during the upload', value: through.upPeak, unit: ' MB', target: 200 },
        { name: 'gateway peak RSS during the read', value: through.downPeak, unit: ' MB', target: 200 },
      ]);
      console.log('\nWidget buffers (issue 20): one 16 MiB buffer to Python and back (widget_msg → WidgetReply), median of 7');
      const size = 16 * MiB;
      const floorMs = await bufferFloorRoundTrip(binary.url, size, 7);
      const rawMs = await widgetBufferRoundTrip(gw.url, project.dir, size, 7, 'binary');
      const base64Ms = await widgetBufferRoundTrip(gw.url, project.dir, size, 7, 'base64');
      report([
        { name: '16 MiB round trip, binary frames', value: rawMs, unit: ' ms', floor: floorMs },
        { name: '16 MiB round trip, base64 (the compatible form)', value: base64Ms, unit: ' ms', floor: floorMs },
      ]);
    } finally {
      binary.stop();
    }
  }

  if (want('compression')) {
    section('compression', 'Compression (issue 22): permessage-deflate on vs off (the floor), a client compressing every frame it sends as browsers do');
    // Its own copy of the project: the embedded index admits one gateway per project.
    const secondProject = await demoProject();
    const compressing = await startGateway(secondProject.dir, ['--ws-compression', 'on']);
    try {
      report(await compressionBench(gw.url, compressing.url, RUNS));
    } finally {
      await compressing.stop();
      await secondProject.remove();
    }
  }

  if (want('sockets')) {
    section('sockets', `Many sockets (issue 22): ${SOCKETS} authenticated sockets on one gateway (api token), 1,000 of them calling; floor: the same calls on a raw ws echo`);
    // Each socket is a file descriptor on both sides; the gateway inherits this process's limit.
    const secondProject = await demoProject();
    const token = 'bench-token-0123456789';
    const crowded = await startGateway(secondProject.dir, ['--api-token', token]);
    try {
      report(await manySockets(crowded, token, await echoFloor(echo.url)));
    } finally {
      await crowded.stop();
      await secondProject.remove();
    }
  }

  if (want('widgets')) {
    section('widgets', 'Widgets (issue 6): widget_set round trip beside the call round trip, same socket and instance');
    report(await widgetsBench(gw.url));
  }

  if (want('anywidgets')) {
    section('anywidgets', 'Published anywidgets (issue 20): served by portico.widgets.serve, beside the demo counter on the same gateway');
    report(await onDemoCopy(anywidgetsBench));
  }

  if (want('executions')) {
    section('executions', 'Executions (issue 4): demo trainer runs');
    report(await executionsBench(gw.url, project.dir));
  }

  if (want('display')) {
    section('display', 'Rich results (issue 32): a method returning a 1 MB PNG (_repr_png_), beside a read of the same bytes; p50 of 40, interleaved');
    report(await displayBench(gw.url, project.dir));
  }
} finally {
  await gw.stop();
  echo.stop();
  httpFloor.stop();
  koaFloor.stop();
  koaPipeFloor.stop();
  await project.remove();
}

/**
 * Issue 45's three REST figures, each beside bare Koa's from the same rounds (and the raw `http`
 * server's), with the min–max of the rounds. `pipeP50`, when given, adds the old row: the p50
 * beside a raw http POST plus a raw pipe echo.
 */
function restRows({ raw, koa, koaPipe, gateway }, pipeP50) {
  const spread = (who, key, unit) => `${fmt(who.spread[key].min, unit)}–${fmt(who.spread[key].max, unit)}`;
  console.log(`  (rounds' min–max: REST p50 ${spread(gateway, 'p50', ' µs')}, Koa ${spread(koa, 'p50', ' µs')}, Koa + pipe ${spread(koaPipe, 'p50', ' µs')}; REST/s ${spread(gateway, 'perSecond', '/s')}, Koa ${spread(koa, 'perSecond', '/s')}, Koa + pipe ${spread(koaPipe, 'perSecond', '/s')}; CPU ${spread(gateway, 'cpuUs', ' µs')}, Koa ${spread(koa, 'cpuUs', ' µs')}, Koa + pipe ${spread(koaPipe, 'cpuUs', ' µs')})`);
  return [
    // The architecture's own floor: what any gateway that runs the call in a Python process pays.
    { name: 'Koa + a Python pipe round trip: p50 beside bare Koa', value: koaPipe.p50, unit: ' µs', floor: koa.p50 },
    { name: 'Koa + a Python pipe round trip: POST/s beside bare Koa', value: koaPipe.perSecond, unit: '/s', floor: koa.perSecond },
    { name: 'Koa + a Python pipe round trip: server CPU per POST beside bare Koa', value: koaPipe.cpuUs, unit: ' µs', floor: koa.cpuUs },
    { name: 'REST call p50 (1 keep-alive client), beside bare Koa', value: gateway.p50, unit: ' µs', floor: koa.p50, target: 1.5 },
    ...(pipeP50 === undefined ? [] : [{ name: 'REST call p50 (1 keep-alive client), beside raw http + pipe', value: gateway.p50, unit: ' µs', floor: raw.p50 + pipeP50, target: 2 }]),
    { name: 'REST calls/s (16 keep-alive clients), beside bare Koa', value: gateway.perSecond, unit: '/s', floor: koa.perSecond, target: 0.7 * koa.perSecond, higherIsBetter: true },
    { name: 'REST calls/s (16 keep-alive clients), beside raw http', value: gateway.perSecond, unit: '/s', floor: raw.perSecond },
    { name: 'gateway CPU per REST call, beside bare Koa per request', value: gateway.cpuUs, unit: ' µs', floor: koa.cpuUs, target: 1.5 },
    { name: 'gateway CPU per REST call, beside raw http per request', value: gateway.cpuUs, unit: ' µs', floor: raw.cpuUs },
    { name: 'REST call p50, beside Koa + a Python pipe round trip', value: gateway.p50, unit: ' µs', floor: koaPipe.p50 },
    { name: 'REST calls/s, beside Koa + a Python pipe round trip', value: gateway.perSecond, unit: '/s', floor: koaPipe.perSecond },
    { name: 'gateway CPU per REST call, beside Koa + a Python pipe round trip', value: gateway.cpuUs, unit: ' µs', floor: koaPipe.cpuUs },
  ];
}

if (want('kernel')) {
  section('kernel', 'Widgets through the kernel (issue 42): one state change page -> Python -> page in JupyterLab, through the kernel (anywidget), direct (Portico extension) and Jupyter comm echo, interleaved; pip install from the gateway');
  report(await (await import('./kernel-widgets.mjs')).kernelWidgetsBench());
}

if (want('index')) {
  section('index', 'Config index (issues 3, 18): REST search and durable creates on a seeded project');
  report(await onDemoCopy(indexBench));
}

if (want('postgres')) {
  section('postgres', 'Config index on PostgreSQL (issue 18): 1M records seeded in bulk, beside a Map scan');
  report(await onDemoCopy(postgresBench));
}

if (want('creates')) {
  section('creates', 'Creates (issue 30): durable creates, 16 in flight, beside the raw insert floor; CPU per create of each process beside a REST call on the same gateway');
  report(await (await import('./creates.mjs')).createsBench(RUNS));
}

if (want('lifetime')) {
  section('lifetime', 'Live instances (issue 28): a worker killed or wedged until calls and widget state are back; saving a 1 MB widget state');
  report(await onDemoCopy((dir) => lifetimeBench(dir, RUNS)));
}

if (want('owners')) {
  section('owners', 'Several gateways (issue 34): two gateway processes on one PostgreSQL, the streamer owned by A; calls on B forwarded to A beside the same calls on A and the raw ws echo, interleaved');
  report(await (await import('./owners.mjs')).ownersBench(RUNS));
}

if (want('slurm')) report(await (await import('./slurm.mjs')).slurmBench());

if (want('slurm-workers')) report(await (await import('./slurm-workers.mjs')).slurmWorkersBench());

if (jsonTarget) {
  let commit = null;
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    // not a git checkout: the figures stand without a commit
  }
  const figures = recorded.map((r) => ({
    section: r.section,
    name: r.name,
    value: r.value,
    unit: r.unit?.trim() ?? '',
    ...(r.floor ? { floor: r.floor, ratio: r.value / r.floor } : {}),
    ...(r.target !== undefined ? { target: r.target, met: r.met } : {}),
  }));
  const text = JSON.stringify({ node: process.version, cores: CORES, runs: RUNS, commit, date: new Date().toISOString(), figures }, null, 2);
  if (jsonTarget === '-') process.stdout.write(`${text}\n`);
  else await writeFile(jsonTarget, `${text}\n`);
}
