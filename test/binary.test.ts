/**
 * The binary data plane over /v1/interfaces/ws: uploads (write, append) into an interface's
 * folder and reads through its read hook, byte-exact, confined, bounded, and leaving nothing
 * partial behind when a socket goes away.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, Client, cleanup, gateway, tempProject, type Frame } from './helpers.js';

const MiB = 1024 * 1024;

const BLOBS = `
import os
from portico import Interface, NotFound


class Blobs(Interface):
    """Stores uploads and serves them back through read()."""

    class Config:
        name: str = "default"

    def read(self, params):
        path = self.local_directory(params["name"])
        how = params.get("as", "file")
        if how == "counted":
            return self.counted(params)
        if params.get("missing"):
            raise NotFound("no such blob: " + params["name"])
        if how == "bytes":
            with open(path, "rb") as f:
                return f.read()
        if how == "pieces":
            def pieces():
                with open(path, "rb") as f:
                    while True:
                        piece = f.read(params.get("piece", 100_000))
                        if not piece:
                            return
                        yield piece
            return pieces()
        return open(path, "rb")

    def counted(self, params):
        """read() of params["mib"] generated MiB, counting what the generator has produced."""
        self.produced = 0
        block = bytes(range(256)) * 4096
        for _ in range(params["mib"]):
            self.produced += 1
            yield block

    def produced_so_far(self):
        return getattr(self, "produced", 0)

    def size(self, name):
        return os.path.getsize(self.local_directory(name))
`;

let project: string;
let url: string;

beforeAll(async () => {
  project = await tempProject({ 'blobs.py': BLOBS });
  ({ url } = await gateway({ project, uploadMax: 300 * MiB }));
});
afterAll(cleanup);

function sha(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

async function connected(target = 'blobs', version: unknown[] = []): Promise<{ client: Client; dir: string }> {
  const client = await Client.open(url);
  const reply = await client.connect(target, { version });
  return { client, dir: path.join(project, '.portico/interfaces', reply.payload.uuid) };
}

/** Sends bytes as binary frames, waiting whenever the socket's queue grows (a well-behaved client). */
async function sendBytes(client: Client, data: Buffer, frameSize = MiB): Promise<void> {
  for (let offset = 0; offset < data.length; offset += frameSize) {
    const part = data.subarray(offset, offset + frameSize);
    if (client.ws.bufferedAmount > 8 * MiB) await new Promise<void>((resolve, reject) => client.ws.send(part, (err) => (err ? reject(err) : resolve())));
    else client.ws.send(part);
  }
}

async function upload(client: Client, file: string, data: Buffer, mode: 'write' | 'append' = 'write', frameSize = MiB): Promise<Frame> {
  const id = client.send({ type: 'chunk_start', path: file, mode });
  await sendBytes(client, data, frameSize);
  client.send({ type: 'chunk_end', id });
  return client.waitFor((f) => f.id === id && (f.type === 'chunk_done' || f.type === 'error'), 120_000);
}

/** Reads through the hook; returns the terminal frame and the bytes' hash and length. */
async function read(client: Client, params: Record<string, unknown>): Promise<{ reply: Frame; sha: string; length: number; frames: number; largest: number }> {
  const hash = createHash('sha256');
  let length = 0;
  let frames = 0;
  let largest = 0;
  client.onBinary = (data) => {
    hash.update(data);
    length += data.length;
    frames += 1;
    largest = Math.max(largest, data.length);
  };
  const reply = await client.request({ type: 'chunk_start', mode: 'read', params });
  return { reply, sha: hash.digest('hex'), length, frames, largest };
}

async function visibleFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n !== 'interface.json').sort();
}

