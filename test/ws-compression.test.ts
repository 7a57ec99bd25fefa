/**
 * permessage-deflate: off by default (a browser's offer is declined), negotiated with
 * --ws-compression on; frames round-trip either way, large text frames travel compressed, and a
 * read's binary frames never are.
 */
import type { Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { cleanup, gateway, tempProject } from './helpers.js';

afterAll(cleanup);

const BLOBS = {
  'blobs.py': ['from portico import Interface', '', 'class Blobs(Interface):', '    def read(self, params):', '        return b"z" * params["n"]', ''].join('\n'),
};

/** Offers the extension the way browsers do (`permessage-deflate; client_max_window_bits`). */
async function browserLike(url: string): Promise<{ ws: WebSocket; negotiated: string; next: () => Promise<{ text?: any; binary?: Buffer }>; received: () => number }> {
  // `true` offers the parameter without a value, as browsers do; ws takes it though its types say number.
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/interfaces/ws`, { perMessageDeflate: { clientMaxWindowBits: true as unknown as number, threshold: 0 } });
  let negotiated = '';
  ws.once('upgrade', (res) => (negotiated = String(res.headers['sec-websocket-extensions'] ?? '')));
  const queue: Array<{ text?: any; binary?: Buffer }> = [];
  const waiting: Array<() => void> = [];
  ws.on('message', (data, isBinary) => {
    queue.push(isBinary ? { binary: data as Buffer } : { text: JSON.parse(String(data)) });
    waiting.splice(0).forEach((wake) => wake());
  });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const next = async () => {
    while (!queue.length) await new Promise<void>((resolve) => waiting.push(resolve));
    return queue.shift()!;
  };
  return { ws, negotiated, next, received: () => (ws as unknown as { _socket: Socket })._socket.bytesRead };
}

async function roundTrips(url: string) {
  const client = await browserLike(url);
  client.ws.send(JSON.stringify({ type: 'connect', id: 'c', target: 'streamer' }));
  expect((await client.next()).text.type).toBe('connected');
  const big = 'abc'.repeat(100_000); // 300 kB of text, above the threshold and very compressible
  for (const value of ['small', big]) {
    client.ws.send(JSON.stringify({ type: 'call', id: value.length, method: 'echo', args: [value] }));
    expect((await client.next()).text).toEqual({ type: 'result', id: value.length, payload: value });
  }
  return client;
}

describe('permessage-deflate', () => {
  it('is declined by default; frames round-trip uncompressed', async () => {
    const g = await gateway();
    const client = await roundTrips(g.url);
    expect(client.negotiated).toBe('');
    expect(client.received()).toBeGreaterThan(300_000);
  });

  it('with --ws-compression on it is negotiated without context takeover, and large text frames travel compressed', async () => {
    const g = await gateway({ wsCompression: true });
    const client = await roundTrips(g.url);
    expect(client.negotiated).toMatch(/^permessage-deflate/);
    expect(client.negotiated).toContain('server_no_context_takeover');
    expect(client.negotiated).toContain('client_no_context_takeover');
    expect(client.received()).toBeLessThan(100_000); // the 300 kB echo arrived compressed
  });

  it('a read sends its bytes as uncompressed binary frames even when compression is on', async () => {
    const g = await gateway({ wsCompression: true, project: await tempProject(BLOBS) });
    const client = await browserLike(g.url);
    client.ws.send(JSON.stringify({ type: 'connect', id: 'c', target: 'blobs' }));
    expect((await client.next()).text.type).toBe('connected');
    const before = client.received();
    client.ws.send(JSON.stringify({ type: 'chunk_start', id: 'r', mode: 'read', params: { n: 200_000 } }));
    let bytes = 0;
    for (;;) {
      const frame = await client.next();
      if (frame.binary) bytes += frame.binary.length;
      else {
        expect(frame.text).toMatchObject({ type: 'chunk_done', id: 'r', payload: { bytes_sent: 200_000 } });
        break;
      }
    }
    expect(bytes).toBe(200_000);
    expect(client.received() - before).toBeGreaterThan(200_000); // "z" * 200000 would deflate to almost nothing
  });
});
