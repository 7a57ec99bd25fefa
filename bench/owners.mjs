// Issue 34: one live instance across gateways. Two gateways, each its own process (as deployed),
// on one throwaway PostgreSQL index and one copy of the demo project, with an api token and a peer
// secret. Gateway A owns the demo `streamer` instance (a socket on A connects to it first, which
// takes its lease); gateway B forwards to A. Measured, interleaved in blocks under the same load:
// - one WebSocket call's round trip (streamer.echo, one call in flight): a socket on B (forwarded
//   B → A), a socket on A (the owner, direct), and the raw ws echo between two Node processes;
// - pipelined calls/s, 64 in flight on one socket, the same three ways, with the CPU each gateway
//   spent per call (and B's allocations) read from the processes themselves;
// - one REST call (POST /v1/interfaces/call, one keep-alive client) on B and on A, beside a raw
//   node:http server.
// The run checks that B's worker made no instance (every call through B went to A).
// BENCH_OWNERS_CPU_PROF=<dir> starts B under `node --cpu-prof --cpu-prof-dir <dir>` (its profile is
// written when the section stops it) for the profile of the forwarded path.
import { loadavg } from 'node:os';
import http from 'node:http';
import { WebSocket } from 'ws';
import { startCluster } from '../scripts/provision-postgres.mjs';
import { startHttpFloor, startWsEcho } from './floors.mjs';
import { demoProject, fmt, percentile, startGateway, us } from './lib.mjs';

export const TOKEN = 'bench-owners-token-0123456789';
export const SECRET = 'bench-owners-peer-secret-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };
/** Rounds of interleaved blocks (each kind measured once per round, the order rotated). */
const BLOCKS = 10;
const PER_BLOCK = 300;
const WARMUP = 300;
const PIPELINED = 20000;
const IN_FLIGHT = 64;
const REST_PER_BLOCK = 150;
const REST_CPU_CALLS = 1500;

function open(url, headers = {}) {
  const ws = new WebSocket(url, { headers, perMessageDeflate: false });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`ws upgrade answered ${res.statusCode}`)));
  });
}

/** A socket on `gatewayUrl` connected to the demo streamer. */
export async function streamerSocket(gatewayUrl) {
  const ws = await open(`${gatewayUrl.replace(/^http/, 'ws')}/v1/interfaces/ws`, AUTH);
  const connected = await request(ws, { type: 'connect', id: 'c', target: 'streamer' });
  if (connected.type !== 'connected') throw new Error(`connect answered ${JSON.stringify(connected)}`);
  return { ws, uuid: connected.payload.uuid };
}

function request(ws, frame) {
  return new Promise((resolve) => {
    ws.once('message', (data) => resolve(JSON.parse(data)));
    ws.send(JSON.stringify(frame));
  });
}

/**
 * `count` sequential round trips on `ws`; `call` frames (checked to be results) or, for the echo
 * floor, the same small message echoed. Pushes the latencies (µs) onto `samples` when given.
 */
export async function roundTrips(ws, count, samples, { echo = false } = {}) {
  let id = 0;
  for (let i = 0; i < count; i++) {
    const msg = JSON.stringify({ type: 'call', id: ++id, method: 'echo', args: [i] });
    const t0 = process.hrtime.bigint();
    const data = await new Promise((resolve) => {
      ws.once('message', resolve);
      ws.send(msg);
    });
    const took = us(process.hrtime.bigint() - t0);
    if (!echo) {
      const frame = JSON.parse(data);
      if (frame.type !== 'result' || frame.payload !== i) throw new Error(`call answered ${String(data)}`);
    }
    samples?.push(took);
  }
}

