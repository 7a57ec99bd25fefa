// Issues 2, 22: WebSocket and REST remote-call latency and throughput through the real gateway.
import http from 'node:http';
import { openWs } from './floors.mjs';
import { cpuSeconds, summarize, us } from './lib.mjs';

export async function connectedSocket(url, { target = 'streamer', deflate = false } = {}) {
  const ws = await openWs(`${url.replace(/^http/, 'ws')}/v1/interfaces/ws`, [], { deflate });
  await new Promise((resolve, reject) => {
    ws.once('message', (data) => {
      const frame = JSON.parse(data);
      frame.type === 'connected' ? resolve() : reject(new Error(JSON.stringify(frame)));
    });
    ws.send(JSON.stringify({ type: 'connect', target }));
  });
  return ws;
}

/**
 * Closed-loop round trips: `connections` sockets, each with one call in flight at a time.
 * Returns latency percentiles and calls per second.
 */
export async function wsCallLoop(url, { connections = 1, perConnection = 2000, warmup = 200 } = {}) {
  const sockets = await Promise.all(Array.from({ length: connections }, () => connectedSocket(url)));
  const samples = [];
  let t0;
  const runOne = async (ws, count, record) => {
    let id = 0;
    for (let i = 0; i < count; i++) {
      const start = process.hrtime.bigint();
      await new Promise((resolve, reject) => {
        ws.once('message', (data) => {
          const frame = JSON.parse(data);
          frame.type === 'result' ? resolve() : reject(new Error(JSON.stringify(frame)));
        });
        ws.send(JSON.stringify({ type: 'call', id: ++id, method: 'echo', args: [i] }));
      });
      if (record) samples.push(us(process.hrtime.bigint() - start));
    }
  };
  await Promise.all(sockets.map((ws) => runOne(ws, Math.ceil(warmup / connections), false)));
  t0 = process.hrtime.bigint();
  await Promise.all(sockets.map((ws) => runOne(ws, perConnection, true)));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  for (const ws of sockets) ws.close();
  return { ...summarize(samples), perSecond: (connections * perConnection) / seconds };
}

