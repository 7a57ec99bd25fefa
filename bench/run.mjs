#!/usr/bin/env node
// `npm run bench`: every figure beside its floor measured in this same run. Never part of `npm test`.
// `npm run bench -- calls binary` runs only the named sections (floors, calls, binary, widgets,
// anywidgets, executions, index, postgres, slurm), so a before/after comparison of one part need not wait for all of them.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { restCalls, wsCallLoop, wsCallPipelined } from './calls.mjs';
import { binaryFloor, binaryGateway, bufferFloorRoundTrip, startBinaryFloor, widgetBufferRoundTrip } from './binary.mjs';
import { executionsBench } from './executions.mjs';
import { widgetsBench } from './widgets.mjs';
import { anywidgetsBench } from './anywidgets.mjs';
import { indexBench } from './index.mjs';
import { postgresBench } from './postgres.mjs';
import { pipeEchoRtt, startWsEcho, wsEchoRtt, wsEchoThroughput } from './floors.mjs';
import { demoProject, onDemoCopy, report, ROOT, rssMb, startGateway } from './lib.mjs';

if (!existsSync(path.join(ROOT, 'packages/server/dist/cli/main.js'))) {
  console.error('Build first: npm run build');
  process.exit(1);
}

const SECTIONS = ['floors', 'calls', 'binary', 'widgets', 'anywidgets', 'executions', 'index', 'postgres', 'slurm'];
const only = process.argv.slice(2);
for (const name of only) {
  if (!SECTIONS.includes(name)) {
    console.error(`Unknown bench section ${name}; one of ${SECTIONS.join(', ')}`);
    process.exit(2);
  }
}
const want = (name) => only.length === 0 || only.includes(name);

console.log(`Portico bench — node ${process.version}, ${(await import('node:os')).cpus().length} cores\n`);

const echo = await startWsEcho();
const project = await demoProject();
const gw = await startGateway(project.dir);
try {
  // The call rows are reported against the floors, so asking for calls measures them too.
  const wantFloors = want('floors') || want('calls');
  if (wantFloors) console.log('Floors');
  const wsFloor = wantFloors ? await wsEchoRtt(echo.url) : null;
  const pipeFloor = wantFloors ? await pipeEchoRtt() : null;
  const wsFloorTput = wantFloors ? await wsEchoThroughput(echo.url, { connections: 8 }) : null;
  const floorP50 = wantFloors ? wsFloor.p50 + pipeFloor.p50 : null;
  const floorP99 = wantFloors ? wsFloor.p99 + pipeFloor.p99 : null;
  if (wantFloors) report([
    { name: 'raw ws echo RTT p50', value: wsFloor.p50, unit: ' µs' },
    { name: 'raw ws echo RTT p99', value: wsFloor.p99, unit: ' µs' },
    { name: 'raw pipe echo RTT p50 (Node<->Python)', value: pipeFloor.p50, unit: ' µs' },
    { name: 'raw pipe echo RTT p99', value: pipeFloor.p99, unit: ' µs' },
    { name: 'floor for a call (ws + pipe) p50', value: floorP50, unit: ' µs' },
    { name: 'raw ws echo pipelined msgs/s (8 conns)', value: wsFloorTput, unit: '/s' },
  ]);

  if (want('calls')) {
    console.log('\nRemote calls (issue 2): demo streamer.echo through the gateway');
    const rows = [];
    for (const connections of [1, 8, 64]) {
      const r = await wsCallLoop(gw.url, { connections, perConnection: connections === 1 ? 3000 : Math.ceil(6000 / connections) });
      rows.push(
        { name: `ws call RTT p50, ${connections} conn`, value: r.p50, unit: ' µs', floor: floorP50, ...(connections === 1 ? { target: 1.5 } : {}) },
        { name: `ws call RTT p99, ${connections} conn`, value: r.p99, unit: ' µs', floor: floorP99 },
        { name: `ws calls/s closed loop, ${connections} conn`, value: r.perSecond, unit: '/s' },
      );
    }
    const pipelined = await wsCallPipelined(gw.url, { connections: 8, inFlight: 64 });
    rows.push({ name: 'ws calls/s pipelined (8 conns x 64)', value: pipelined, unit: '/s', floor: wsFloorTput, target: 10000, higherIsBetter: true });
    const http = await restCalls(gw.url, { path: '/v1/health', method: 'GET', total: 2000 });
    const rest = await restCalls(gw.url);
    rows.push(
      { name: 'REST GET /v1/health p50 (HTTP stack, no Python)', value: http.p50, unit: ' µs' },
      { name: 'REST call p50 (keep-alive)', value: rest.p50, unit: ' µs', floor: http.p50 + pipeFloor.p50 },
      { name: 'REST calls/s (16 concurrent)', value: rest.perSecond, unit: '/s' },
      { name: 'gateway RSS after the load', value: await rssMb(gw.pid), unit: ' MB' },
    );
    report(rows);
  }

  if (want('binary')) {
    console.log('\nBinary data plane (issue 5): 1 GiB upload and read, 1 MiB frames');
    const GiB = 1024 ** 3;
    const MiB = 1024 ** 2;
    const binary = await startBinaryFloor();
    try {
      const floor = await binaryFloor(binary.url, GiB);
      const through = await binaryGateway(gw.url, gw.pid, project.dir, GiB);
      report([
        { name: 'upload MB/s (client -> gateway -> disk, fsync)', value: through.up, unit: ' MB/s', floor: floor.up, target: 0.6 * floor.up, higherIsBetter: true },
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

  if (want('widgets')) {
    console.log('\nWidgets (issue 6): widget_set round trip beside the call round trip, same socket and instance');
    report(await widgetsBench(gw.url));
  }

  if (want('anywidgets')) {
    console.log('\nPublished anywidgets (issue 20): served by portico.widgets.serve, beside the demo counter on the same gateway');
    report(await onDemoCopy(anywidgetsBench));
  }

  if (want('executions')) {
    console.log('\nExecutions (issue 4): demo trainer runs');
    report(await executionsBench(gw.url, project.dir));
  }
} finally {
  await gw.stop();
  echo.stop();
  await project.remove();
}

if (want('index')) {
  console.log('\nConfig index (issues 3, 18): REST search and durable creates on a seeded project');
  report(await onDemoCopy(indexBench));
}

if (want('postgres')) {
  console.log('\nConfig index on PostgreSQL (issue 18): 1M records seeded in bulk, beside a Map scan');
  report(await onDemoCopy(postgresBench));
}

if (want('slurm')) report(await (await import('./slurm.mjs')).slurmBench());
