import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KernelPool } from './pool.js';

const python = process.env.PORTICO_PYTHON || 'python3';

describe('worker pool', () => {
  let project: string | undefined;
  let pool: KernelPool | undefined;
  afterAll(async () => {
    await pool?.close();
    if (project) await rm(project, { recursive: true, force: true });
  });

  it('requests arriving together on a cold pool share the one worker being started', async () => {
    project = await mkdtemp(path.join(tmpdir(), 'portico-pool-test-'));
    let restarts = 0;
    pool = new KernelPool({ onPush: () => undefined, onRestart: () => restarts++ });
    const workers = await Promise.all(Array.from({ length: 50 }, () => pool!.get(project!, python)));
    expect(new Set(workers).size).toBe(1);
    expect(pool.list()).toHaveLength(1);
    expect(restarts).toBe(0);
  });
});