/** Pipelined calls: each socket keeps `inFlight` calls outstanding. Returns calls per second and how many calls. */
export async function wsCallPipelined(url, { connections = 8, total = 40000, inFlight = 32, deflate = false } = {}) {
  const sockets = await Promise.all(Array.from({ length: connections }, () => connectedSocket(url, { deflate })));
  const per = Math.floor(total / connections);
  const t0 = process.hrtime.bigint();
  await Promise.all(
    sockets.map(
      (ws) =>
        new Promise((resolve, reject) => {
          let sent = 0;
          let got = 0;
          const send = () => ws.send(JSON.stringify({ type: 'call', id: ++sent, method: 'echo', args: [sent] }));
          ws.on('message', (data) => {
            const frame = JSON.parse(data);
            if (frame.type !== 'result') return reject(new Error(JSON.stringify(frame)));
            got++;
            if (sent < per) send();
            if (got === per) resolve();
          });
          while (sent < Math.min(inFlight, per)) send();
        }),
    ),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  for (const ws of sockets) ws.close();
  return { rate: (per * connections) / seconds, calls: per * connections };
}

/**
 * Sequential REST calls, then `concurrency` parallel loops for requests/s. Uses node:http with a
 * keep-alive agent: fetch's own per-request cost would dominate the figure. With `serverPid`, also
 * the CPU that process spent per request (`cpuUs`): the floor's, to set the gateway's beside it.
 */
export async function restCalls(url, { count = 1500, warmup = 100, concurrency = 16, total = 6000, path = '/v1/interfaces/call', method = 'POST', serverPid } = {}) {
  const cpu0 = serverPid && (await cpuSeconds(serverPid));
  const body = method === 'POST' ? JSON.stringify({ target: 'streamer', method: 'echo', args: [1] }) : '';
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(`${url}${path}`);
  const headers = body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {};
  const call = () =>
    new Promise((resolve, reject) => {
      const req = http.request(target, { method, agent, headers }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`REST call answered ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end(body);
    });
  for (let i = 0; i < warmup; i++) await call();
  const samples = [];
  for (let i = 0; i < count; i++) {
    const t0 = process.hrtime.bigint();
    await call();
    samples.push(us(process.hrtime.bigint() - t0));
  }
  const t0 = process.hrtime.bigint();
  let left = total;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left-- > 0) await call();
    }),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  agent.destroy();
  const calls = warmup + count + total;
  const cpuUs = serverPid ? (((await cpuSeconds(serverPid)) - cpu0) * 1e6) / calls : undefined;
  return { ...summarize(samples), perSecond: total / seconds, calls, ...(serverPid ? { cpuUs } : {}) };
}

/**
 * Issue 45: REST calls through the gateway beside the floors of a REST request, interleaved (in
 * each of `runs` rounds the raw \`http\` server, the bare Koa + @koa/router server, the same Koa
 * with one round trip to a Python process per request, then the gateway, so that all four see the
 * same load on a shared machine): p50 with one keep-alive client, requests/s with 16, and each
 * server's own CPU per request. Each figure the median of the rounds, with its smallest and largest (`spread`).
 */
export async function restBesideFloors(gw, { http: httpFloor, koa, koaPipe }, runs, perCall) {
  const rounds = [];
  for (let i = 0; i < runs; i++) {
    const raw = await restCalls(httpFloor.url, { path: '/', serverPid: httpFloor.pid });
    const bare = await restCalls(koa.url, { serverPid: koa.pid });
    const piped = await restCalls(koaPipe.url, { serverPid: koaPipe.pid });
    const m = await gw.measure(() => restCalls(gw.url));
    rounds.push({ raw, koa: bare, koaPipe: piped, gateway: { ...m.result, ...perCall(m, m.result.calls) } });
  }
  const pick = (who, key) => {
    const values = rounds.map((r) => r[who][key]).sort((a, b) => a - b);
    return { median: values[Math.floor(values.length / 2)], min: values[0], max: values.at(-1) };
  };
  const out = {};
  for (const who of ['raw', 'koa', 'koaPipe', 'gateway']) {
    out[who] = {};
    for (const key of Object.keys(rounds[0][who])) if (typeof rounds[0][who][key] === 'number') out[who][key] = pick(who, key).median;
    out[who].spread = Object.fromEntries(['p50', 'perSecond', 'cpuUs'].map((key) => [key, pick(who, key)]));
  }
  return out;
}

/**
 * Issue 43: the first item of a stream (demo streamer.ticks(1)) over plain HTTP (Accept:
 * application/x-ndjson, one keep-alive connection) beside the same stream over a WebSocket,
 * interleaved: µs from sending the call to holding its first item, and to its end.
 */
export async function streamFirstItem(url, { rounds = 400, warmup = 50 } = {}) {
  const ws = await connectedSocket(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const body = JSON.stringify({ target: 'streamer', method: 'ticks', args: [1] });
  const target = new URL('/v1/interfaces/call', url);
  const viaHttp = () =>
    new Promise((resolve, reject) => {
      const t0 = process.hrtime.bigint();
      let first;
      const req = http.request(target, { method: 'POST', agent, headers: { 'content-type': 'application/json', accept: 'application/x-ndjson', 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.on('data', () => (first ??= process.hrtime.bigint()));
        res.on('end', () => resolve({ first: us(first - t0), end: us(process.hrtime.bigint() - t0) }));
      });
      req.on('error', reject);
      req.end(body);
    });
  let id = 0;
  const viaWs = () =>
    new Promise((resolve) => {
      const t0 = process.hrtime.bigint();
      const mine = ++id;
      let first;
      const onMessage = (data) => {
        const frame = JSON.parse(data);
        if (frame.id !== mine) return;
        first ??= process.hrtime.bigint();
        if (frame.type === 'stream' && !frame.final) return;
        ws.off('message', onMessage);
        resolve({ first: us(first - t0), end: us(process.hrtime.bigint() - t0) });
      };
      ws.on('message', onMessage);
      ws.send(JSON.stringify({ type: 'call', id: mine, method: 'ticks', args: [1] }));
    });
  const samples = { http: [], ws: [] };
  for (let i = 0; i < rounds + warmup; i++) {
    const a = await viaHttp();
    const b = await viaWs();
    if (i < warmup) continue;
    samples.http.push(a.first);
    samples.ws.push(b.first);
  }
  ws.close();
  agent.destroy();
  return { http: summarize(samples.http), ws: summarize(samples.ws) };
}
