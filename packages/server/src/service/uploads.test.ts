import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { appendFile, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../config/constants.js';
import { recoverUploads } from '../store/upload-staging.js';
import { Upload } from './uploads.js';

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('Upload backpressure', () => {
  it('a transport that pauses above the high-water mark is always resumed, and every byte lands in order', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'portico-upload-'));
    dirs.push(root);
    let paused = false;
    let wake: (() => void) | undefined;
    const upload = new Upload(Promise.resolve({ root, staging: path.join(root, '.staging') }), 'data.bin', 'write', {
      maxBytes: 1 << 30,
      highWater: 256 * 1024,
      onDrain: () => {
        paused = false;
        wake?.();
      },
      onFail: (error) => {
        throw error;
      },
    });
    const hash = createHash('sha256');
    let pauses = 0;
    for (let i = 0; i < 2000; i++) {
      if (paused) {
        pauses++;
        // A stuck transport is the failure this test is about: give up after 5 s instead of hanging.
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`never resumed after ${i} chunks`)), 5000);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      const chunk = randomBytes(1 + (i % 7) * 9000);
      hash.update(chunk);
      upload.write(chunk);
      if (upload.overHighWater) paused = true;
    }
    const done = await upload.finish();
    expect(pauses).toBeGreaterThan(0);
    expect(done.bytes_written).toBe(upload.received);
    expect(createHash('sha256').update(await readFile(path.join(root, 'data.bin'))).digest('hex')).toBe(hash.digest('hex'));
  });
});

describe('Upload refused at once', () => {
  it('a missing path fails the upload with invalid_argument (the frame contract refuses it before), and a root that never comes (no connect) is no unhandled rejection', async () => {
    const failures: string[] = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      new Upload(Promise.reject(new Error('Send connect before chunk_start')), undefined, 'write', {
        maxBytes: 1 << 20,
        highWater: 1 << 16,
        onDrain: () => undefined,
        onFail: (error) => failures.push(error.code),
      });
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(failures).toEqual(['invalid_argument']);
    expect(unhandled).toEqual([]);
  });
});

