/**
 * The gateway always comes back, and stops cleanly when asked: the index lock is released by the
 * kernel the moment its holder dies (a zombie its parent never reaps included), a restart right
 * after SIGKILL or SIGTERM succeeds and keeps every record, a second live gateway is refused with
 * how to reach the first, and a shutdown gives what is in flight a clear outcome.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api, cleanup, Client, gateway, ROOT, tempProject } from './helpers.js';

const BIN = path.join(ROOT, 'packages/server/bin/portico.js');
const ROUNDS = 10;
const spawned: ChildProcess[] = [];
/** Gateways forked by a parent of their own: killing that parent leaves them running. */
const forked: number[] = [];

afterAll(async () => {
  for (const child of spawned) child.kill('SIGKILL');
  for (const pid of forked) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await cleanup();
});

/** Reads `child`'s stdout until the banner names the URL. */
function bannerUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /API (http:\/\/\S+)\/v1/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.stderr!.on('data', (d) => (out += d));
    child.once('exit', (code) => reject(new Error(`the gateway exited (${code}) before serving:\n${out}`)));
  });
}

/** `portico serve` as a plain child of this process. */
async function serve(project: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, 'serve', project, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  spawned.push(child);
  return { child, url: await bannerUrl(child) };
}

/**
 * `portico serve` under a parent that never reaps it (as a supervisor, a notebook or a container
 * without an init may leave it): killed, it stays a zombie.
 */
async function serveUnreaped(project: string): Promise<{ parent: ChildProcess; pid: number; url: string }> {
  const script = 'import os, sys, time\npid = os.fork()\nif pid == 0:\n    os.execv(sys.argv[1], sys.argv[1:])\nprint(pid, flush=True)\ntime.sleep(600)\n';
  const parent = spawn('python3', ['-c', script, process.execPath, BIN, 'serve', project, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  spawned.push(parent);
  const pid = await new Promise<number>((resolve) => parent.stdout!.once('data', (d) => resolve(Number(String(d).split('\n')[0]))));
  forked.push(pid);
  return { parent, pid, url: await bannerUrl(parent) };
}

async function processState(pid: number): Promise<string> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? '';
}

async function create(url: string, start: number): Promise<string> {
  const res = await api({ url }, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start }] });
  expect(res.status).toBe(200);
  return res.body.uuid;
}

async function search(url: string): Promise<string[]> {
  const res = await api({ url }, 'POST', '/v1/interfaces/search', { limit: 1000 });
  expect(res.body.total).toBeLessThanOrEqual(1000);
  expect(res.status).toBe(200);
  return res.body.items.map((i: { uuid: string }) => i.uuid).sort();
}

describe('restarts', { timeout: 180_000 }, () => {
  it(`${ROUNDS} rounds of kill -9, left unreaped, and an immediate restart: each comes up and keeps every record`, async () => {
    const project = await tempProject();
    const kept: string[] = [];
    let current = await serveUnreaped(project);
    for (let round = 0; round < ROUNDS; round++) {
      kept.push(await create(current.url, round));
      process.kill(current.pid, 'SIGKILL');
      await expect.poll(() => processState(current.pid)).toBe('Z'); // dead, holding no descriptor, not reaped
      const next = await serveUnreaped(project);
      expect(await search(next.url)).toEqual([...kept].sort());
      current.parent.kill('SIGKILL');
      current = next;
    }
  });

  it(`${ROUNDS} rounds of SIGTERM and a restart at once, not waiting for the old one to exit: each keeps every record`, async () => {
    const project = await tempProject();
    const kept: string[] = [];
    let current = await serve(project);
    for (let round = 0; round < ROUNDS; round++) {
      kept.push(await create(current.url, 100 + round));
      const exited = new Promise<number | null>((resolve) => current.child.once('exit', resolve));
      current.child.kill('SIGTERM');
      const next = await serve(project); // waits for the index only while the old gateway flushes it
      expect(await exited).toBe(0);
      expect(await search(next.url)).toEqual([...kept].sort());
      current = next;
    }
  });

  it('a second live gateway on the same index is refused at once, naming how to reach the first', async () => {
    const project = await tempProject();
    const first = await serve(project);
    const second = spawn(process.execPath, [BIN, 'serve', project, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    spawned.push(second);
    let err = '';
    second.stderr!.on('data', (d) => (err += d));
    expect(await new Promise((resolve) => second.once('exit', resolve))).toBe(1);
    expect(err).toContain(`in use by the gateway at ${first.url}`);
    expect(err).toContain(`portico get --url ${first.url}`);
    // and the first one still serves
    expect((await api({ url: first.url }, 'GET', '/v1/health')).status).toBe(200);
  });

  it('16 clients creating records through a SIGTERM and a restart: no acknowledged create is lost', async () => {
    const project = await tempProject();
    let { child, url } = await serve(project);
    const acknowledged: string[] = [];
    let stop = false;
    let n = 0;
    const clients = Array.from({ length: 16 }, async () => {
      while (!stop) {
        const start = n++;
        const res = await fetch(`${url}/v1/interfaces`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ target: 'counter', version: [{ start: 10_000 + start }] }),
        }).catch(() => undefined);
        if (res?.status === 200) acknowledged.push(((await res.json()) as { uuid: string }).uuid);
        else await new Promise((resolve) => setTimeout(resolve, 10));
      }
    });
    await expect.poll(() => acknowledged.length, { timeout: 30_000 }).toBeGreaterThan(100);
    child.kill('SIGTERM');
    ({ child, url } = await serve(project));
    await expect.poll(() => acknowledged.length, { timeout: 30_000 }).toBeGreaterThan(300);
    stop = true;
    await Promise.all(clients);
    const stored = new Set(await search(url));
    expect(stored.size).toBeGreaterThanOrEqual(new Set(acknowledged).size);
    expect([...new Set(acknowledged)].filter((uuid) => !stored.has(uuid))).toEqual([]);
  });
});

