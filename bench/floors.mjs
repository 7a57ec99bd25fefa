// Physical floors measured in the same run: raw ws echo between two Node processes, and a raw
// Node<->Python pipe echo with the bridge's framing.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { WebSocket } from 'ws';
import { ROOT, summarize, us } from './lib.mjs';

const HERE = path.join(ROOT, 'bench/floor');

/** Starts one of the floor servers in bench/floor (it prints its port); `scheme` is ws or http. */
export async function startFloorServer(file, scheme = 'ws') {
  const child = spawn(process.execPath, [path.join(HERE, file)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
  return { url: `${scheme}://127.0.0.1:${port}`, pid: child.pid, stop: () => child.kill('SIGTERM') };
}

export const startWsEcho = () => startFloorServer('ws-echo-server.mjs');
export const startHttpFloor = () => startFloorServer('http-server.mjs', 'http');
export const startKoaFloor = () => startFloorServer('koa-server.mjs', 'http');
/** Bare Koa plus one round trip to a Python process per request: the floor of the architecture (issue 45). */
export const startKoaPipeFloor = () => startFloorServer('koa-pipe-server.mjs', 'http');

/** Opens a ws client; `deflate: true` offers permessage-deflate as browsers do, compressing every frame it sends. */
export function openWs(url, protocols = [], { deflate = false } = {}) {
  const ws = new WebSocket(url, protocols, { perMessageDeflate: deflate ? { clientMaxWindowBits: true, threshold: 0 } : false });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/** Sequential round trips of a small JSON message over a raw ws echo. */
export async function wsEchoRtt(url, { warmup = 300, count = 3000 } = {}) {
  const ws = await openWs(url);
  const msg = JSON.stringify({ type: 'call', id: 1, method: 'echo', args: [1] });
  const samples = [];
  for (let i = 0; i < warmup + count; i++) {
    const t0 = process.hrtime.bigint();
    await new Promise((resolve) => {
      ws.once('message', resolve);
      ws.send(msg);
    });
    if (i >= warmup) samples.push(us(process.hrtime.bigint() - t0));
  }
  ws.close();
  return summarize(samples);
}

/** Pipelined small messages per second over a raw ws echo (window of `inFlight`). */
export async function wsEchoThroughput(url, { total = 40000, inFlight = 64, connections = 1 } = {}) {
  const sockets = await Promise.all(Array.from({ length: connections }, () => openWs(url)));
  const msg = JSON.stringify({ type: 'call', id: 1, method: 'echo', args: [1] });
  const per = Math.floor(total / connections);
  const t0 = process.hrtime.bigint();
  await Promise.all(
    sockets.map(
      (ws) =>
        new Promise((resolve) => {
          let sent = 0;
          let got = 0;
          ws.on('message', () => {
            got++;
            if (sent < per) {
              ws.send(msg);
              sent++;
            }
            if (got === per) resolve();
          });
          for (; sent < Math.min(inFlight, per); sent++) ws.send(msg);
        }),
    ),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  for (const ws of sockets) ws.close();
  return (per * connections) / seconds;
}

/** Sequential round trips of a small framed message through a Python pipe echo. */
export async function pipeEchoRtt({ warmup = 300, count = 3000 } = {}) {
  const child = spawn('python3', [path.join(HERE, 'pipe_echo.py')], { stdio: ['ignore', 'inherit', 'inherit', 'pipe', 'pipe'] });
  const [toPy, fromPy] = [child.stdio[3], child.stdio[4]];
  const header = Buffer.from(JSON.stringify({ op: 'call', id: 1, method: 'echo', args: [1] }));
  const prefix = Buffer.alloc(8);
  prefix.writeUInt32BE(header.length, 0);
  const frame = Buffer.concat([prefix, header]);
  const samples = [];
  let pending = 0;
  let waiter;
  fromPy.on('data', (chunk) => {
    pending += chunk.length;
    if (pending >= frame.length) {
      pending -= frame.length;
      waiter();
    }
  });
  for (let i = 0; i < warmup + count; i++) {
    const t0 = process.hrtime.bigint();
    await new Promise((resolve) => {
      waiter = resolve;
      toPy.write(frame);
    });
    if (i >= warmup) samples.push(us(process.hrtime.bigint() - t0));
  }
  child.kill('SIGTERM');
  return summarize(samples);
}
