/**
 * Every request gets an answer at shutdown (docs/operating/stopping.md): at the drain deadline a REST
 * request still in flight is answered 503 `shutting_down` (never a reset), and every WebSocket
 * call, stream, upload, read and frame still waiting for its buffers gets an `error` frame
 * `shutting_down` for its id before the 1001 close. A request on a kept-alive connection after the
 * shutdown began is answered 503 too, and every one of these answers has its access line. Work
 * is held in flight by a Python method that waits until the test lets it go, not by timing.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanup, Client, gateway, tempProject, type Frame } from './helpers.js';

afterAll(cleanup);

const LINGERING = `"""Holds its work until the test lets it go: for shutdown tests."""
import os
import time

from portico import Interface


def _wait(release: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (release and os.path.exists(release)):
        time.sleep(0.01)


class Lingering(Interface):
    """Says when a call started (its marker file), and returns once its release file exists."""

    def hold(self, marker: str, release: str = "") -> str:
        open(marker, "w").close()
        _wait(release)
        return "released"

    def read(self, params: dict):
        yield b"x" * 1024
        _wait(params.get("release", ""))
        yield b"y"
`;

/** The error code of a JSON error body (`detail.code`, or `code` beside a string `detail`). */
function errorCode(body: unknown): string | undefined {
  const b = body as { code?: unknown; detail?: { code?: unknown } };
  return typeof b?.code === 'string' ? b.code : typeof b?.detail?.code === 'string' ? b.detail.code : undefined;
}

/** The gateway's WebSocket ping answered: every message sent before it was received by the session. */
const received = (client: Client) => new Promise<void>((resolve) => (client.ws.once('pong', () => resolve()), client.ws.ping()));