describe('upload and read round trips', () => {
  it.each([
    ['empty', 0],
    ['one byte', 1],
    ['one block', MiB],
    ['one block and a byte', MiB + 1],
    ['a block less a byte', MiB - 1],
  ])('%s: the file on disk and the bytes read back are exact', async (_name, size) => {
    const { client, dir } = await connected();
    const data = randomBytes(size);
    const done = await upload(client, `sizes/${size}.bin`, data);
    expect(done).toMatchObject({ type: 'chunk_done', payload: { path: `sizes/${size}.bin`, bytes_written: size, mode: 'write' } });
    expect(sha(await readFile(path.join(dir, `sizes/${size}.bin`)))).toBe(sha(data));
    for (const how of ['file', 'bytes', 'pieces']) {
      const got = await read(client, { name: `sizes/${size}.bin`, as: how });
      expect(got.reply).toMatchObject({ type: 'chunk_done', payload: { bytes_sent: size } });
      expect(got.length).toBe(size);
      expect(got.sha).toBe(sha(data));
      expect(got.largest).toBeLessThanOrEqual(MiB);
    }
    client.close();
  });

  it('256 MiB goes up and comes back byte-exact, in bounded frames', async () => {
    const { client, dir } = await connected('blobs', [{ name: 'big' }]);
    const data = randomBytes(256 * MiB);
    const done = await upload(client, 'big.bin', data); // 1 MiB frames: the disk falls behind and the socket pauses and resumes
    expect(done.payload).toEqual({ path: 'big.bin', bytes_written: 256 * MiB, mode: 'write' });
    expect((await stat(path.join(dir, 'big.bin'))).size).toBe(256 * MiB);
    expect(sha(await readFile(path.join(dir, 'big.bin')))).toBe(sha(data));
    const got = await read(client, { name: 'big.bin' });
    expect(got.reply.payload).toEqual({ bytes_sent: 256 * MiB });
    expect(got.sha).toBe(sha(data));
    expect(got.frames).toBe(256);
    expect(got.largest).toBe(MiB);
    client.close();
  }, 180_000);

  it('a read follows a slow client: the generator waits while the client is not reading, then everything arrives', async () => {
    const { client } = await connected('blobs', [{ name: 'slow-reader' }]);
    const uuid = client.frames.find((f) => f.type === 'connected')!.payload.uuid;
    const produced = async () => (await api({ url }, 'POST', '/v1/interfaces/call', { target: uuid, method: 'produced_so_far' })).body.payload as number;
    client.ws.pause(); // the client stops reading its socket
    const id = client.send({ type: 'chunk_start', mode: 'read', params: { name: 'x', as: 'counted', mib: 256 } });
    // Give the worker time to run ahead if nothing held it back, then look.
    let stalled = 0;
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 100));
      stalled = await produced();
    }
    // Bounded by the socket buffers and the bridge window, far below the 256 MiB asked for.
    expect(stalled).toBeGreaterThan(0);
    expect(stalled).toBeLessThan(64);
    let length = 0;
    client.onBinary = (data) => (length += data.length);
    client.ws.resume();
    const done = await client.waitFor((f) => f.id === id, 120_000);
    expect(done).toMatchObject({ type: 'chunk_done', payload: { bytes_sent: 256 * MiB } });
    expect(length).toBe(256 * MiB);
    expect(await produced()).toBe(256);
    client.close();
  }, 180_000);

  it('append adds to what write left, and counts only its own bytes', async () => {
    const { client, dir } = await connected();
    const first = randomBytes(1000);
    const second = randomBytes(3 * MiB + 7);
    await upload(client, 'log.bin', first);
    const done = await upload(client, 'log.bin', second, 'append', 64 * 1024);
    expect(done.payload).toEqual({ path: 'log.bin', bytes_written: second.length, mode: 'append' });
    expect(sha(await readFile(path.join(dir, 'log.bin')))).toBe(sha(Buffer.concat([first, second])));
    // write replaces the whole file
    const third = randomBytes(10);
    await upload(client, 'log.bin', third);
    expect(await readFile(path.join(dir, 'log.bin'))).toEqual(third);
    // append to a file that does not exist yet creates it
    await upload(client, 'fresh.bin', first, 'append');
    expect(await readFile(path.join(dir, 'fresh.bin'))).toEqual(first);
    client.close();
  });

  it('ping and call keep working between binary frames of an upload', async () => {
    const { client, dir } = await connected();
    const id = client.send({ type: 'chunk_start', path: 'mixed.bin' });
    client.ws.send(Buffer.from('abc'));
    const pong = await client.request({ type: 'ping' });
    expect(pong.type).toBe('pong');
    client.ws.send(Buffer.from('def'));
    const result = await client.request({ type: 'call', method: 'size', args: ['sizes/1.bin'] });
    expect(result).toMatchObject({ type: 'result', payload: 1 });
    client.send({ type: 'chunk_end', id });
    const done = await client.waitFor((f) => f.id === id);
    expect(done.payload.bytes_written).toBe(6);
    expect((await readFile(path.join(dir, 'mixed.bin'))).toString()).toBe('abcdef');
    client.close();
  });

  it('two sockets upload to two interfaces at once, each byte-exact', async () => {
    const a = await connected('blobs', [{ name: 'a' }]);
    const b = await connected('blobs', [{ name: 'b' }]);
    expect(a.dir).not.toBe(b.dir);
    const da = randomBytes(20 * MiB);
    const db = randomBytes(20 * MiB + 3);
    const [ra, rb] = await Promise.all([upload(a.client, 'x.bin', da, 'write', 256 * 1024), upload(b.client, 'x.bin', db, 'write', 256 * 1024)]);
    expect(ra.payload.bytes_written).toBe(da.length);
    expect(rb.payload.bytes_written).toBe(db.length);
    expect(sha(await readFile(path.join(a.dir, 'x.bin')))).toBe(sha(da));
    expect(sha(await readFile(path.join(b.dir, 'x.bin')))).toBe(sha(db));
  });
});