/** A widget whose state is a number and a blob made from it: a torn or mixed state shows. */
const BOARD = `
from portico import Interface

class Board(Interface):
    def __init__(self):
        self.n = -1
        self.blob = b""

    def widget_state(self):
        return {"n": self.n, "blob": self.blob}

    def widget_update(self, changes):
        self.n = int(changes["n"])
        self.blob = bytes(changes["blob"])
`;

const BLOB_BYTES = 256 * 1024;

describe('widget state across a gateway SIGKILL', { timeout: 120_000 }, () => {
  it('each restart finds the whole state of one change made before the kill, never a torn or mixed one', async () => {
    const project = await tempProject({ 'board.py': BOARD });
    let last = -1;
    for (let round = 0; round < 4; round++) {
      const { child, url } = await serve(project);
      const ws = await Client.open(url);
      await ws.connect('board', { uuid: 'board-under-fire' });
      const restored = await ws.request({ type: 'widget_get' });
      const { n } = restored.payload.state;
      const blob = restored.payload.buffers?.[0] ? Buffer.from(restored.payload.buffers[0], 'base64') : Buffer.alloc(0);
      if (round > 0) {
        // one of the changes the last round sent: at least the one answered before the kill (the
        // worker writes what is pending when the gateway's pipe closes), whole
        expect(last).toBeLessThan((round - 1) * 1000);
        expect(n).toBeGreaterThanOrEqual((round - 1) * 1000 + 20);
        expect(n).toBeLessThan((round - 1) * 1000 + 60);
        expect(blob.length).toBe(BLOB_BYTES);
        expect(blob.every((b) => b === n % 251)).toBe(true);
      }
      last = n;
      // Changes as fast as the socket takes them; the kill lands while some are in flight.
      const first = round * 1000;
      for (let i = 0; i < 60; i++) {
        const value = first + i;
        ws.send({ type: 'widget_set', changes: { n: value, blob: null }, buffer_paths: [['blob']], buffers: [Buffer.alloc(BLOB_BYTES, value % 251).toString('base64')] });
      }
      await ws.waitFor((f) => f.type === 'widget_change' && f.payload.changes.n >= first + 20, 30_000);
      child.kill('SIGKILL');
      await new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('exit', resolve)));
    }
  });
});

describe('graceful shutdown', { timeout: 60_000 }, () => {
  it('calls, a stream and an upload in flight each end with a clear outcome; sockets close with 1001; no partial file', async () => {
    const project = await tempProject();
    const g = await gateway({ project });
    const calls = await Client.open(g.url);
    await calls.connect('slow');
    const short = calls.send({ type: 'call', method: 'wait', args: [0.3] }); // finishes within the drain
    const long = calls.send({ type: 'call', method: 'wait', args: [30] }); // does not: cancelled
    const streams = await Client.open(g.url);
    await streams.connect('streamer');
    const stream = streams.send({ type: 'call', method: 'aticks', args: [1000, 0.05] });
    await streams.waitFor((f) => f.id === stream && f.type === 'stream');
    const uploads = await Client.open(g.url);
    const upload = await uploads.connect('files');
    uploads.send({ type: 'chunk_start', id: 'up', mode: 'write', path: 'big.bin' });
    uploads.ws.send(Buffer.alloc(64 * 1024, 7));
    const closes = [calls, streams, uploads].map((c) => new Promise<number>((resolve) => c.ws.once('close', (code) => resolve(code))));
    const rest = fetch(`${g.url}/v1/interfaces/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ target: 'slow', method: 'wait', args: [0.3] }),
    });
    await new Promise((resolve) => setTimeout(resolve, 100));

    await g.close({ drainMs: 1500 });
    expect(await Promise.all(closes)).toEqual([1001, 1001, 1001]);
    expect(calls.replies(short)).toEqual([expect.objectContaining({ type: 'result', id: short })]);
    expect(calls.replies(long).filter((f) => f.type === 'result')).toEqual([]); // cut, never a made-up result
    expect(streams.replies(stream).some((f) => f.type === 'stream' && f.final)).toBe(false);
    expect(((await (await rest).json()) as { payload: number }).payload).toBeGreaterThanOrEqual(0.3);
    // the upload was cut: nothing of it is left in the interface's folder
    const dir = path.join(project, '.portico/interfaces', upload.payload.uuid);
    expect((await readdir(dir).catch(() => [])).filter((f) => f.includes('big.bin'))).toEqual([]);
    // a new connection is refused once the gateway stopped
    await expect(fetch(`${g.url}/v1/health`)).rejects.toThrow();
  });

  it('SIGTERM: the CLI drains, exits 0 and says so; a second signal stops at once', async () => {
    const project = await tempProject();
    const { child, url } = await serve(project);
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    const client = await Client.open(url);
    await client.connect('slow');
    client.send({ type: 'call', method: 'wait', args: [60] });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await expect.poll(() => err).toContain('SIGTERM, stopping');
    child.kill('SIGTERM');
    expect(await exited).toBe(143);
    expect(err).toContain('SIGTERM again, stopping now');
  });
});
