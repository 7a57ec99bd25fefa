/**
 * Runs are one view (issue #30) with the Slurm executor: two gateways serving one project (on a
 * shared PostgreSQL index, a real throwaway Slurm from test/support/slurm.ts) each see the queued
 * jobs of runs the other dispatched, and a cancel through either scancels a queued job whose
 * job.json the other gateway wrote: the run ends interrupted and never starts. A blocker run that
 * takes every CPU of the node and waits for a file keeps the jobs queued, so nothing depends on timing.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, gateway, tempProject } from './helpers.js';
import { startPostgres, type TestPostgres } from './support/postgres.js';
import { slurmCluster, type SlurmCluster } from './support/slurm.js';
import { WAITER } from './support/waiter.js';

type Info = { uuid: string; status: string; cancelled: boolean; error: { exception: string } | null; job: { id: string; state: string | null } | null };

let cluster: SlurmCluster;
let slurmEnv: NodeJS.ProcessEnv;
let postgres: TestPostgres;

beforeAll(async () => {
  [cluster, postgres] = await Promise.all([slurmCluster(), startPostgres({ durable: false })]);
  slurmEnv = { ...process.env, ...cluster.env };
}, 120_000);
afterAll(async () => {
  await cleanup();
  await cluster?.stop();
  await postgres?.close();
}, 60_000);

function nodeCpus(): number {
  const res = spawnSync('sinfo', ['--noheader', '--format=%c'], { env: slurmEnv, encoding: 'utf8', timeout: 30_000 });
  return Number(res.stdout.trim().split('\n')[0]);
}

const info = async (g: { url: string }, uuid: string): Promise<Info> => (await api(g, 'GET', `/v1/executions/${uuid}`)).body;
const uuids = async (g: { url: string }): Promise<string[]> => (await api(g, 'GET', '/v1/executions')).body.map((e: Info) => e.uuid);
const waiter = (name: string, resources?: Record<string, unknown>) => ({ interfaces: [{ target: 'waiter', version: [{ name }] }], ...(resources ? { resources } : {}) });

describe('runs are one view across gateways (slurm executor)', () => {
  it('each gateway sees the queued job of a run the other dispatched, and its cancel scancels it', async () => {
    const project = await tempProject(WAITER);
    const a = await gateway({ project, store: postgres.url, executor: 'slurm', slurm: { env: slurmEnv } });
    const b = await gateway({ project, store: postgres.url, executor: 'slurm', slurm: { env: slurmEnv } });
    await uuids(a);
    await uuids(b);
    const blocker = (await api(a, 'POST', '/v1/executions', waiter('go-blocker', { cpus: nodeCpus() }))).body as Info;
    await expect.poll(async () => (await info(b, blocker.uuid)).status, { timeout: 60_000, interval: 100 }).toBe('running');

    for (const [via, other] of [
      [a, b],
      [b, a],
    ] as const) {
      const queued = (await api(via, 'POST', '/v1/executions', waiter('never'))).body as Info;
      expect(queued.job?.id).toBeTruthy();
      await expect.poll(() => uuids(other), { timeout: 5_000, interval: 50 }).toContain(queued.uuid);
      await expect.poll(async () => (await info(other, queued.uuid)).job?.state, { timeout: 30_000, interval: 100 }).toBe('PENDING');
      expect(await info(other, queued.uuid)).toMatchObject({ status: 'pending', job: { id: queued.job!.id } });
      expect((await api(other, 'POST', `/v1/executions/${queued.uuid}/cancel`)).status).toBe(204);
      await expect.poll(async () => (await info(other, queued.uuid)).status, { timeout: 30_000, interval: 100 }).toBe('interrupted');
      expect(await info(via, queued.uuid)).toMatchObject({ status: 'interrupted', cancelled: true });
      expect(existsSync(path.join(project, '.portico/executions', queued.uuid, 'started_at'))).toBe(false);
    }

    await writeFile(path.join(project, 'go-blocker'), '');
    await expect.poll(async () => (await info(b, blocker.uuid)).status, { timeout: 60_000, interval: 100 }).toBe('finished');
  }, 240_000);
});