describe('an upload that never reaches chunk_end', () => {
  /** Starts an upload, waits until bytes of it are on disk, then drops the socket. */
  async function cutOff(file: string, mode: 'write' | 'append'): Promise<string> {
    const { client, dir } = await connected('blobs', [{ name: 'cut' }]);
    const before = await stat(path.join(dir, file)).then((s) => s.size, () => 0);
    client.send({ type: 'chunk_start', path: file, mode });
    await sendBytes(client, randomBytes(5 * MiB));
    const written = async () => {
      // A write's temp file is staged in the project's .portico/uploads/.
      const names = await readdir(path.join(dir, '../../uploads')).catch(() => [] as string[]);
      if (mode === 'write') return names.some((n) => n.endsWith('.upload'));
      return (await stat(path.join(dir, file)).then((s) => s.size, () => 0)) > before;
    };
    await settle(written);
    expect(await written()).toBe(true);
    client.ws.terminate();
    return dir;
  }

  /** Temp files of writes: beside the target (none any more) or staged in the project's .portico/uploads/. */
  async function tempFiles(dir: string): Promise<string[]> {
    const names = [...(await readdir(dir)), ...(await readdir(path.join(dir, '../../uploads')).catch(() => [] as string[]))];
    return names.filter((n) => n.endsWith('.upload'));
  }

  async function settle(check: () => Promise<boolean>): Promise<void> {
    for (let i = 0; i < 100 && !(await check()); i++) await new Promise((r) => setTimeout(r, 50));
  }

  it('write: the old content stays under the name, and no temp file remains', async () => {
    const { client, dir } = await connected('blobs', [{ name: 'cut' }]);
    const original = randomBytes(4096);
    await upload(client, 'keep.bin', original);
    client.close();
    await cutOff('keep.bin', 'write');
    await settle(async () => (await tempFiles(dir)).length === 0);
    expect(await readFile(path.join(dir, 'keep.bin'))).toEqual(original);
    expect(await tempFiles(dir)).toEqual([]);
  });

  it('write of a new file: nothing appears under the name', async () => {
    const dir = await cutOff('never.bin', 'write');
    await settle(async () => (await tempFiles(dir)).length === 0);
    expect(existsSync(path.join(dir, 'never.bin'))).toBe(false);
    expect(await tempFiles(dir)).toEqual([]);
  });

  it('append: the file is truncated back to its size before the upload (no torn tail)', async () => {
    const { client, dir } = await connected('blobs', [{ name: 'cut' }]);
    const original = randomBytes(12345);
    await upload(client, 'tail.bin', original);
    client.close();
    await cutOff('tail.bin', 'append');
    await settle(async () => (await stat(path.join(dir, 'tail.bin'))).size === original.length);
    expect(await readFile(path.join(dir, 'tail.bin'))).toEqual(original);
    // and the name is free again for the next upload
    const next = await connected('blobs', [{ name: 'cut' }]);
    const done = await upload(next.client, 'tail.bin', Buffer.from('z'), 'append');
    expect(done.type).toBe('chunk_done');
    expect((await readFile(path.join(dir, 'tail.bin'))).length).toBe(original.length + 1);
  });
});

