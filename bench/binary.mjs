// Issue 5: upload and read of 1 GiB through the gateway beside a raw ws floor with the same frame
// size, in the same run; peak gateway RSS sampled during each transfer.
import { open, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { openWs, startFloorServer } from './floors.mjs';
import { rssMb } from './lib.mjs';

const MiB = 1024 * 1024;
export const FRAME = MiB;

function nextText(ws, predicate = () => true) {
  return new Promise((resolve, reject) => {
    const onMessage = (data, isBinary) => {
      if (isBinary) return;
      const text = String(data);
      if (!predicate(text)) return;
      ws.off('message', onMessage);
      ws.off('close', onClose);
      resolve(text);
    };
    const onClose = () => reject(new Error('socket closed'));
    ws.on('message', onMessage);
    ws.once('close', onClose);
  });
}

/** Sends `total` bytes as frames of FRAME bytes, respecting the socket's buffer. */
async function pump(ws, total) {
  const block = Buffer.alloc(FRAME, 3);
  for (let sent = 0; sent < total; sent += FRAME) {
    const part = block.subarray(0, Math.min(FRAME, total - sent));
    if (ws.bufferedAmount < 8 * MiB) ws.send(part);
    else await new Promise((resolve, reject) => ws.send(part, (err) => (err ? reject(err) : resolve())));
  }
}

/** Samples a process's RSS every 50 ms while `work` runs; returns [result, peak MB]. */
async function withPeakRss(pid, work) {
  let peak = await rssMb(pid);
  const timer = setInterval(() => rssMb(pid).then((v) => (peak = Math.max(peak, v)), () => undefined), 50);
  try {
    return [await work(), peak];
  } finally {
    clearInterval(timer);
  }
}

export const startBinaryFloor = () => startFloorServer('ws-binary-server.mjs');

/** MB/s of raw ws client → server and server → client, FRAME-sized frames. */
export async function binaryFloor(url, total) {
  const ws = await openWs(url);
  ws.send(`expect ${total}`);
  let t0 = process.hrtime.bigint();
  const got = nextText(ws, (t) => t.startsWith('got'));
  await pump(ws, total);
  await got;
  const up = total / MiB / (Number(process.hrtime.bigint() - t0) / 1e9);
  t0 = process.hrtime.bigint();
  let received = 0;
  ws.on('message', (data, isBinary) => isBinary && (received += data.length));
  const done = nextText(ws, (t) => t === 'done');
  ws.send(`send ${total} ${FRAME}`);
  await done;
  const down = total / MiB / (Number(process.hrtime.bigint() - t0) / 1e9);
  ws.close();
  if (received !== total) throw new Error(`floor read ${received} of ${total} bytes`);
  return { up, down };
}

/**
 * MB/s of writing `total` bytes to a file in `dir` (the project's disk) in FRAME-sized writes and
 * then fsync: what an upload's durability costs with no network and no gateway.
 */
export async function diskFloor(dir, total) {
  const file = path.join(dir, `.disk-floor-${process.pid}`);
  const block = Buffer.alloc(FRAME, 5);
  const t0 = process.hrtime.bigint();
  const handle = await open(file, 'w');
  try {
    for (let written = 0; written < total; written += FRAME) await handle.write(block, 0, Math.min(FRAME, total - written));
    await handle.sync();
  } finally {
    await handle.close();
    await rm(file, { force: true });
  }
  return total / MiB / (Number(process.hrtime.bigint() - t0) / 1e9);
}

/** Upload then read of `total` bytes through the gateway (demo-free `blobs` module written into the project). */
export async function binaryGateway(url, pid, projectDir, total) {
  await writeFile(
    path.join(projectDir, 'bench_blobs.py'),
    'from portico import Interface\n\n\nclass BenchBlobs(Interface):\n    def read(self, params):\n        return open(self.local_directory(params["name"]), "rb")\n',
  );
  const ws = await openWs(`${url.replace(/^http/, 'ws')}/v1/interfaces/ws`);
  ws.send(JSON.stringify({ type: 'connect', id: 'c', target: 'bench_blobs' }));
  const connected = JSON.parse(await nextText(ws));
  if (connected.type !== 'connected') throw new Error(JSON.stringify(connected));

  const [up, upPeak] = await withPeakRss(pid, async () => {
    const t0 = process.hrtime.bigint();
    ws.send(JSON.stringify({ type: 'chunk_start', id: 'u', mode: 'write', path: 'big.bin' }));
    await pump(ws, total);
    const t1 = process.hrtime.bigint();
    const done = nextText(ws);
    ws.send(JSON.stringify({ type: 'chunk_end', id: 'u' }));
    const frame = JSON.parse(await done);
    if (process.env.BENCH_DEBUG) console.log('pump s', Number(t1 - t0) / 1e9, 'finish s', Number(process.hrtime.bigint() - t1) / 1e9);
    if (frame.type !== 'chunk_done' || frame.payload.bytes_written !== total) throw new Error(JSON.stringify(frame));
    return total / MiB / (Number(process.hrtime.bigint() - t0) / 1e9);
  });

  const [down, downPeak] = await withPeakRss(pid, async () => {
    let received = 0;
    const onBinary = (data, isBinary) => isBinary && (received += data.length);
    ws.on('message', onBinary);
    const t0 = process.hrtime.bigint();
    const done = nextText(ws);
    ws.send(JSON.stringify({ type: 'chunk_start', id: 'r', mode: 'read', params: { name: 'big.bin' } }));
    const frame = JSON.parse(await done);
    ws.off('message', onBinary);
    if (frame.type !== 'chunk_done' || received !== total) throw new Error(`${JSON.stringify(frame)} after ${received} bytes`);
    return total / MiB / (Number(process.hrtime.bigint() - t0) / 1e9);
  });
  ws.close();
  return { up, down, upPeak, downPeak };
}

/** Median of a list of numbers. */
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** ms for `size` bytes to the raw ws floor and `size` bytes back (one frame each way), median of `rounds`. */
export async function bufferFloorRoundTrip(url, size, rounds) {
  const ws = await openWs(url);
  const payload = Buffer.alloc(size, 5);
  const times = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = process.hrtime.bigint();
    ws.send(`expect ${size}`);
    const got = nextText(ws, (t) => t.startsWith('got'));
    ws.send(payload);
    await got;
    const done = nextText(ws, (t) => t === 'done');
    ws.send(`send ${size} ${size}`);
    await done;
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ws.close();
  return median(times);
}

/**
 * ms for a widget_msg carrying one `size`-byte buffer to reach Python and its WidgetReply with the
 * same bytes to come back, median of `rounds`: as binary frames (`buffers: binary`) or as base64.
 */
export async function widgetBufferRoundTrip(url, projectDir, size, rounds, form) {
  await writeFile(
    path.join(projectDir, 'bench_echo_buffers.py'),
    'from portico import Interface, WidgetReply\n\n\nclass BenchEchoBuffers(Interface):\n    def widget_message(self, content, buffers):\n        return WidgetReply({"sizes": [len(b) for b in buffers]}, buffers)\n',
  );
  const ws = await openWs(`${url.replace(/^http/, 'ws')}/v1/interfaces/ws`);
  ws.send(JSON.stringify({ type: 'connect', id: 'c', target: 'bench_echo_buffers', buffers: form }));
  const connected = JSON.parse(await nextText(ws));
  if (connected.type !== 'connected') throw new Error(JSON.stringify(connected));
  const payload = Buffer.alloc(size, 9);
  const times = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = process.hrtime.bigint();
    let received = 0;
    const onBinary = (data, isBinary) => isBinary && (received += data.length);
    ws.on('message', onBinary);
    const reply = nextText(ws, (t) => t.includes(`"id":"m${i}"`));
    if (form === 'binary') {
      ws.send(JSON.stringify({ type: 'widget_msg', id: `m${i}`, content: null, binary_buffers: 1 }));
      ws.send(payload);
    } else {
      ws.send(JSON.stringify({ type: 'widget_msg', id: `m${i}`, content: null, buffers: [payload.toString('base64')] }));
    }
    const frame = JSON.parse(await reply);
    if (form === 'binary') while (received < size) await new Promise((resolve) => setImmediate(resolve));
    else received = Buffer.from(frame.payload.buffers[0], 'base64').length;
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    ws.off('message', onBinary);
    if (frame.type !== 'widget_msg' || frame.payload.content.sizes[0] !== size || received !== size) throw new Error(`${JSON.stringify(frame).slice(0, 300)} after ${received} bytes`);
  }
  ws.close();
  return median(times);
}
