import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Worker } from './worker.js';

const python = process.env.PORTICO_PYTHON || 'python3';

describe('worker process', () => {
  let project: string | undefined;
  afterAll(async () => {
    if (project) await rm(project, { recursive: true, force: true });
  });

  it('a worker stopped while its reply channel is still opening spawns nothing and fails with worker_unavailable', async () => {
    project = await mkdtemp(path.join(tmpdir(), 'portico-worker-test-'));
    const worker = new Worker({ project, python });
    const started = worker.start();
    await worker.stop();
    await expect(started).rejects.toMatchObject({ code: 'worker_unavailable' });
    expect(worker.alive).toBe(false);
    expect(worker.pid).toBeUndefined();
  });

  it('a started worker answers through its reply channel, and stops', async () => {
    project ??= await mkdtemp(path.join(tmpdir(), 'portico-worker-test-'));
    const worker = new Worker({ project, python });
    await worker.start();
    expect(worker.alive).toBe(true);
    expect(worker.pid).toBeGreaterThan(0);
    await worker.stop();
    expect(worker.alive).toBe(false);
  });
});
