#!/usr/bin/env node
// Issue 45: where the gateway's time per REST call goes. `node bench/rest-profile.mjs [call|create] [count]`
// (after a build): one gateway on a copy of the demo project under `node --cpu-prof`; after a
// warm-up, `count` REST calls of `streamer.echo(1)` (call) or durable creates of new `counter`
// configs (create), 16 keep-alive clients, then the gateway is stopped (its profile is written then)
// and the self time of its hottest functions and the inclusive time of the call path's steps are
// printed, in µs per request, over the samples taken while the measured requests ran.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createRate, demoProject, jsonClient, startGateway } from './lib.mjs';
import { partsOf, REST_PARTS, summarizeProfile } from './profile.mjs';

const mode = process.argv[2] ?? 'call';
const count = Number(process.argv[3] ?? (mode === 'create' ? 3000 : 20000));
if (!['call', 'create'].includes(mode) || !(count > 0)) {
  console.error('usage: node bench/rest-profile.mjs [call|create] [count]');
  process.exit(2);
}

/** `total` requests by 16 loops of `one`. */
async function loops(total, one) {
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < total) await one(next++);
  }));
}

const project = await demoProject();
const profileDir = await mkdtemp(path.join(tmpdir(), 'portico-rest-prof-'));
process.env.GW_NODE_ARGS = [process.env.GW_NODE_ARGS, '--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-interval', '100'].filter(Boolean).join(' ');
const gw = await startGateway(project.dir, process.argv.slice(4));
try {
  const client = jsonClient(gw.url, { sockets: 16 });
  const call = () => client.post('/v1/interfaces/call', { target: 'streamer', method: 'echo', args: [1] });
  const run = (n, first) => (mode === 'call' ? loops(n, call) : createRate(client.post, { creates: n, inFlight: 16, first }));
  await run(Math.min(count, 3000), 1_000_000);
  const from = Number(process.hrtime.bigint() / 1000n);
  await run(count, 2_000_000);
  const to = Number(process.hrtime.bigint() / 1000n);
  client.close();
  await gw.stop();
  const file = (await readdir(profileDir)).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile written in ${profileDir}`);
  const profile = JSON.parse(await readFile(path.join(profileDir, file), 'utf8'));
  const steps = [
    'logAccess', 'finished', 'record', 'handleErrors', 'serializeJson', 'checkOrigin', 'cors', 'refuseWhileStopping', 'authenticate',
    'exactRoute', 'handleRoute', 'readJson', 'safeParse', 'parse@route.js', 'handler@interfaces.js', 'bindRequest', 'bind', 'callForResult', 'call',
    'stringify', 'parse', 'respond', 'handleRequest', 'callback', 'emit', 'write', 'writeHead', 'end', 'flush', 'create', 'resolve',
    'parserOnHeadersComplete', 'parserOnIncoming', 'onStreamRead', 'processTicksAndRejections', '(garbage collector)',
  ];
  const summary = summarizeProfile(profile, steps, { from, to });
  const per = (us) => (us / count).toFixed(2);
  console.log(`${mode}: ${count} requests, profile window ${(summary.total / 1e6).toFixed(2)} s, idle ${(summary.idle / 1e6).toFixed(2)} s`);
  console.log(`busy µs per request: ${per(summary.total - summary.idle)}`);
  console.log('\nby part (the frame nearest the leaf that names one), µs per request:');
  for (const [name, t] of partsOf(profile, REST_PARTS, { from, to })) console.log(`  ${per(t).padStart(7)}  ${name}`);
  console.log('\nself time, µs per request (the hottest 45):');
  for (const [name, t] of summary.self.slice(0, 45)) console.log(`  ${per(t).padStart(7)}  ${name}`);
  // Self time by file: the gateway's modules by name, node's internals and each package whole.
  const byFile = new Map();
  for (const [name, t] of summary.self) {
    const where = name.split(' ')[1] ?? '';
    const key = where ? where.replace(/:\d+$/, '').replace(/^(node_modules\/[^/]+).*/, '$1').replace(/^node:.*/, 'node internals') : name;
    byFile.set(key, (byFile.get(key) ?? 0) + t);
  }
  console.log('\nself time by file, µs per request:');
  for (const [name, t] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`  ${per(t).padStart(7)}  ${name}`);
  console.log('\ninclusive time by function name, µs per request:');
  for (const [name, t] of summary.inclusive) if (t > 0) console.log(`  ${per(t).padStart(7)}  ${name}`);
  console.log(`\nprofile kept at ${path.join(profileDir, file)}`);
} finally {
  await gw.stop();
  await project.remove();
}