/** `total` calls with `inFlight` outstanding on one socket; resolves with calls per second. */
export function pipelined(ws, { total = PIPELINED, inFlight = IN_FLIGHT, echo = false } = {}) {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let got = 0;
    const send = () => ws.send(JSON.stringify({ type: 'call', id: ++sent, method: 'echo', args: [sent] }));
    const t0 = process.hrtime.bigint();
    const onMessage = (data) => {
      if (!echo && !String(data).startsWith('{"type":"result"')) {
        ws.off('message', onMessage);
        return reject(new Error(`pipelined call answered ${String(data)}`));
      }
      got++;
      if (sent < total) send();
      if (got === total) {
        ws.off('message', onMessage);
        resolve(total / (Number(process.hrtime.bigint() - t0) / 1e9));
      }
    };
    ws.on('message', onMessage);
    while (sent < Math.min(inFlight, total)) send();
  });
}

/** A keep-alive REST client: `post(body)` resolves with the parsed 200 answer. */
export function restClient(url, path) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const target = new URL(`${url}${path}`);
  const post = (body) =>
    new Promise((resolve, reject) => {
      const text = JSON.stringify(body);
      const req = http.request(target, { method: 'POST', agent, headers: { ...AUTH, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve(chunks.length ? JSON.parse(Buffer.concat(chunks)) : null) : reject(new Error(`REST ${path} answered ${res.statusCode}: ${Buffer.concat(chunks)}`))));
      });
      req.on('error', reject);
      req.end(text);
    });
  return { post, close: () => agent.destroy() };
}

export async function restTrips(client, count, samples) {
  for (let i = 0; i < count; i++) {
    const t0 = process.hrtime.bigint();
    const answer = await client.post({ target: 'streamer', method: 'echo', args: [i] });
    samples?.push(us(process.hrtime.bigint() - t0));
    if (answer && answer.payload !== i) throw new Error(`REST call answered ${JSON.stringify(answer)}`);
  }
}

const p = (samples, q) => percentile([...samples].sort((a, b) => a - b), q);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Instances live in a gateway's workers (GET /v1/projects). */
export async function liveInstances(url) {
  const res = await fetch(`${url}/v1/projects`, { headers: AUTH });
  const body = await res.json();
  return body.workers.reduce((n, w) => n + w.instances, 0);
}

/** The gateway's index operations so far, by operation (its /metrics, portico_store_operations_total). */
export async function storeOperations(url) {
  const text = await (await fetch(`${url}/metrics`, { headers: AUTH })).text();
  const ops = {};
  for (const m of text.matchAll(/^portico_store_operations_total\{([^}]*)\}\s+(\S+)$/gm)) {
    const op = /op="([^"]*)"/.exec(m[1])?.[1] ?? '?';
    ops[op] = (ops[op] ?? 0) + Number(m[2]);
  }
  return ops;
}

/** Index operations per call, by operation, between two storeOperations readings (those that moved). */
function opsPerCall(before, after, calls) {
  return Object.entries(after)
    .map(([op, n]) => [op, (n - (before[op] ?? 0)) / calls])
    .filter(([, n]) => n > 0);
}

