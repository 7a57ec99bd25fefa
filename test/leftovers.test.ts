/**
 * Nothing is left behind by a gateway killed mid-upload: the next gateway to open the project
 * removes the bytes of a write that never reached chunk_end and cuts an append back to the bytes
 * the file had before it, so the folder holds only what clients were told was written.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanup, Client, ROOT, tempProject, type Frame } from './helpers.js';
import { startPostgres, type TestPostgres } from './support/postgres.js';

const BIN = path.join(ROOT, 'packages/server/bin/portico.js');
const MiB = 1024 * 1024;
const spawned: ChildProcess[] = [];
let postgres: TestPostgres | undefined;

afterAll(async () => {
  for (const child of spawned) child.kill('SIGKILL');
  await postgres?.close();
  await cleanup();
});

const BLOBS = `
from portico import Interface


class Blobs(Interface):
    """Takes uploads."""

    class Config:
        name: str = "default"
`;

/** `portico serve` as a child process (so that it can be killed with SIGKILL); resolves once it serves. */
function serve(project: string, ...args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, 'serve', project, '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  spawned.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /API (http:\/\/\S+)\/v1/.exec(out);
      if (m) resolve({ child, url: m[1]! });
    });
    child.stderr!.on('data', (d) => (out += d));
    child.once('exit', (code) => reject(new Error(`the gateway exited (${code}) before serving:\n${out}`)));
  });
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

async function upload(client: Client, file: string, data: Buffer, mode: 'write' | 'append' = 'write'): Promise<Frame> {
  const id = client.send({ type: 'chunk_start', path: file, mode });
  client.ws.send(data);
  client.send({ type: 'chunk_end', id });
  return client.waitFor((f) => f.id === id && (f.type === 'chunk_done' || f.type === 'error'));
}

/** Every file under the project's `.portico/` an upload leaves while it runs (temp files, markers), relative. */
async function uploadFiles(project: string): Promise<Array<{ name: string; size: number }>> {
  const root = path.join(project, '.portico');
  const found: Array<{ name: string; size: number }> = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (/\.(upload|append|write)$/.test(entry.name)) found.push({ name: path.relative(root, full), size: (await stat(full)).size });
    }
  };
  await walk(root);
  return found;
}

/** Polls `check` (the gateway writes as bytes arrive) for up to 10 s. */
async function until(check: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

describe('a gateway killed with SIGKILL in the middle of uploads', () => {
  it('leaves, once the next gateway opened the project, no temp file and the append target exactly as it was; new uploads work', async () => {
    const project = await tempProject({ 'blobs.py': BLOBS }, { demo: false });
    const first = await serve(project);
    const writer = await Client.open(first.url);
    const { payload } = await writer.connect('blobs');
    const dir = path.join(project, '.portico/interfaces', payload.uuid);
    const kept = randomBytes(4096);
    const tail = randomBytes(12345);
    expect((await upload(writer, 'keep.bin', kept)).type).toBe('chunk_done');
    expect((await upload(writer, 'tail.bin', tail)).type).toBe('chunk_done');
    const appender = await Client.open(first.url);
    await appender.connect('blobs');

    // Two uploads under way, neither ever reaching chunk_end: a write replacing keep.bin, an append to tail.bin.
    writer.send({ type: 'chunk_start', path: 'keep.bin', mode: 'write' });
    appender.send({ type: 'chunk_start', path: 'tail.bin', mode: 'append' });
    for (let i = 0; i < 4; i++) {
      writer.ws.send(randomBytes(MiB));
      appender.ws.send(randomBytes(MiB));
    }
    expect(await until(async () => (await uploadFiles(project)).some((f) => f.name.endsWith('.upload') && f.size > 0))).toBe(true);
    expect(await until(async () => (await stat(path.join(dir, 'tail.bin'))).size > tail.length)).toBe(true);
    await killed(first.child);
    // What the killed gateway left on disk: partial bytes in a temp file and at the end of tail.bin.
    expect((await uploadFiles(project)).length).toBeGreaterThan(0);
    expect((await stat(path.join(dir, 'tail.bin'))).size).toBeGreaterThan(tail.length);

    const second = await serve(project);
    expect(await uploadFiles(project)).toEqual([]);
    expect((await readdir(dir)).sort()).toEqual(['interface.json', 'keep.bin', 'tail.bin']);
    expect(await readFile(path.join(dir, 'keep.bin'))).toEqual(kept);
    expect(await readFile(path.join(dir, 'tail.bin'))).toEqual(tail);

    const client = await Client.open(second.url);
    await client.connect('blobs');
    const more = randomBytes(777);
    expect(await upload(client, 'tail.bin', more, 'append')).toMatchObject({ type: 'chunk_done', payload: { bytes_written: 777, mode: 'append' } });
    expect(await readFile(path.join(dir, 'tail.bin'))).toEqual(Buffer.concat([tail, more]));
    const fresh = randomBytes(2048);
    expect(await upload(client, 'keep.bin', fresh)).toMatchObject({ type: 'chunk_done', payload: { bytes_written: 2048, mode: 'write' } });
    expect(await readFile(path.join(dir, 'keep.bin'))).toEqual(fresh);
    expect(await uploadFiles(project)).toEqual([]);
    client.close();
  }, 60_000);
});

describe('gateways sharing a folder through PostgreSQL', () => {
  it("a gateway opening the project keeps a live gateway's upload, and undoes a killed one's", async () => {
    postgres = await startPostgres();
    const project = await tempProject({ 'blobs.py': BLOBS }, { demo: false });
    const first = await serve(project, '--store', postgres.url);
    const client = await Client.open(first.url);
    const { payload } = await client.connect('blobs');
    const dir = path.join(project, '.portico/interfaces', payload.uuid);
    const tail = randomBytes(1000);
    expect((await upload(client, 'tail.bin', tail)).type).toBe('chunk_done');

    // A write under way on the first gateway while a second one opens the project: it stays, and completes.
    const id = client.send({ type: 'chunk_start', path: 'live.bin', mode: 'write' });
    const part = randomBytes(MiB);
    client.ws.send(part);
    expect(await until(async () => (await uploadFiles(project)).some((f) => f.size === MiB))).toBe(true);
    const second = await serve(project, '--store', postgres.url);
    expect((await uploadFiles(project)).map((f) => f.size)).toEqual([MiB]);
    client.send({ type: 'chunk_end', id });
    expect(await client.waitFor((f) => f.id === id)).toMatchObject({ type: 'chunk_done', payload: { bytes_written: MiB } });
    expect(await readFile(path.join(dir, 'live.bin'))).toEqual(part);

    // An append cut by SIGKILL of the first gateway: the second, open already, leaves it; the next gateway to open the project cuts it back.
    client.send({ type: 'chunk_start', path: 'tail.bin', mode: 'append' });
    client.ws.send(randomBytes(MiB));
    expect(await until(async () => (await stat(path.join(dir, 'tail.bin'))).size > tail.length)).toBe(true);
    await killed(first.child);
    await serve(project, '--store', postgres.url);
    expect(await uploadFiles(project)).toEqual([]);
    expect(await readFile(path.join(dir, 'tail.bin'))).toEqual(tail);
    const other = await Client.open(second.url);
    await other.connect('blobs');
    expect((await upload(other, 'tail.bin', Buffer.from('!'), 'append')).type).toBe('chunk_done');
    expect(await readFile(path.join(dir, 'tail.bin'))).toEqual(Buffer.concat([tail, Buffer.from('!')]));
    other.close();
  }, 120_000);
});
