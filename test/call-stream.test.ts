/**
 * Streams over plain HTTP (issue 43): `POST /v1/interfaces/call` with `Accept:
 * application/x-ndjson` answers one JSON object per line as the call goes (each item, each event,
 * then the line that ends it), and with `Accept: text/event-stream` the same as server-sent
 * events; `curl -N` shows them as they come. A plain JSON request of a generator is still 400
 * `streaming_unsupported`, now naming both ways; a client that leaves stops the generator in Python.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, gateway, tempProject } from './helpers.js';

afterAll(cleanup);

const TICKER = `
import os
import struct
import threading
import zlib

from portico import Interface

release = threading.Event()


def png():
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\\x00\\xff\\x00\\x00")) + chunk(b"IEND", b"")


class Dot:
    def _repr_png_(self):
        return png()


class Ticker(Interface):
    def run(self, n: int = 3):
        for i in range(n):
            self.emit({"progress": (i + 1) / n})
            yield i

    def plain(self):
        self.emit("working")
        return 42

    def boom(self):
        yield 1
        raise ValueError("no more")

    def dot(self):
        yield Dot()

    def held(self):
        """Yields one item, then waits until release() is called."""
        yield "first"
        release.wait(30)
        yield "second"

    def release(self):
        release.set()

    def forever(self, marker: str):
        try:
            i = 0
            while True:
                release.wait(0.05)
                yield i
                i += 1
        finally:
            open(marker, "w").close()
`;

let g: Awaited<ReturnType<typeof gateway>>;
let project: string;
beforeAll(async () => {
  project = await tempProject({ 'ticker.py': TICKER });
  g = await gateway({ project });
});

async function lines(accept: string, method: string, args: unknown[] = []): Promise<{ status: number; type: string; text: string }> {
  const res = await fetch(`${g.url}/v1/interfaces/call`, { method: 'POST', headers: { 'content-type': 'application/json', accept }, body: JSON.stringify({ target: 'ticker', method, args }) });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}
const ndjson = async (method: string, args: unknown[] = []) => {
  const res = await lines('application/x-ndjson', method, args);
  expect([res.status, res.type]).toEqual([200, 'application/x-ndjson']);
  return res.text.trimEnd().split('\n').map((line) => JSON.parse(line));
};

describe('a call answered as it happens over HTTP', { timeout: 60_000 }, () => {
  it('NDJSON: each event and item in order, then the final line', async () => {
    expect(await ndjson('run', [3])).toEqual([
      { type: 'event', payload: { progress: 1 / 3 } },
      { type: 'stream', payload: 0 },
      { type: 'event', payload: { progress: 2 / 3 } },
      { type: 'stream', payload: 1 },
      { type: 'event', payload: { progress: 1 } },
      { type: 'stream', payload: 2 },
      { type: 'stream', payload: null, final: true },
    ]);
  });

  it('a plain method: its events, then its result; a displayable item carries its bundle', async () => {
    expect(await ndjson('plain')).toEqual([{ type: 'event', payload: 'working' }, { type: 'result', payload: 42 }]);
    const [dot] = await ndjson('dot');
    expect(dot).toMatchObject({ type: 'stream', display: { 'image/png': expect.stringMatching(/^iVBOR/) } });
  });

  it('a failure after the first item is the last line; one before anything is the usual JSON error', async () => {
    const failed = await ndjson('boom');
    expect(failed[0]).toEqual({ type: 'stream', payload: 1 });
    expect(failed.at(-1)).toMatchObject({ type: 'error', payload: { code: 'call_failed', exception: 'ValueError', message: expect.stringContaining('no more') } });
    const unknown = await lines('application/x-ndjson', 'nope');
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.text)).toMatchObject({ code: 'not_found', detail: { code: 'not_found' } });
    // No instance to call (an unknown module, a config that does not resolve): the answer a plain
    // JSON call gets, status and body.
    const answered = async (accept: string, body: unknown) => {
      const res = await fetch(`${g.url}/v1/interfaces/call`, { method: 'POST', headers: { 'content-type': 'application/json', accept }, body: JSON.stringify(body) });
      return { status: res.status, type: res.headers.get('content-type'), body: await res.json() };
    };
    for (const body of [{ target: 'tickr', method: 'run', args: [1] }, { target: 'ticker', version: [{ nope: 1 }], method: 'run', args: [1] }]) {
      const streamed = await answered('application/x-ndjson', body);
      expect(streamed).toEqual(await answered('application/json', body));
      expect([streamed.status, streamed.type]).toEqual([400, 'application/json; charset=utf-8']);
    }
  });

  it('server-sent events carry the same objects, each named by its type', async () => {
    const res = await lines('text/event-stream', 'run', [2]);
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^text\/event-stream/);
    const events = res.text.trimEnd().split('\n\n').map((block) => {
      const [event, data] = block.split('\n');
      return { event: event!.replace(/^event: /, ''), data: JSON.parse(data!.replace(/^data: /, '')) };
    });
    expect(events.map((e) => e.event)).toEqual(['event', 'stream', 'event', 'stream', 'stream']);
    expect(events[1]!.data).toEqual({ type: 'stream', payload: 0 });
    expect(events.at(-1)!.data).toEqual({ type: 'stream', payload: null, final: true });
  });

  it('items arrive as they are yielded: the first is read while the generator still waits', async () => {
    const res = await fetch(`${g.url}/v1/interfaces/call`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/x-ndjson' }, body: JSON.stringify({ target: 'ticker', method: 'held' }) });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('{"type":"stream","payload":"first"}\n');
    // The generator is blocked until released: only then does the rest come.
    expect((await api(g, 'POST', '/v1/interfaces/call', { target: 'ticker', method: 'release' })).status).toBe(200);
    let rest = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).toBe('{"type":"stream","payload":"second"}\n{"type":"stream","payload":null,"final":true}\n');
  });

  it('curl -N shows the items and the progress the demo streamer emits after each', async () => {
    const { stdout } = await promisify(execFile)('curl', ['-sN', `${g.url}/v1/interfaces/call`, '-H', 'content-type: application/json', '-H', 'accept: application/x-ndjson', '-d', '{"target": "streamer", "method": "ticks", "args": [2]}']);
    expect(stdout).toBe(
      '{"type":"stream","payload":"tick 0"}\n{"type":"event","payload":{"progress":0.5}}\n{"type":"stream","payload":"tick 1"}\n{"type":"event","payload":{"progress":1}}\n{"type":"stream","payload":null,"final":true}\n',
    );
  });

  it('a plain JSON request of a generator is refused, naming both ways to stream it', async () => {
    const res = await api(g, 'POST', '/v1/interfaces/call', { target: 'ticker', method: 'run' });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatchObject({ code: 'streaming_unsupported', message: expect.stringMatching(/application\/x-ndjson.*WebSocket|WebSocket.*application\/x-ndjson/) });
  });

  it('a client that leaves half-way stops the generator inside Python', async () => {
    const marker = path.join(project, 'stopped.txt');
    const controller = new AbortController();
    const res = await fetch(`${g.url}/v1/interfaces/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/x-ndjson' },
      body: JSON.stringify({ target: 'ticker', method: 'forever', args: [marker] }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    await expect.poll(() => existsSync(marker), { timeout: 20_000 }).toBe(true);
  });
});
