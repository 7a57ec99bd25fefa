/**
 * Workers placed by Slurm (issue #44, docs/running/slurm-workers.md): `--workers slurm` starts each
 * worker with srun in an allocation of its own on the test suite's real one-node cluster
 * (test/support/slurm.ts); the worker connects back with a one-time secret and speaks the frames
 * of a local worker. Nothing here is mocked: the jobs, the connect-back and the scancel are real.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, Client, gateway, tempProject } from './helpers.js';
import { slurmCluster, type SlurmCluster } from './support/slurm.js';

const PLACED = `
import os, socket, threading, time
from portico import Interface

release = threading.Event()

class Placed(Interface):
    def __init__(self):
        self.title = "untitled"

    def where(self) -> dict:
        return {"job": os.environ.get("SLURM_JOB_ID"), "host": socket.gethostname(), "pid": os.getpid()}

    def count(self, n: int):
        for i in range(n):
            yield i

    def slow(self):
        i = 0
        while True:
            yield i
            i += 1
            time.sleep(0.1)

    def widget_state(self):
        return {"title": self.title}

    def widget_update(self, changes):
        self.title = str(changes.get("title", self.title))
        return changes
`;

let cluster: SlurmCluster;
let slurmEnv: NodeJS.ProcessEnv;
const spawned: ChildProcess[] = [];

beforeAll(async () => {
  cluster = await slurmCluster();
  slurmEnv = { ...process.env, ...cluster.env };
}, 120_000);
afterAll(async () => {
  for (const child of spawned) child.kill('SIGKILL');
  await cleanup();
  await cluster?.stop();
}, 60_000);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Jobs squeue lists now, each `id|name|state|reason`. */
function squeue(): string[] {
  const res = spawnSync('squeue', ['--noheader', '--format=%i|%j|%T|%r'], { env: slurmEnv, encoding: 'utf8', timeout: 30_000 });
  return res.stdout.trim().split('\n').filter(Boolean);
}
const workerJobs = () => squeue().filter((line) => line.split('|')[1]?.startsWith('portico-worker-'));

async function placed(options: Record<string, unknown> = {}) {
  const logs: string[] = [];
  const project = (options.project as string | undefined) ?? (await tempProject({ 'placed.py': PLACED }));
  const g = await gateway({ project, workers: 'slurm', workerConnect: '127.0.0.1', slurm: { env: slurmEnv }, log: (line) => logs.push(line), ...options });
  return { g, logs, project };
}

const call = (g: { url: string }, target: string, method: string, args: unknown[] = []) => api(g, 'POST', '/v1/interfaces/call', { target, method, args });

describe('workers placed by Slurm', { timeout: 120_000 }, () => {
  it('a method runs inside the job: SLURM_JOB_ID and the node, and /v1/projects lists the job', async () => {
    const { g, logs } = await placed();
    const res = await call(g, 'placed', 'where');
    expect(res.status, JSON.stringify(res.body) + logs.join('\n')).toBe(200);
    const { job, host, pid } = res.body.payload;
    expect(job).toMatch(/^\d+$/);
    expect(workerJobs().map((line) => line.split('|')[0])).toContain(job);
    const [worker] = g.gateway.listProjects().workers;
    expect(worker).toMatchObject({ pid, placement: { job, node: host, state: 'RUNNING' } });
    const listed = (await api(g, 'GET', '/v1/projects')).body.workers[0];
    expect(listed.placement).toMatchObject({ job, node: host, state: 'RUNNING' });
  });
});
