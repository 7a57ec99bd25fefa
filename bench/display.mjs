// Issue 32: a method returning a 1 MB PNG (an object with _repr_png_, docs/writing/rich-results.md),
// over REST (base64 in the JSON body) and over the WebSocket (a binary frame after the result on a
// buffers: binary socket; base64 on a default one), beside the same bytes read through the read
// hook (binary frames, the data plane's floor) on the same gateway, interleaved in the same run.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { openWs } from './floors.mjs';
import { jsonClient, summarize, us } from './lib.mjs';

// The PNG is built once in the worker with the stdlib: random pixels, so deflate keeps it ~1 MB.
const MODULE = `import random
import struct
import zlib

from portico import Interface


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png(width, height):
    rng = random.Random(0)
    rows = b"".join(b"\\0" + rng.randbytes(width * 3) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\\x89PNG\\r\\n\\x1a\\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows, 1)) + _chunk(b"IEND", b"")


PNG = _png(590, 590)


class Picture:
    def _repr_png_(self):
        return PNG


class BenchDisplay(Interface):
    def picture(self):
        return Picture()

    def size(self):
        return len(PNG)

    def read(self, params):
        return PNG
`;

/** A socket on /v1/interfaces/ws connected to bench_display; `next(predicate)` resolves with the next matching message. */
async function socket(url, buffers) {
  const ws = await openWs(`${url.replace(/^http/, 'ws')}/v1/interfaces/ws`);
  const waiting = [];
  ws.on('message', (data, isBinary) => {
    const message = isBinary ? { binary: data } : { frame: JSON.parse(String(data)) };
    const at = waiting.findIndex((w) => w.predicate(message));
    if (at >= 0) waiting.splice(at, 1)[0].resolve(message);
  });
  const next = (predicate) => new Promise((resolve) => waiting.push({ predicate, resolve }));
  const connected = next((m) => m.frame?.id === 'c');
  ws.send(JSON.stringify({ type: 'connect', id: 'c', target: 'bench_display', ...(buffers ? { buffers } : {}) }));
  if ((await connected).frame.type !== 'connected') throw new Error('connect failed');
  return { ws, next };
}

/** µs of one call of picture() over `s` until its PNG is in (the binary frame, or the base64 decoded). */
async function wsPicture(s, id, size, binary) {
  const t0 = process.hrtime.bigint();
  const result = s.next((m) => m.frame?.id === id);
  const image = binary ? s.next((m) => m.binary !== undefined) : undefined;
  s.ws.send(JSON.stringify({ type: 'call', id, method: 'picture' }));
  const { frame } = await result;
  const png = binary ? (await image).binary : Buffer.from(frame.display?.['image/png'] ?? '', 'base64');
  const took = us(process.hrtime.bigint() - t0);
  if (frame.type !== 'result' || png.length !== size) throw new Error(`picture() over the socket: ${JSON.stringify(frame).slice(0, 300)}`);
  return took;
}

/** µs of a read of the same bytes through the read hook, until chunk_done. */
async function wsRead(s, id, size) {
  let received = 0;
  const onBinary = (data, isBinary) => isBinary && (received += data.length);
  s.ws.on('message', onBinary);
  const t0 = process.hrtime.bigint();
  const done = s.next((m) => m.frame?.id === id);
  s.ws.send(JSON.stringify({ type: 'chunk_start', id, mode: 'read', params: {} }));
  const { frame } = await done;
  const took = us(process.hrtime.bigint() - t0);
  s.ws.off('message', onBinary);
  if (frame.type !== 'chunk_done' || received !== size) throw new Error(`read: ${JSON.stringify(frame)} after ${received} bytes`);
  return took;
}

/** µs of one REST call of picture() until its JSON is parsed and the PNG decoded. */
async function restPicture(client, size) {
  const t0 = process.hrtime.bigint();
  const body = await client.post('/v1/interfaces/call', { target: 'bench_display', method: 'picture' });
  const png = Buffer.from(body.display['image/png'], 'base64');
  const took = us(process.hrtime.bigint() - t0);
  if (png.length !== size) throw new Error(`picture() over REST: ${png.length} bytes`);
  return took;
}

/** Rows of the display section: each way of getting the PNG beside the read of the same bytes, `count` rounds interleaved. */
export async function displayBench(url, projectDir, { warmup = 5, count = 40 } = {}) {
  await writeFile(path.join(projectDir, 'bench_display.py'), MODULE);
  const client = jsonClient(url, { sockets: 1 });
  const size = (await client.post('/v1/interfaces/call', { target: 'bench_display', method: 'size' })).payload;
  const binary = await socket(url, 'binary');
  const base64 = await socket(url);
  const samples = { read: [], rest: [], binary: [], base64: [] };
  try {
    for (let i = 0; i < warmup + count; i++) {
      const round = {
        read: await wsRead(binary, `r${i}`, size),
        rest: await restPicture(client, size),
        binary: await wsPicture(binary, `b${i}`, size, true),
        base64: await wsPicture(base64, `s${i}`, size, false),
      };
      if (i >= warmup) for (const key of Object.keys(samples)) samples[key].push(round[key]);
    }
  } finally {
    binary.ws.close();
    base64.ws.close();
    client.close();
  }
  const ms = (key) => summarize(samples[key]).p50 / 1000;
  const mb = (size / 1e6).toFixed(2);
  return [
    { name: `read of the same ${mb} MB, binary frames (floor) p50`, value: ms('read'), unit: ' ms' },
    { name: `${mb} MB PNG result over REST (base64 JSON) p50`, value: ms('rest'), unit: ' ms', floor: ms('read') },
    { name: `${mb} MB PNG result over WebSocket, binary frame p50`, value: ms('binary'), unit: ' ms', floor: ms('read') },
    { name: `${mb} MB PNG result over WebSocket, base64 p50`, value: ms('base64'), unit: ' ms', floor: ms('read') },
  ];
}
