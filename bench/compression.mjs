// Issue 22: permessage-deflate on and off, with a client that offers it and compresses every
// frame it sends (as browsers do): a 1 MiB JSON payload echoed through a call, and the small-call
// rate pipelined. The gateway with compression off is the floor of the one with it on.
import { connectedSocket, wsCallPipelined } from './calls.mjs';
import { medianOf, summarize, us } from './lib.mjs';

/** About 1 MiB of JSON shaped like a table of results (compresses like real data, not like zeros). */
export function tableJson(bytes = 1024 * 1024) {
  const rows = [];
  let size = 2;
  for (let i = 0; size < bytes; i++) {
    const row = { id: i, name: `run-${(i * 2654435761) % 100000}`, loss: Math.round(Math.abs(Math.sin(i)) * 1e6) / 1e6, tags: ['train', i % 3 ? 'gpu' : 'cpu'] };
    size += JSON.stringify(row).length + 1;
    rows.push(row);
  }
  return rows;
}

/** Round trips of `payload` through streamer.echo on one socket: latency and bytes the client read per round trip. */
async function payloadRoundTrips(url, payload, { deflate, count = 15 }) {
  const ws = await connectedSocket(url, { deflate });
  const socket = ws._socket;
  const samples = [];
  const read0 = socket.bytesRead;
  for (let i = 0; i < count; i++) {
    const t0 = process.hrtime.bigint();
    await new Promise((resolve, reject) => {
      ws.once('message', (data) => (JSON.parse(data).type === 'result' ? resolve() : reject(new Error(String(data).slice(0, 200)))));
      ws.send(JSON.stringify({ type: 'call', id: i, method: 'echo', args: [payload] }));
    });
    samples.push(us(process.hrtime.bigint() - t0));
  }
  const bytesPerReply = (socket.bytesRead - read0) / count;
  ws.close();
  return { ...summarize(samples), bytesPerReply };
}

export async function compressionBench(offUrl, onUrl, runs) {
  const payload = tableJson();
  const size = JSON.stringify(payload).length;
  const measure = (url) =>
    medianOf(runs, async () => {
      const big = await payloadRoundTrips(url, payload, { deflate: true });
      const rate = (await wsCallPipelined(url, { connections: 8, inFlight: 32, total: 20000, deflate: true })).rate;
      return { p50: big.p50, bytes: big.bytesPerReply, rate };
    });
  const off = await measure(offUrl);
  const on = await measure(onUrl);
  return [
    { name: `1 MiB JSON echo p50, compression on (${(size / 1024).toFixed(0)} KiB of JSON)`, value: on.p50, unit: ' µs', floor: off.p50 },
    { name: '1 MiB JSON echo p50, compression off', value: off.p50, unit: ' µs' },
    { name: 'bytes on the wire per 1 MiB reply, compression on', value: on.bytes / 1024, unit: ' KiB', floor: off.bytes / 1024 },
    { name: 'small calls/s pipelined (8 x 32), compression on', value: on.rate, unit: '/s', floor: off.rate },
    { name: 'small calls/s pipelined (8 x 32), compression off', value: off.rate, unit: '/s' },
  ];
}