describe('confinement and bounds', () => {
  it.each([['../x'], ['../../outside.bin'], ['/etc/x'], ['a/../../x'], ['a//b'], ['./x'], ['C:/x'], ['interface.json']])(
    "refuses '%s' with forbidden and writes nothing",
    async (bad) => {
      const { client, dir } = await connected('blobs', [{ name: 'confined' }]);
      const before = await readdir(path.dirname(dir));
      const reply = await upload(client, bad, Buffer.from('evil'));
      expect(reply).toMatchObject({ type: 'error', payload: { code: 'forbidden' } });
      expect(await readdir(path.dirname(dir))).toEqual(before);
      expect(existsSync('/etc/x')).toBe(false);
      // the socket stays usable, and the bytes sent after the refusal raised no flood of errors
      expect((await client.request({ type: 'ping' })).type).toBe('pong');
      expect(client.frames.filter((f) => f.type === 'error')).toHaveLength(1);
      client.close();
    },
  );

  it('refuses symlinks inside the folder that lead outside it, as folder or as file', async () => {
    const outside = await tempProject({}, { demo: false });
    const { client, dir } = await connected('blobs', [{ name: 'links' }]);
    await mkdir(dir, { recursive: true });
    await symlink(outside, path.join(dir, 'out'));
    await writeFile(path.join(outside, 'target.bin'), 'original');
    await symlink(path.join(outside, 'target.bin'), path.join(dir, 'file-out.bin'));
    for (const bad of ['out/new.bin', 'out/sub/new.bin', 'file-out.bin']) {
      const reply = await upload(client, bad, Buffer.from('evil'));
      expect(reply).toMatchObject({ type: 'error', payload: { code: 'forbidden' } });
    }
    expect((await readdir(outside)).sort()).toEqual(['target.bin']);
    expect(await readFile(path.join(outside, 'target.bin'), 'utf8')).toBe('original');
    // a link that stays inside is followed
    await mkdir(path.join(dir, 'real'));
    await symlink(path.join(dir, 'real'), path.join(dir, 'alias'));
    const ok = await upload(client, 'alias/in.bin', Buffer.from('fine'));
    expect(ok.type).toBe('chunk_done');
    expect(await readFile(path.join(dir, 'real/in.bin'), 'utf8')).toBe('fine');
    // a read through the hook of a missing file answers not_found
    const missing = await read(client, { name: 'nothing-here.bin' });
    expect(missing.reply).toMatchObject({ type: 'error', payload: { code: 'not_found' } });
    const declared = await read(client, { name: 'x', missing: true });
    expect(declared.reply).toMatchObject({ type: 'error', payload: { code: 'not_found', message: expect.stringContaining('no such blob') } });
    client.close();
  });

  it('an upload over the bound answers payload_too_large and keeps nothing', async () => {
    const other = await tempProject({ 'blobs.py': BLOBS });
    const small = await gateway({ project: other, uploadMax: 64 * 1024 });
    const client = await Client.open(small.url);
    const { payload } = await client.connect('blobs', { version: [{ name: 'bounded' }] });
    const dir = path.join(other, '.portico/interfaces', payload.uuid);
    await upload(client, 'fits.bin', randomBytes(64 * 1024));
    const existing = await readFile(path.join(dir, 'fits.bin'));
    for (const mode of ['write', 'append'] as const) {
      const reply = await upload(client, 'fits.bin', randomBytes(200 * 1024), mode, 16 * 1024);
      expect(reply).toMatchObject({ type: 'error', payload: { code: 'payload_too_large' } });
      expect(await readFile(path.join(dir, 'fits.bin'))).toEqual(existing);
    }
    const fresh = await upload(client, 'new-too-big.bin', randomBytes(100 * 1024));
    expect(fresh.payload.code).toBe('payload_too_large');
    for (let i = 0; i < 50 && (await readdir(dir)).some((n) => n.endsWith('.upload')); i++) await new Promise((r) => setTimeout(r, 50));
    expect(await visibleFiles(dir)).toEqual(['fits.bin']);
    expect((await readdir(dir)).filter((n) => n.endsWith('.upload'))).toEqual([]);
    expect((await client.request({ type: 'ping' })).type).toBe('pong');
  });
});

