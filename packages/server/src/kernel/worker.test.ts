import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
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

  it('a resolution is reused for the life of its worker: an edit made outside the gateway shows after invalidate, or in the next worker', async () => {
    project ??= await mkdtemp(path.join(tmpdir(), 'portico-worker-test-'));
    const file = path.join(project, 'tally.py');
    let edits = 0;
    // Each edit changes the file's size and moves its mtime on, so neither Python's import check nor a stale .pyc can hide it.
    const edit = async (start: string) => {
      await writeFile(file, ['from portico import Interface', '', 'class Tally(Interface):', '    class Config:', `        start: int = ${start}`, ''].join('\n'));
      const later = new Date(Date.now() + 10_000 * ++edits);
      await utimes(file, later, later);
    };
    await edit('1');
    const first = new Worker({ project, python });
    await first.start();
    try {
      expect((await first.resolve('tally', [])).config).toEqual({ start: 1 });
      await edit('22');
      expect((await first.resolve('tally', [])).config).toEqual({ start: 1 });
      expect(await first.invalidate(['tally'])).toEqual([]);
      expect((await first.resolve('tally', [])).config).toEqual({ start: 22 });
      await edit('333');
      expect((await first.resolve('tally', [])).config).toEqual({ start: 22 });
    } finally {
      await first.stop();
    }
    const next = new Worker({ project, python });
    await next.start();
    try {
      expect((await next.resolve('tally', [])).config).toEqual({ start: 333 });
    } finally {
      await next.stop();
    }
  });
});