describe('recoverUploads', () => {
  const quiet = { maxBytes: 1 << 20, highWater: 1 << 16, onDrain: () => undefined, onFail: () => undefined };

  /** A project with an interface folder, and an upload of this process in progress in it (a live gateway's). */
  async function project() {
    const dir = await mkdtemp(path.join(tmpdir(), 'portico-recover-'));
    dirs.push(dir);
    const root = path.join(dir, '.portico/interfaces/abc');
    const staging = path.join(dir, '.portico/uploads');
    await mkdir(root, { recursive: true });
    const running = new Upload(Promise.resolve({ root, staging }), 'running.bin', 'write', quiet);
    running.write(Buffer.from('in progress'));
    let names: string[] = [];
    for (let i = 0; i < 100 && !names.length; i++) {
      names = (await readdir(staging).catch(() => [])).filter((n) => n.endsWith('.upload'));
      if (!names.length) await new Promise((r) => setTimeout(r, 10));
    }
    expect(names).toHaveLength(1);
    // `<pid>-<pid namespace>@<host>.<random>.upload`: this host's tag, to name entries of other processes of it.
    const tag = names[0]!.slice(names[0]!.indexOf('-'), names[0]!.lastIndexOf('.', names[0]!.lastIndexOf('.') - 1));
    return { dir, root, staging, running, own: names[0]!, tag };
  }

  /** Writes `original` + `tail` to `file`, with the marker an append of `tail` by `owner` would have left. */
  async function tornAppend(staging: string, file: string, original: Buffer, owner: string): Promise<string> {
    await writeFile(file, original);
    const info = await stat(file, { bigint: true });
    await appendFile(file, 'torn tail');
    const entry = `${owner}.${randomBytes(6).toString('hex')}.append`;
    await writeFile(path.join(staging, entry), JSON.stringify({ file: path.relative(staging, file), size: original.length, dev: String(info.dev), ino: String(info.ino) }));
    return entry;
  }

  const deadPid = () => spawnSync('true').pid!;
  const hex = () => randomBytes(6).toString('hex');

  it('undoes what dead gateways of this host left, and keeps what live ones and other hosts (within their lease) are writing', async () => {
    const { root, staging, running, own, tag, dir } = await project();
    const dead = `${deadPid()}${tag}`;
    const original = randomBytes(100);
    await tornAppend(staging, path.join(root, "tail.bin"), original, dead);
    const deadTemp = `${dead}.${hex()}.upload`;
    await writeFile(path.join(staging, deadTemp), 'partial');
    const beside = path.join(root, `.beside.bin.${hex()}.upload`);
    await writeFile(beside, 'partial');
    const deadBeside = `${dead}.${hex()}.write`;
    await writeFile(path.join(staging, deadBeside), JSON.stringify({ file: path.relative(staging, beside) }));
    const torn = `${dead}.${hex()}.append`;
    await writeFile(path.join(staging, torn), '{"fi');
    const aliveTemp = `${process.ppid}${tag}.${hex()}.upload`;
    await writeFile(path.join(staging, aliveTemp), 'a live gateway of this host is writing this');
    const elsewhere = `4242-1@elsewhere.example.${hex()}.upload`;
    await writeFile(path.join(staging, elsewhere), 'a gateway on another host is writing this');
    const expired = `4242-1@elsewhere.example.${hex()}.upload`;
    await writeFile(path.join(staging, expired), 'a gateway on another host left this long ago');
    const past = new Date(Date.now() - LIMITS.uploadLeaseMs - 60_000);
    await utimes(path.join(staging, expired), past, past);
    await writeFile(path.join(staging, 'notes.txt'), 'not an upload');

    await recoverUploads(dir, { exclusive: false });
    expect((await readdir(staging)).sort()).toEqual([aliveTemp, elsewhere, own, 'notes.txt'].sort());
    expect(await readFile(path.join(root, 'tail.bin'))).toEqual(original);
    expect(existsSync(beside)).toBe(false);
    await running.abort();
    expect((await readdir(staging)).sort()).toEqual([aliveTemp, elsewhere, 'notes.txt'].sort());
  });

  it("with the project's index lock held (exclusive), every other gateway's entry is undone; this process's live uploads stay", async () => {
    const { staging, running, own, tag, dir } = await project();
    const aliveTemp = `${process.ppid}${tag}.${hex()}.upload`;
    await writeFile(path.join(staging, aliveTemp), 'x');
    const elsewhere = `4242-1@elsewhere.example.${hex()}.upload`;
    await writeFile(path.join(staging, elsewhere), 'x');
    await recoverUploads(dir, { exclusive: true });
    expect(await readdir(staging)).toEqual([own]);
    await running.abort();
  });

  it('an append marker names the file it cuts: a file replaced since (another inode) is left as it is', async () => {
    const { root, staging, running, tag, dir } = await project();
    const file = path.join(root, 'replaced.bin');
    await tornAppend(staging, file, randomBytes(10), `${deadPid()}${tag}`);
    const replacement = randomBytes(50);
    await writeFile(`${file}.new`, replacement);
    await rename(`${file}.new`, file);
    await recoverUploads(dir, { exclusive: false });
    expect(await readFile(file)).toEqual(replacement);
    expect((await readdir(staging)).filter((n) => n.endsWith('.append'))).toEqual([]);
    await running.abort();
  });

  it('an append writes its marker (the size before it) ahead of its bytes and removes it at the end; an abort cuts back', async () => {
    const { root, staging, running, dir } = await project();
    await running.abort();
    const file = path.join(root, 'log.bin');
    const original = randomBytes(1000);
    await writeFile(file, original);
    for (const end of ['finish', 'abort'] as const) {
      const before = await readFile(file);
      const upload = new Upload(Promise.resolve({ root, staging }), 'log.bin', 'append', quiet);
      upload.write(Buffer.from('more'));
      let markers: string[] = [];
      for (let i = 0; i < 100 && !markers.length; i++) {
        markers = (await readdir(staging)).filter((n) => n.endsWith('.append'));
        if (!markers.length) await new Promise((r) => setTimeout(r, 10));
      }
      expect(markers).toHaveLength(1);
      expect(JSON.parse(await readFile(path.join(staging, markers[0]!), 'utf8'))).toMatchObject({ size: before.length });
      if (end === 'finish') {
        await upload.finish();
        expect(await readFile(file)).toEqual(Buffer.concat([before, Buffer.from('more')]));
      } else {
        await upload.abort();
        expect(await readFile(file)).toEqual(before);
      }
      expect(await readdir(staging)).toEqual([]);
    }
    await recoverUploads(dir, { exclusive: true });
    expect(await readFile(file)).toEqual(Buffer.concat([original, Buffer.from('more')]));
  });
});

describe('a target on another file system than the staging folder', () => {
  const quiet = { maxBytes: 1 << 20, highWater: 1 << 16, onDrain: () => undefined, onFail: () => undefined };
  const otherDevice = existsSync('/dev/shm') ? '/dev/shm' : undefined;

  it.skipIf(!otherDevice)('stages its temp file beside the target, named by a .write entry; nothing stays after the end or an abort', async () => {
    const project = await mkdtemp(path.join(tmpdir(), 'portico-devs-'));
    const root = await mkdtemp(path.join(otherDevice!, 'portico-devs-'));
    dirs.push(project, root);
    const staging = path.join(project, '.portico/uploads');
    await mkdir(staging, { recursive: true });
    expect((await stat(root)).dev).not.toBe((await stat(staging)).dev);
    const done = new Upload(Promise.resolve({ root, staging }), 'done.bin', 'write', quiet);
    done.write(Buffer.from('whole'));
    await done.finish();
    expect(await readFile(path.join(root, 'done.bin'), 'utf8')).toBe('whole');
    expect([await readdir(staging), await readdir(root)]).toEqual([[], ['done.bin']]);
    // One under way: its temp file lies beside the target, its entry in the staging folder (what a recovery after a crash undoes).
    const cut = new Upload(Promise.resolve({ root, staging }), 'cut.bin', 'write', quiet);
    cut.write(Buffer.from('partial'));
    let names: string[] = [];
    for (let i = 0; i < 100 && !names.length; i++) {
      names = (await readdir(root)).filter((n) => n.endsWith('.upload'));
      if (!names.length) await new Promise((r) => setTimeout(r, 10));
    }
    expect(names).toHaveLength(1);
    expect((await readdir(staging)).filter((n) => n.endsWith('.write'))).toHaveLength(1);
    await recoverUploads(project, { exclusive: false });
    expect(await readdir(root)).toHaveLength(2); // a live upload of this process is kept
    await cut.abort();
    expect([await readdir(staging), await readdir(root)]).toEqual([[], ['done.bin']]);
  });
});