/** A raw HTTP/1.1 connection that reads answers one at a time. */
function rawConnection(port: number): { socket: Socket; next: () => Promise<string>; closed: Promise<void> } {
  const socket = connect(port, '127.0.0.1');
  let buffered = '';
  let wake: (() => void) | undefined;
  socket.on('data', (d) => {
    buffered += d;
    wake?.();
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => undefined);
  const next = async (): Promise<string> => {
    for (;;) {
      const head = buffered.indexOf('\r\n\r\n');
      const length = head === -1 ? NaN : Number(/content-length: (\d+)/i.exec(buffered.slice(0, head))?.[1] ?? 0);
      if (head !== -1 && buffered.length >= head + 4 + length) {
        const answer = buffered.slice(0, head + 4 + length);
        buffered = buffered.slice(head + 4 + length);
        return answer;
      }
      await new Promise<void>((resolve) => (wake = resolve));
    }
  };
  return { socket, next, closed };
}

describe('at the drain deadline every request gets an answer', { timeout: 60_000 }, () => {
  it('a REST call gets 503 shutting_down; calls, streams, uploads, reads and a frame awaiting its buffers get an error frame for their id before 1001; each answer is logged', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const project = await tempProject({ 'lingering.py': LINGERING });
    const g = await gateway({ project, logger: pino({ level: 'info' }, sink) });
    const flags = await mkdtemp(path.join(tmpdir(), 'portico-shutdown-'));
    const flag = (name: string) => path.join(flags, name);
    const started = (name: string) => expect.poll(() => existsSync(flag(name)), { timeout: 20_000 }).toBe(true);

    // WebSocket: a call, a stream, an upload between its chunks, a read mid-way, and a frame waiting for its buffers
    const calls = await Client.open(g.url);
    await calls.connect('lingering');
    calls.send({ type: 'call', id: 'held-call', method: 'hold', args: [flag('ws-call')] });
    const streams = await Client.open(g.url);
    await streams.connect('streamer');
    streams.send({ type: 'call', id: 'held-stream', method: 'aticks', args: [100_000, 0.05] });
    await streams.waitFor((f) => f.id === 'held-stream' && f.type === 'stream');
    const uploads = await Client.open(g.url);
    const upload = await uploads.connect('files');
    uploads.send({ type: 'chunk_start', id: 'held-upload', mode: 'write', path: 'big.bin' });
    uploads.ws.send(Buffer.alloc(64 * 1024, 7));
    uploads.send({ type: 'widget_set', id: 'held-buffers', changes: { b: null }, buffer_paths: [['b']], binary_buffers: 2 });
    uploads.ws.send(Buffer.alloc(16, 1));
    await received(uploads);
    const reads = await Client.open(g.url);
    await reads.connect('lingering');
    let readBytes = 0;
    reads.onBinary = (data) => (readBytes += data.length);
    reads.send({ type: 'chunk_start', id: 'held-read', mode: 'read', params: {} });
    await expect.poll(() => readBytes, { timeout: 20_000 }).toBeGreaterThan(0);
    const clients = [calls, streams, uploads, reads];
    const closes = clients.map((c) => new Promise<number>((resolve) => c.ws.once('close', (code) => resolve(code))));

    // REST: a call that outlasts the drain, and a kept-alive connection whose call ends within it
    const rest = fetch(`${g.url}/v1/interfaces/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'held-rest' },
      body: JSON.stringify({ target: 'lingering', method: 'hold', args: [flag('rest')] }),
    });
    const kept = rawConnection(g.port);
    const body = JSON.stringify({ target: 'lingering', method: 'hold', args: [flag('kept'), flag('kept-release')] });
    kept.socket.write(`POST /v1/interfaces/call HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await Promise.all([started('ws-call'), started('rest'), started('kept')]);

    const closing = g.close({ drainMs: 3000 });
    // the kept-alive call ends within the drain; the next request on its connection is refused
    await writeFile(flag('kept-release'), '');
    expect(await kept.next()).toMatch(/^HTTP\/1.1 200 /);
    kept.socket.write('GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Request-Id: after-stop\r\n\r\n');
    const refused = await kept.next();
    expect(refused).toMatch(/^HTTP\/1.1 503 /);
    expect(refused).toMatch(/\r\nconnection: close\r\n/i);
    expect(errorCode(JSON.parse(refused.slice(refused.indexOf('\r\n\r\n') + 4)))).toBe('shutting_down');
    await kept.closed;
    await closing;

    // REST: an answer, not a reset
    const answer = await rest;
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(errorCode(await answer.json())).toBe('shutting_down');

    // WebSocket: an error frame for every id, then 1001
    expect(await Promise.all(closes)).toEqual([1001, 1001, 1001, 1001]);
    const cutOff = (client: Client, id: string) => client.replies(id).filter((f: Frame) => f.type !== 'stream');
    const shuttingDown = [expect.objectContaining({ type: 'error', payload: expect.objectContaining({ code: 'shutting_down' }) })];
    expect(cutOff(calls, 'held-call')).toEqual(shuttingDown);
    expect(cutOff(streams, 'held-stream')).toEqual(shuttingDown);
    expect(streams.replies('held-stream').some((f) => f.final)).toBe(false);
    expect(cutOff(uploads, 'held-upload')).toEqual(shuttingDown);
    expect(cutOff(uploads, 'held-buffers')).toEqual(shuttingDown);
    expect(cutOff(reads, 'held-read')).toEqual(shuttingDown);
    // the upload was cut: nothing of it is left in the interface's folder
    const folder = path.join(project, '.portico/interfaces', upload.payload.uuid);
    expect((await readdir(folder).catch(() => [])).filter((f) => f.includes('big.bin'))).toEqual([]);

    // the access log has the status each client got
    const http = () => lines.filter((l) => l.msg === 'http');
    await expect.poll(() => http().find((l) => l.req_id === 'held-rest')).toMatchObject({ status: 503, code: 'shutting_down', path: '/v1/interfaces/call' });
    expect(http().find((l) => l.req_id === 'after-stop')).toMatchObject({ status: 503, code: 'shutting_down', path: '/v1/health' });
    expect(http().filter((l) => l.path === '/v1/interfaces/call').map((l) => l.status).sort()).toEqual([200, 503]);
    await expect.poll(() => lines.filter((l) => l.msg === 'socket').map((l) => l.close_code)).toEqual([1001, 1001, 1001, 1001]);
  });
});
