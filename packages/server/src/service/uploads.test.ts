import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Upload } from './uploads.js';

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('Upload backpressure', () => {
  it('a transport that pauses above the high-water mark is always resumed, and every byte lands in order', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'portico-upload-'));
    dirs.push(root);
    let paused = false;
    let wake: (() => void) | undefined;
    const upload = new Upload(Promise.resolve(root), 'data.bin', 'write', {
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
  it('a missing path fails the upload with invalid_frame, and a root that never comes (no connect) is no unhandled rejection', async () => {
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
    expect(failures).toEqual(['invalid_frame']);
    expect(unhandled).toEqual([]);
  });
});