describe('protocol misuse answers a stable code and the socket stays usable', () => {
  it('binary frames without an upload, a second chunk_start, a chunk_end with another id, a chunk_end with none', async () => {
    const { client, dir } = await connected('blobs', [{ name: 'misuse' }]);
    client.ws.send(Buffer.from('stray'));
    const stray = await client.waitFor((f) => f.type === 'error');
    expect(stray.payload.code).toBe('no_active_upload');

    const lone = await client.request({ type: 'chunk_end', id: 'nothing' });
    expect(lone.payload.code).toBe('no_active_upload');

    const id = client.send({ type: 'chunk_start', path: 'm.bin' });
    client.ws.send(Buffer.from('12'));
    const second = await client.request({ type: 'chunk_start', path: 'other.bin' });
    expect(second.payload.code).toBe('transfer_active');
    const read = await client.request({ type: 'chunk_start', mode: 'read', params: { name: 'm.bin' } });
    expect(read.payload.code).toBe('transfer_active');
    const wrong = await client.request({ type: 'chunk_end', id: 'not-it' });
    expect(wrong.payload.code).toBe('upload_id_mismatch');
    // the upload is still active and completes
    client.ws.send(Buffer.from('34'));
    client.send({ type: 'chunk_end', id });
    const done = await client.waitFor((f) => f.id === id);
    expect(done).toMatchObject({ type: 'chunk_done', payload: { bytes_written: 4 } });
    expect(await readFile(path.join(dir, 'm.bin'), 'utf8')).toBe('1234');
    expect(existsSync(path.join(dir, 'other.bin'))).toBe(false);

    const noPath = await client.request({ type: 'chunk_start', mode: 'write' });
    expect(noPath.payload).toMatchObject({ code: 'invalid_frame', issues: [{ path: 'path' }] });
    const badMode = await client.request({ type: 'chunk_start', mode: 'delete', path: 'x' });
    expect(badMode.payload.code).toBe('invalid_frame');
    client.close();
  });

  it('an upload refused at any step is answered once: one error for its id, none for its bytes or its chunk_end', async () => {
    const outside = await tempProject({}, { demo: false });
    const { client, dir } = await connected('blobs', [{ name: 'once' }]);
    await mkdir(path.join(dir, 'a-folder'), { recursive: true });
    await symlink(outside, path.join(dir, 'out'));
    /** chunk_start, two binary frames and chunk_end in one go (the chunk_end arrives before the path is refused), then a ping. */
    const refused = async (on: Client, start: Record<string, unknown>): Promise<Frame[]> => {
      const id = on.send({ type: 'chunk_start', ...start });
      on.ws.send(Buffer.from('evil'));
      on.ws.send(Buffer.from('more'));
      on.send({ type: 'chunk_end', id });
      await on.waitFor((f) => f.id === id);
      // Anything owed to this upload comes before the pong (the pong is answered at once, the error once the upload is undone).
      await new Promise((r) => setTimeout(r, 300));
      expect((await on.request({ type: 'ping' })).type).toBe('pong');
      return on.frames.filter((f) => f.id === id || (f.type === 'error' && f.id === undefined));
    };
    for (const [start, code] of [
      [{ path: 'out/new.bin', mode: 'write' }, 'forbidden'], // a symlink inside the folder leading outside
      [{ path: 'out/new.bin', mode: 'append' }, 'forbidden'],
      [{ path: 'a-folder', mode: 'write' }, 'conflict'], // not a regular file
      [{ path: '../x', mode: 'write' }, 'forbidden'], // refused by its path alone
      [{ mode: 'write' }, 'invalid_frame'], // an invalid chunk_start
    ] as const) {
      const frames = await refused(client, start);
      expect(frames, JSON.stringify(start)).toEqual([expect.objectContaining({ type: 'error', payload: expect.objectContaining({ code }) })]);
    }
    expect(await readdir(outside)).toEqual([]);
    // before connect: not_connected, once
    const early = await Client.open(url);
    expect(await refused(early, { path: 'x.bin', mode: 'write' })).toEqual([expect.objectContaining({ type: 'error', payload: expect.objectContaining({ code: 'not_connected' }) })]);
    // the socket goes on: the next upload works
    const ok = await upload(client, 'after.bin', Buffer.from('fine'));
    expect(ok.type).toBe('chunk_done');
    client.close();
    early.close();
  });

  it('chunk_start before connect answers not_connected', async () => {
    const client = await Client.open(url);
    const reply = await client.request({ type: 'chunk_start', path: 'x.bin' });
    expect(reply.payload.code).toBe('not_connected');
    const readReply = await client.request({ type: 'chunk_start', mode: 'read', params: {} });
    expect(readReply.payload.code).toBe('not_connected');
    client.close();
  });

  it('an interface without read() answers read_unsupported', async () => {
    const { client } = await connected('counter');
    const reply = await client.request({ type: 'chunk_start', mode: 'read', params: {} });
    expect(reply.payload.code).toBe('read_unsupported');
    client.close();
  });
});
