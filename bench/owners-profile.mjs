#!/usr/bin/env node
// Issue 34: where the forwarding gateway's time goes. `node bench/owners-profile.mjs [ws|ws1|rest|direct-ws|direct-ws1|direct-rest] [calls]`
// (after a build): two gateway processes on a throwaway PostgreSQL as in bench/owners.mjs, the
// measured one under `node --cpu-prof` — B (the forwarder) for ws and rest, A (the owner,
// direct) for the direct-* modes. After a warm-up it makes `calls` calls (pipelined, 64 in flight
// on one socket, for ws; one at a time for ws1; one keep-alive client for rest), stops that
// gateway (its profile is written then) and prints the self time of its hottest functions and the
// inclusive time of the forwarding path's own steps, per call.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startCluster } from '../scripts/provision-postgres.mjs';
import { demoProject, startGateway } from './lib.mjs';
import { summarizeProfile } from './profile.mjs';
import { pipelined, restClient, restTrips, roundTrips, SECRET, streamerSocket, TOKEN } from './owners.mjs';

const mode = process.argv[2] ?? 'ws';
const calls = Number(process.argv[3] ?? (mode.endsWith('rest') ? 5000 : mode.endsWith('ws1') ? 10000 : 60000));
if (!['ws', 'ws1', 'rest', 'direct-ws', 'direct-ws1', 'direct-rest'].includes(mode) || !(calls > 0)) {
  console.error('usage: node bench/owners-profile.mjs [ws|ws1|rest|direct-ws|direct-ws1|direct-rest] [calls]');
  process.exit(2);
}
const profiled = mode.startsWith('direct') ? 'a' : 'b';

const cluster = await startCluster({ durable: true });
const project = await demoProject();
const profileDir = await mkdtemp(path.join(tmpdir(), 'portico-owners-prof-'));
const args = ['--store', cluster.url, '--api-token', TOKEN, '--peer-secret', SECRET, '--log-level', 'warn'];
const started = [];
try {
  const withProfile = async (on) => {
    const saved = process.env.GW_NODE_ARGS;
    if (on) process.env.GW_NODE_ARGS = [saved, '--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-interval', '200'].filter(Boolean).join(' ');
    try {
      const g = await startGateway(project.dir, args);
      started.push(g);
      return g;
    } finally {
      if (saved === undefined) delete process.env.GW_NODE_ARGS;
      else process.env.GW_NODE_ARGS = saved;
    }
  };
  const a = await withProfile(profiled === 'a');
  const b = await withProfile(profiled === 'b');
  const target = profiled === 'a' ? a : b;
  const onA = await streamerSocket(a.url); // A takes the lease
  let done;
  let from;
  let to;
  if (mode.endsWith('ws') || mode.endsWith('ws1')) {
    const { ws } = profiled === 'a' ? onA : await streamerSocket(b.url);
    const one = mode.endsWith('ws1');
    await (one ? roundTrips(ws, 1000) : pipelined(ws, { total: 10000 }));
    const t0 = process.hrtime.bigint();
    from = Number(t0 / 1000n);
    const rate = one ? (await roundTrips(ws, calls), calls / (Number(process.hrtime.bigint() - t0) / 1e9)) : await pipelined(ws, { total: calls });
    to = Number(process.hrtime.bigint() / 1000n);
    done = { rate, seconds: Number(process.hrtime.bigint() - t0) / 1e9 };
    ws.terminate();
  } else {
    const client = restClient(target.url, '/v1/interfaces/call');
    await restTrips(client, 500);
    const t0 = process.hrtime.bigint();
    from = Number(t0 / 1000n);
    await restTrips(client, calls);
    to = Number(process.hrtime.bigint() / 1000n);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    done = { rate: calls / seconds, seconds };
    client.close();
  }
  onA.ws.terminate();
  await target.stop();
  const file = (await readdir(profileDir)).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile written in ${profileDir}`);
  const profile = JSON.parse(await readFile(path.join(profileDir, file), 'utf8'));
  const steps = [
    // ws (B): the client's frame in (read, decoded, validated), re-serialized and sent to the owner; the owner's answer in, its head read, and out to the client.
    'receive@socket-session.js', 'decodeFrame', 'plainCall', 'dispatch@socket-session.js', 'handle@session.js', 'forward@owner-relay.js',
    'receive@owner-relay.js', 'answerOf', 'sendRelayed', 'frameEnded', 'send', 'stringify', 'parse', 'emit',
    // REST (B, and A direct)
    'atOwner', 'relayToOwner', 'locate', 'bindRequest', 'create', 'authenticate', 'callForResult', 'query', 'handler',
  ];
  const summary = summarizeProfile(profile, steps, { from, to });
  const perCall = (us) => (us / calls).toFixed(2);
  console.log(`profiled ${profiled === 'a' ? 'A (owner, direct)' : 'B (forwarding)'}: ${mode}, ${calls} calls at ${done.rate.toFixed(0)}/s over ${done.seconds.toFixed(2)} s (profile samples in that window ${(summary.total / 1e6).toFixed(2)} s, idle ${(summary.idle / 1e6).toFixed(2)} s)`);
  console.log(`busy µs per call (samples taken while the measured calls ran): ${perCall(summary.total - summary.idle)}`);
  console.log('\nself time, µs per measured call (the hottest 30):');
  for (const [name, t] of summary.self.slice(0, 30)) console.log(`  ${perCall(t).padStart(7)}  ${name}`);
  console.log('\ninclusive time by function name, µs per measured call:');
  for (const [name, t] of summary.inclusive) if (t > 0) console.log(`  ${perCall(t).padStart(7)}  ${name}`);
  console.log(`\nprofile kept at ${path.join(profileDir, file)}`);
} finally {
  for (const g of started.reverse()) await g.stop();
  await project.remove();
  await cluster.close();
}