export async function ownersBench(runs) {
  const load0 = loadavg();
  const cluster = await startCluster({ durable: true });
  const project = await demoProject();
  const echo = await startWsEcho();
  const httpFloor = await startHttpFloor();
  const args = ['--store', cluster.url, '--api-token', TOKEN, '--peer-secret', SECRET, '--log-level', 'warn'];
  const gateways = [];
  const sockets = [];
  const clients = [];
  try {
    const a = await startGateway(project.dir, args);
    gateways.push(a);
    const profileDir = process.env.BENCH_OWNERS_CPU_PROF;
    const savedNodeArgs = process.env.GW_NODE_ARGS;
    if (profileDir) process.env.GW_NODE_ARGS = [savedNodeArgs, '--cpu-prof', '--cpu-prof-dir', profileDir].filter(Boolean).join(' ');
    const b = await startGateway(project.dir, args).finally(() => {
      if (savedNodeArgs === undefined) delete process.env.GW_NODE_ARGS;
      else process.env.GW_NODE_ARGS = savedNodeArgs;
    });
    gateways.push(b);

    // A takes the lease (its socket connects first); B's socket is relayed to A.
    const onA = await streamerSocket(a.url);
    const onB = await streamerSocket(b.url);
    const echoWs = await open(echo.url);
    sockets.push(onA.ws, onB.ws, echoWs);
    if (onA.uuid !== onB.uuid) throw new Error(`the two sockets reached different instances: ${onA.uuid}, ${onB.uuid}`);
    const restA = restClient(a.url, '/v1/interfaces/call');
    const restB = restClient(b.url, '/v1/interfaces/call');
    clients.push(restA, restB);
    const restFloor = restClient(httpFloor.url, '/');

    // Warm up every path (JIT, the relay's socket, the REST relay's keep-alive connection).
    await roundTrips(echoWs, WARMUP, undefined, { echo: true });
    await roundTrips(onA.ws, WARMUP);
    await roundTrips(onB.ws, WARMUP);
    await restTrips(restA, 100);
    await restTrips(restB, 100);
    for (let i = 0; i < 100; i++) await restFloor.post({});

    // One call in flight: blocks interleaved, the order rotated each round.
    const ws = { echo: [], direct: [], forwarded: [] };
    const kinds = [
      ['echo', () => roundTrips(echoWs, PER_BLOCK, ws.echo, { echo: true })],
      ['direct', () => roundTrips(onA.ws, PER_BLOCK, ws.direct)],
      ['forwarded', () => roundTrips(onB.ws, PER_BLOCK, ws.forwarded)],
    ];
    for (let round = 0; round < BLOCKS; round++) {
      for (let k = 0; k < kinds.length; k++) await kinds[(round + k) % kinds.length][1]();
    }

    // REST, one keep-alive client, interleaved the same way.
    const rest = { floor: [], direct: [], forwarded: [] };
    const restKinds = [
      async () => {
        for (let i = 0; i < REST_PER_BLOCK; i++) {
          const t0 = process.hrtime.bigint();
          await restFloor.post({});
          rest.floor.push(us(process.hrtime.bigint() - t0));
        }
      },
      () => restTrips(restA, REST_PER_BLOCK, rest.direct),
      () => restTrips(restB, REST_PER_BLOCK, rest.forwarded),
    ];
    for (let round = 0; round < BLOCKS; round++) {
      for (let k = 0; k < restKinds.length; k++) await restKinds[(round + k) % restKinds.length]();
    }
    restFloor.close();

    // Pipelined, 64 in flight on one socket: each run measures the three in turn, with the CPU of
    // both gateways (and their workers) and B's allocations meanwhile.
    const perCall = (m, calls) => ({ cpuUs: (m.cpu * 1e6) / calls, workerUs: (m.workerCpu * 1e6) / calls, allocB: m.allocated / calls });
    const pipe = { echo: [], direct: [], forwarded: [] };
    for (let run = 0; run < runs; run++) {
      const order = [
        async () => pipe.echo.push({ rate: await pipelined(echoWs, { echo: true }) }),
        async () => {
          const m = await a.measure(() => b.measure(() => pipelined(onA.ws)));
          pipe.direct.push({ rate: m.result.result, a: perCall(m, PIPELINED), b: perCall(m.result, PIPELINED) });
        },
        async () => {
          const m = await a.measure(() => b.measure(() => pipelined(onB.ws)));
          pipe.forwarded.push({ rate: m.result.result, a: perCall(m, PIPELINED), b: perCall(m.result, PIPELINED) });
        },
      ];
      for (let k = 0; k < order.length; k++) await order[(run + k) % order.length]();
    }
    const med = (list, pick) => median(list.map(pick));

    // REST CPU per call, one keep-alive client, each way in turn.
    const restCpu = { direct: [], forwarded: [] };
    const indexOps = {};
    for (let run = 0; run < runs; run++) {
      for (const [kind, client] of run % 2 ? [['forwarded', restB], ['direct', restA]] : [['direct', restA], ['forwarded', restB]]) {
        const before = run === 0 && [await storeOperations(a.url), await storeOperations(b.url)];
        const m = await a.measure(() => b.measure(() => restTrips(client, REST_CPU_CALLS)));
        restCpu[kind].push({ a: perCall(m, REST_CPU_CALLS), b: perCall(m.result, REST_CPU_CALLS) });
        if (before) indexOps[kind] = { a: opsPerCall(before[0], await storeOperations(a.url), REST_CPU_CALLS), b: opsPerCall(before[1], await storeOperations(b.url), REST_CPU_CALLS) };
      }
    }
    // The same for pipelined ws calls (one pass each way).
    for (const [kind, ws] of [['ws direct', onA.ws], ['ws forwarded', onB.ws]]) {
      const before = [await storeOperations(a.url), await storeOperations(b.url)];
      await pipelined(ws, { total: 5000 });
      indexOps[kind] = { a: opsPerCall(before[0], await storeOperations(a.url), 5000), b: opsPerCall(before[1], await storeOperations(b.url), 5000) };
    }

    // Every call through B was served by A's instance.
    const [instancesA, instancesB] = [await liveInstances(a.url), await liveInstances(b.url)];
    if (instancesB !== 0 || instancesA < 1) throw new Error(`expected the instance on A only; A has ${instancesA} live, B ${instancesB}`);

    const load1 = loadavg();
    const echoP50 = p(ws.echo, 50);
    const directP50 = p(ws.direct, 50);
    const forwardedP50 = p(ws.forwarded, 50);
    const restDirect = p(rest.direct, 50);
    const restForwarded = p(rest.forwarded, 50);
    const n = ws.direct.length;
    return [
      { name: 'load average (1 min) at the start of the section', value: load0[0], unit: '' },
      { name: 'load average (1 min) at the end of the measurements', value: load1[0], unit: '' },
      { name: `raw ws echo RTT p50 (${n} round trips, interleaved)`, value: echoP50, unit: ' µs' },
      { name: 'raw ws echo RTT p90', value: p(ws.echo, 90), unit: ' µs' },
      { name: 'ws call p50, socket on the owner A (direct)', value: directP50, unit: ' µs', floor: echoP50 },
      { name: 'ws call p90, direct', value: p(ws.direct, 90), unit: ' µs', floor: p(ws.echo, 90) },
      { name: 'ws call p50, socket on B, forwarded to A', value: forwardedP50, unit: ' µs', floor: directP50 },
      { name: '  the same beside the raw ws echo', value: forwardedP50, unit: ' µs', floor: echoP50 },
      { name: 'ws call p90, forwarded', value: p(ws.forwarded, 90), unit: ' µs', floor: p(ws.direct, 90) },
      { name: 'ws call p99, forwarded', value: p(ws.forwarded, 99), unit: ' µs', floor: p(ws.direct, 99) },
      { name: 'added by forwarding (p50 forwarded - direct) beside one ws echo hop', value: forwardedP50 - directP50, unit: ' µs', floor: echoP50 },
      { name: `raw ws echo msgs/s pipelined (1 socket x ${IN_FLIGHT})`, value: med(pipe.echo, (r) => r.rate), unit: '/s' },
      { name: `ws calls/s pipelined (1 socket x ${IN_FLIGHT}), direct on A`, value: med(pipe.direct, (r) => r.rate), unit: '/s', floor: med(pipe.echo, (r) => r.rate), higherIsBetter: true },
      { name: `ws calls/s pipelined (1 socket x ${IN_FLIGHT}), forwarded B -> A`, value: med(pipe.forwarded, (r) => r.rate), unit: '/s', floor: med(pipe.direct, (r) => r.rate), higherIsBetter: true },
      { name: '  CPU per call, owner A, direct', value: med(pipe.direct, (r) => r.a.cpuUs), unit: ' µs' },
      { name: '  CPU per call, owner A, forwarded', value: med(pipe.forwarded, (r) => r.a.cpuUs), unit: ' µs', floor: med(pipe.direct, (r) => r.a.cpuUs) },
      { name: '  CPU per call, forwarding gateway B', value: med(pipe.forwarded, (r) => r.b.cpuUs), unit: ' µs', floor: med(pipe.direct, (r) => r.a.cpuUs) },
      { name: '  allocations per call, forwarding gateway B', value: med(pipe.forwarded, (r) => r.b.allocB), unit: ' B', floor: med(pipe.direct, (r) => r.a.allocB) },
      { name: '  allocations per call, owner A, forwarded', value: med(pipe.forwarded, (r) => r.a.allocB), unit: ' B', floor: med(pipe.direct, (r) => r.a.allocB) },
      { name: '  Python worker CPU per call (A), forwarded', value: med(pipe.forwarded, (r) => r.a.workerUs), unit: ' µs', floor: med(pipe.direct, (r) => r.a.workerUs) },
      { name: '  CPU per call of B while idle beside direct calls on A', value: med(pipe.direct, (r) => r.b.cpuUs), unit: ' µs' },
      { name: `raw http POST p50 (1 keep-alive client, ${rest.floor.length} requests)`, value: p(rest.floor, 50), unit: ' µs' },
      { name: 'REST call p50, on the owner A (direct)', value: restDirect, unit: ' µs', floor: p(rest.floor, 50) },
      { name: 'REST call p50, on B, forwarded to A', value: restForwarded, unit: ' µs', floor: restDirect },
      { name: 'REST call p90, forwarded', value: p(rest.forwarded, 90), unit: ' µs', floor: p(rest.direct, 90) },
      { name: '  gateway CPU per REST call, owner A, direct', value: med(restCpu.direct, (r) => r.a.cpuUs), unit: ' µs' },
      { name: '  gateway CPU per REST call, owner A, forwarded', value: med(restCpu.forwarded, (r) => r.a.cpuUs), unit: ' µs', floor: med(restCpu.direct, (r) => r.a.cpuUs) },
      { name: '  gateway CPU per REST call, forwarding gateway B', value: med(restCpu.forwarded, (r) => r.b.cpuUs), unit: ' µs', floor: med(restCpu.direct, (r) => r.a.cpuUs) },
      { name: '  allocations per REST call, forwarding gateway B', value: med(restCpu.forwarded, (r) => r.b.allocB), unit: ' B', floor: med(restCpu.direct, (r) => r.a.allocB) },
      { name: '  Python worker CPU per REST call, A, direct', value: med(restCpu.direct, (r) => r.a.workerUs), unit: ' µs' },
      { name: '  Python worker CPU per REST call, A, forwarded', value: med(restCpu.forwarded, (r) => r.a.workerUs), unit: ' µs' },
      { name: '  Python worker CPU per REST call, B (forwarding)', value: med(restCpu.forwarded, (r) => r.b.workerUs), unit: ' µs' },
      { name: 'added by forwarding a REST call (p50) beside one raw http POST', value: restForwarded - restDirect, unit: ' µs', floor: p(rest.floor, 50) },
      ...Object.entries(indexOps).flatMap(([kind, at]) =>
        ['a', 'b'].flatMap((g) => [
          { name: `index operations per call, ${kind}, on ${g.toUpperCase()}${at[g].length ? ` (${at[g].map(([op, n]) => `${op} ${fmt(n)}`).join(', ')})` : ''}`, value: at[g].reduce((sum, [, n]) => sum + n, 0), unit: '' },
        ]),
      ),
    ];
  } finally {
    for (const ws of sockets) ws.terminate();
    for (const c of clients) c.close();
    // B first: A's lease outlives B's relay.
    for (const g of gateways.reverse()) await g.stop();
    echo.stop();
    httpFloor.stop();
    await project.remove();
    await cluster.close();
  }
}
