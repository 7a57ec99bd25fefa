// Issue 22: many sockets on one gateway. 10,000 authenticated sockets stay open (the gateway's RSS
// per idle socket), then 1,000 of them connect to an interface and call at once (every call must be
// answered; p50/p99 beside the same pattern on a raw ws echo server, the floor).
import { WebSocket } from 'ws';
import { rssMb, summarize, us } from './lib.mjs';

export const SOCKETS = 10_000;
export const CALLERS = 1_000;
const CALLS_EACH = 10;
/** Upgrades in flight at once while opening (a burst of 10,000 SYNs overflows the listen backlog). */
const OPENING = 200;

function open(url, token) {
  const ws = new WebSocket(url, [], { perMessageDeflate: false, headers: token ? { authorization: `Bearer ${token}` } : {} });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

async function openMany(url, token, count) {
  const sockets = [];
  for (let i = 0; i < count; i += OPENING) {
    sockets.push(...(await Promise.all(Array.from({ length: Math.min(OPENING, count - i) }, () => open(url, token)))));
  }
  return sockets;
}

/** Each socket makes `calls` sequential round trips of `frame(i)`, all sockets at once; returns latencies. */
async function callAll(sockets, calls, frame, isAnswer) {
  const samples = [];
  let unanswered = 0;
  await Promise.all(
    sockets.map(async (ws) => {
      for (let i = 0; i < calls; i++) {
        const t0 = process.hrtime.bigint();
        const ok = await new Promise((resolve) => {
          ws.once('message', (data) => resolve(isAnswer(data)));
          ws.once('close', () => resolve(false));
          ws.send(frame(i));
        });
        ws.removeAllListeners('close');
        if (!ok) unanswered++;
        samples.push(us(process.hrtime.bigint() - t0));
      }
    }),
  );
  return { ...summarize(samples), unanswered };
}

/** The floor: CALLERS sockets on a raw ws echo server, the same call pattern. */
export async function echoFloor(echoUrl) {
  const sockets = await openMany(echoUrl, undefined, CALLERS);
  try {
    const msg = JSON.stringify({ type: 'call', id: 1, method: 'echo', args: [1] });
    return await callAll(sockets, CALLS_EACH, () => msg, () => true);
  } finally {
    for (const ws of sockets) ws.terminate();
  }
}

export async function manySockets(gw, token, floor) {
  const url = `${gw.url.replace(/^http/, 'ws')}/v1/interfaces/ws`;
  const before = await rssMb(gw.pid);
  const sockets = await openMany(url, token, SOCKETS);
  try {
    await new Promise((resolve) => setTimeout(resolve, 1000)); // let the upgrades' garbage go
    const idle = await rssMb(gw.pid);
    const callers = sockets.slice(0, CALLERS);
    const connected = await callAll(callers, 1, () => JSON.stringify({ type: 'connect', id: 'c', target: 'streamer' }), (data) => JSON.parse(data).type === 'connected');
    const calls = await callAll(callers, CALLS_EACH, (i) => JSON.stringify({ type: 'call', id: i, method: 'echo', args: [i] }), (data) => JSON.parse(data).type === 'result');
    const stillOpen = sockets.filter((ws) => ws.readyState === WebSocket.OPEN).length;
    return [
      { name: `sockets open at once (authenticated)`, value: stillOpen, unit: '', target: SOCKETS, higherIsBetter: true },
      { name: 'gateway RSS per idle socket', value: ((idle - before) * 1024 * 1024) / SOCKETS / 1024, unit: ' KiB', target: 20 },
      { name: `gateway RSS with ${SOCKETS} sockets`, value: idle, unit: ' MB' },
      { name: `connects answered (${CALLERS} sockets at once)`, value: CALLERS - connected.unanswered, unit: '', target: CALLERS, higherIsBetter: true },
      { name: `calls answered (${CALLERS} sockets x ${CALLS_EACH})`, value: CALLERS * CALLS_EACH - calls.unanswered, unit: '', target: CALLERS * CALLS_EACH, higherIsBetter: true },
      { name: `call RTT p50, ${CALLERS} sockets calling, ${SOCKETS} open`, value: calls.p50, unit: ' µs', floor: floor.p50 },
      { name: `call RTT p99, ${CALLERS} sockets calling, ${SOCKETS} open`, value: calls.p99, unit: ' µs', floor: floor.p99 },
    ];
  } finally {
    for (const ws of sockets) ws.terminate();
  }
}
