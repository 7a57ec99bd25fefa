/**
 * The Slurm executor against a real Slurm (test/support/slurm.ts): dispatch, queue states, output,
 * cancel, time limits, killed processes, a gateway restart and refused resources. Every run is a
 * real batch job of the demo trainer; nothing of Slurm is faked.
 *
 * Nothing here depends on how fast the machine is: a job that must keep the node busy while
 * another waits in the queue is a waiter (test/support/waiter.ts) the test releases, never a run
 * that takes "long enough"; and a queued job's reason is read once Slurm has set one (on a
 * loaded controller a pending job reads `None` until the scheduler has looked at it).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../packages/server/src/config/constants.js';
import { api, cleanup, Client, gateway, runEnded, tempProject, waitForRun } from './helpers.js';
import { slurmCluster, type SlurmCluster } from './support/slurm.js';
import { WAITER } from './support/waiter.js';

type Info = {
  uuid: string;
  status: string;
  is_active: boolean;
  pid: number | null;
  cancelled: boolean;
  error: { exception: string; message: string } | null;
  job: { id: string; state: string | null; reason: string | null } | null;
};

let cluster: SlurmCluster;
let slurmEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  cluster = await slurmCluster();
  slurmEnv = { ...process.env, ...cluster.env };
}, 120_000);
afterAll(async () => {
  await cleanup();
  await cluster?.stop();
}, 60_000);

/** A Slurm client command's stdout (it must succeed). */
function slurm(cmd: string, ...args: string[]): string {
  const res = spawnSync(cmd, args, { env: slurmEnv, encoding: 'utf8', timeout: 30_000 });
  if (res.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${res.stderr}`);
  return res.stdout;
}

/** Ids of the jobs Slurm holds (any state) for the runs of a project directory. */
function portcoJobs(): string[] {
  return slurm('squeue', '--noheader', '--states=all', '--format=%i %j')
    .split('\n')
    .filter((l) => l.includes(' portico-'))
    .map((l) => l.split(' ')[0]!);
}

async function slurmGateway(project?: string, extra: { cancelGraceMs?: number } = {}) {
  return gateway({ ...(project ? { project } : {}), executor: 'slurm', slurm: { env: slurmEnv, ...extra } });
}

const STUBBORN = {
  'stubborn.py': [
    'import time',
    'from portico import ExecutionInterrupted, Interface',
    '',
    'class Stubborn(Interface):',
    '    """A run that swallows every interrupt: only Slurm can end it."""',
    '    def __call__(self):',
    '        print("started", flush=True)',
    '        while True:',
    '            try:',
    '                time.sleep(600)',
    '            except ExecutionInterrupted:',
    '                print("ignoring the cancel", flush=True)',
    '',
  ].join('\n'),
};

const waitFor = (g: { url: string }, uuid: string, done: (info: Info) => boolean, timeoutMs = 60_000) => waitForRun<Info>(g, uuid, done, timeoutMs);
const ended = runEnded;
const trainer = (version: Record<string, unknown>, resources?: Record<string, unknown>) => ({
  interfaces: [{ target: 'trainer', version: [version] }],
  ...(resources ? { resources } : {}),
});

/** squeue commands the gateway has run, from its /metrics. */
async function squeueCount(g: { url: string }): Promise<number> {
  const text = (await api(g, 'GET', '/metrics')).body as string;
  return Number(/^portico_scheduler_commands_total\{command="squeue"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

/** Node CPUs: a run asking for all of them keeps every later run queued while it runs. */
function nodeCpus(): number {
  return Number(slurm('sinfo', '--noheader', '--format=%c').trim().split('\n')[0]);
}

/**
 * A run that takes every CPU of the node and holds it until `release()` (a waiter of `project`,
 * which must have WAITER's files): every run dispatched meanwhile stays queued, however slow the
 * machine. Resolves once it runs.
 */
async function holdNode(g: { url: string }, project: string, name: string): Promise<{ uuid: string; release: () => Promise<void> }> {
  const res = await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'waiter', version: [{ name }] }], resources: { cpus: nodeCpus() } });
  expect(res.status).toBe(200);
  await waitFor(g, res.body.uuid, (i) => i.status === 'running', 120_000);
  return { uuid: res.body.uuid, release: () => writeFile(path.join(project, name), '') };
}

/**
 * A queued job whose reason Slurm has set. Right after sbatch, and for as long as a busy
 * slurmctld has not run its scheduler since, a pending job's reason is `None` ("no reason is set
 * for this job", squeue(1)); the scheduler then says why it waits.
 */
const queuedWithReason = (i: Info) => i.status === 'pending' && i.job?.state === 'PENDING' && !!i.job.reason && i.job.reason !== 'None';

describe('slurm executor', () => {
  let g: Awaited<ReturnType<typeof slurmGateway>>;
  let project: string;
  beforeAll(async () => {
    project = await tempProject(WAITER);
    g = await slurmGateway(project);
  });

  it('dispatch → queued (pending, with its reason) → running with output followed → finished; the job id is in the run directory', { timeout: 240_000 }, async () => {
    const blocker = await holdNode(g, project, 'go-dispatch');
    const { status, body } = await api(g, 'POST', '/v1/executions', trainer({ epochs: 6, delay: 0.5 }, { cpus: 1, time_limit: 5 }));
    expect(status).toBe(200);
    expect(body.job).toMatchObject({ id: expect.stringMatching(/^\d+$/) });
    const jobFile = JSON.parse(await readFile(path.join(project, '.portico/executions', body.uuid, 'job.json'), 'utf8'));
    expect(jobFile).toMatchObject({ engine: 'slurm', id: body.job.id });
    expect(slurm('scontrol', 'show', 'job', body.job.id)).toMatch(/TimeLimit=00:05:00/);

    // The scheduler looks at a queued job on submission, or on its next pass when it is busy (at
    // most the backfill interval, 30 s by default): wait for it, however long it takes here.
    const queued = await waitFor(g, body.uuid, queuedWithReason, 150_000);
    expect(queued).toMatchObject({ is_active: false, job: { reason: expect.stringMatching(/Resources|Priority/) } });
    await blocker.release();

    // Follow the output through windows while it runs.
    let offset = 0;
    let text = '';
    let seenWhileRunning = '';
    for (;;) {
      const info = (await api(g, 'GET', `/v1/executions/${body.uuid}`)).body as Info;
      const window = (await api(g, 'GET', `/v1/executions/${body.uuid}/output?offset=${offset}`)).body;
      expect(window.offset).toBe(offset);
      text += window.output;
      offset = window.size;
      if (info.status === 'running') {
        expect(info).toMatchObject({ is_active: true, job: { state: 'RUNNING' } });
        seenWhileRunning = text;
      }
      if (ended(info) && offset === (await api(g, 'GET', `/v1/executions/${body.uuid}/output?tail=0`)).body.size) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(seenWhileRunning).toMatch(/^epoch 1\/6/);
    expect(text.split('\n').map((line) => line.split(' ')[0])).toEqual(['epoch', 'epoch', 'epoch', 'epoch', 'epoch', 'epoch', '']);
    expect(text).toMatch(/^epoch 1\/6 loss=0\.5000\n[^]*epoch 6\/6 loss=0\.0156\n$/);
    const done = (await api(g, 'GET', `/v1/executions/${body.uuid}`)).body as Info;
    expect(done).toMatchObject({ status: 'finished', is_active: false, error: null, job: { id: body.job.id } });
    expect((await waitFor(g, blocker.uuid, ended)).status).toBe('finished');
  });

  it('the executions socket follows a Slurm run to its end, output and status frames included', async () => {
    const { body } = await api(g, 'POST', '/v1/executions', trainer({ epochs: 3, delay: 0.3 }));
    const client = await Client.open(g.url, { path: '/v1/executions/ws' });
    await client.connect(body.uuid);
    await client.waitFor((f) => f.type === 'status' && f.payload.status === 'finished', 60_000);
    await client.waitFor((f) => f.type === 'output' && String(f.payload.output).includes('epoch 3/3'), 10_000);
    const events = client.frames.filter((f) => f.type === 'event').map((f) => f.payload.payload.epoch);
    expect(events).toEqual([1, 2, 3]);
    client.close();
  });

  it('cancel of a queued job: scancel at once, the run ends interrupted and never starts', { timeout: 240_000 }, async () => {
    const blocker = await holdNode(g, project, 'go-cancel-queued');
    const { body } = await api(g, 'POST', '/v1/executions', trainer({ epochs: 1 }));
    await waitFor(g, body.uuid, (i) => i.status === 'pending' && i.job?.state === 'PENDING');
    expect((await api(g, 'POST', `/v1/executions/${body.uuid}/cancel`)).status).toBe(204);
    const info = await waitFor(g, body.uuid, ended);
    expect(info).toMatchObject({ status: 'interrupted', cancelled: true, is_active: false, error: { exception: 'ExecutionInterrupted' } });
    expect(existsSync(path.join(project, '.portico/executions', body.uuid, 'started_at'))).toBe(false);
    expect(slurm('squeue', '--noheader', '--states=all', '--format=%T', `--jobs=${body.job.id}`).trim()).toBe('CANCELLED');
    await blocker.release();
    await waitFor(g, blocker.uuid, ended);
  });

  it('cancel of a running job: the marker interrupts the run, which ends interrupted', async () => {
    const { body } = await api(g, 'POST', '/v1/executions', trainer({ epochs: 1, delay: 120 }));
    await waitFor(g, body.uuid, (i) => i.status === 'running');
    expect((await api(g, 'POST', `/v1/executions/${body.uuid}/cancel`)).status).toBe(204);
    const info = await waitFor(g, body.uuid, ended);
    expect(info).toMatchObject({ status: 'interrupted', is_active: false, error: { exception: 'ExecutionInterrupted' } });
    expect((await api(g, 'GET', `/v1/executions/${body.uuid}/output`)).body.output).toContain('cancel requested');
  });

  it('cancel of a running job that ignores the marker: scancel after the grace period, and the run reads interrupted', async () => {
    const stubborn = await slurmGateway(await tempProject(STUBBORN), { cancelGraceMs: 1000 });
    const { body } = await api(stubborn, 'POST', '/v1/executions', { interfaces: [{ target: 'stubborn' }] });
    await waitFor(stubborn, body.uuid, (i) => i.status === 'running');
    expect((await api(stubborn, 'POST', `/v1/executions/${body.uuid}/cancel`)).status).toBe(204);
    const info = await waitFor(stubborn, body.uuid, ended);
    expect(info).toMatchObject({ status: 'interrupted', cancelled: true, is_active: false, error: { exception: 'ExecutionInterrupted' } });
    expect((await api(stubborn, 'GET', `/v1/executions/${body.uuid}/output`)).body.output).toContain('ignoring the cancel');
    expect(slurm('squeue', '--noheader', '--states=all', '--format=%T', `--jobs=${body.job.id}`).trim()).toBe('CANCELLED');
  });

  it('a job Slurm no longer knows, whose run never recorded its end, is failed', { timeout: 240_000 }, async () => {
    const lostProject = await tempProject(WAITER);
    const first = await slurmGateway(lostProject);
    const blocker = await holdNode(first, lostProject, 'go-lost');
    const { body } = await api(first, 'POST', '/v1/executions', trainer({ epochs: 1 }));
    await waitFor(first, body.uuid, (i) => i.status === 'pending');
    await first.close();
    // As after a controller that lost its state: the run directory names a job Slurm never had.
    slurm('scancel', body.job.id);
    const jobFile = path.join(lostProject, '.portico/executions', body.uuid, 'job.json');
    await writeFile(jobFile, JSON.stringify({ ...JSON.parse(await readFile(jobFile, 'utf8')), id: '987654321' }));
    const second = await slurmGateway(lostProject);
    const info = (await api(second, 'GET', `/v1/executions/${body.uuid}`)).body as Info;
    expect(info).toMatchObject({ status: 'failed', is_active: false, error: { exception: 'JobLost' }, job: { id: '987654321' } });
    expect((await api(second, 'GET', '/v1/executions?active=true')).body.map((e: Info) => e.uuid)).not.toContain(body.uuid);
    await blocker.release();
    await waitFor(second, blocker.uuid, ended);
  });

  it('a job killed by its time limit ends failed with Slurm’s reason', { timeout: 240_000 }, async () => {
    const { body } = await api(g, 'POST', '/v1/executions', trainer({ epochs: 1, delay: 600 }, { time_limit: 1 }));
    await waitFor(g, body.uuid, (i) => i.status === 'running');
    expect(slurm('scontrol', 'show', 'job', body.job.id)).toMatch(/TimeLimit=00:01:00/);
    // Slurm counts limits in minutes: take the minute off so that the limit is already past and
    // slurmctld ends the job at its next limit check (≤ 30 s) instead of in 60–90 s.
    slurm('scontrol', 'update', `JobId=${body.job.id}`, 'TimeLimit=-1');
    const info = await waitFor(g, body.uuid, ended, 180_000);
    expect(info).toMatchObject({ status: 'failed', is_active: false, error: { exception: 'JobEnded' } });
    expect(info.error!.message).toMatch(/TIMEOUT \(TimeLimit\)/);
    expect((await api(g, 'GET', '/v1/executions?active=true')).body.map((e: Info) => e.uuid)).not.toContain(body.uuid);
    // Recorded in the run directory: true after Slurm forgets the job.
    const status = JSON.parse(await readFile(path.join(project, '.portico/executions', body.uuid, 'status.json'), 'utf8'));
    expect(status).toMatchObject({ status: 'failed', error: { exception: 'JobEnded' } });
  });

  it('a job whose process is killed on the node ends failed', async () => {
    const { body } = await api(g, 'POST', '/v1/executions', trainer({ epochs: 1, delay: 600, fail_at: 3 }));
    const running = await waitFor(g, body.uuid, (i) => i.status === 'running' && i.pid !== null);
    process.kill(running.pid!, 'SIGKILL');
    const info = await waitFor(g, body.uuid, (i) => ended(i) && i.error?.exception !== 'ProcessDied');
    expect(info).toMatchObject({ status: 'failed', is_active: false, error: { exception: 'JobEnded' } });
    expect(info.error!.message).toMatch(/FAILED/);
    expect((await api(g, 'GET', '/v1/executions?incomplete=true')).body.map((e: Info) => e.uuid)).toContain(body.uuid);
  });

  it('bad resources are refused with 422 and nothing is submitted', async () => {
    const runsDir = path.join(project, '.portico/executions');
    const dirsBefore = readdirSync(runsDir).length;
    const jobsBefore = portcoJobs().length;
    for (const resources of [
      { nodes: 2 },
      { cpus: 0 },
      { cpus: 1.5 },
      { cpus: '2' },
      { memory: '1G --wrap=id' },
      { memory: '-1' },
      { partition: '--wrap=id' },
      { partition: 'a b' },
      { account: '../x' },
      { time_limit: 'forever' },
      { time_limit: 0 },
      { gpus: -1 },
      ['cpus'],
    ]) {
      const res = await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer' }], resources });
      expect(res.status, JSON.stringify(resources)).toBe(422);
      expect(JSON.stringify(res.body.detail)).toMatch(/resources/);
    }
    expect(readdirSync(runsDir).length).toBe(dirsBefore);
    expect(portcoJobs().length).toBe(jobsBefore);
  });

  it('a partition Slurm does not have: 400 job_refused with sbatch’s message, and the run is failed', async () => {
    const res = await api(g, 'POST', '/v1/executions', trainer({ epochs: 1 }, { partition: 'nosuchpartition' }));
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatchObject({ code: 'job_refused', message: expect.stringMatching(/Slurm did not take the run: .*partition/i) });
    const failed = (await api(g, 'GET', '/v1/executions?limit=1')).body[0] as Info;
    expect(failed).toMatchObject({ status: 'failed', error: { exception: 'SubmitFailed' }, job: null });
  });
});

describe('slurm executor under load and restarts', () => {
  it('50 dispatches at once all finish and are all listed; status reads of them share batched squeue calls', async () => {
    const g = await slurmGateway();
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => api(g, 'POST', '/v1/executions', trainer({ epochs: 1 + (i % 3) }, { cpus: 1 }))));
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
    const uuids = results.map((r) => r.body.uuid as string);
    expect(new Set(results.map((r) => r.body.job.id)).size).toBe(50);
    // Status polling is batched: however many reads ask, the gateway runs squeue at most once per
    // poll interval (plus one in flight at either end), so 200 status reads of live runs at once
    // cost a few squeue, not 200. Counted against the time the reads took, on any machine.
    const before = await squeueCount(g);
    expect(before).toBeGreaterThan(0); // the dispatches' own status reads polled already
    const started = performance.now();
    const reads = await Promise.all(Array.from({ length: 200 }, (_, i) => api(g, 'GET', `/v1/executions/${uuids[i % 50]}`)));
    const intervals = Math.ceil((performance.now() - started) / LIMITS.slurmPollMs);
    expect(reads.every((r) => r.status === 200 && r.body.job.id)).toBe(true);
    expect((await squeueCount(g)) - before).toBeLessThanOrEqual(intervals + 2);
    for (const uuid of uuids) await waitFor(g, uuid, ended, 240_000);
    const listed = (await api(g, 'GET', '/v1/executions?limit=1000')).body as Info[];
    const finished = new Set(listed.filter((e) => e.status === 'finished').map((e) => e.uuid));
    expect(uuids.filter((u) => !finished.has(u))).toEqual([]);
  }, 300_000);

  it('a gateway restarted while jobs run and queue reports them truthfully and can still cancel them', { timeout: 240_000 }, async () => {
    const project = await tempProject(WAITER);
    const first = await slurmGateway(project);
    // Runs until cancelled (its file never appears), so it is still running whenever the second gateway looks.
    const running = (await api(first, 'GET', `/v1/executions/${(await holdNode(first, project, 'never')).uuid}`)).body as Info;
    const queued = (await api(first, 'POST', '/v1/executions', trainer({ epochs: 1 }))).body as Info;
    await waitFor(first, queued.uuid, (i) => i.status === 'pending' && i.job?.state === 'PENDING');
    await first.close();

    const second = await slurmGateway(project);
    expect((await api(second, 'GET', `/v1/executions/${running.uuid}`)).body).toMatchObject({ status: 'running', is_active: true, job: { id: running.job!.id, state: 'RUNNING' } });
    expect((await api(second, 'GET', `/v1/executions/${queued.uuid}`)).body).toMatchObject({ status: 'pending', is_active: false, job: { id: queued.job!.id, state: 'PENDING' } });
    const active = (await api(second, 'GET', '/v1/executions?active=true')).body.map((e: Info) => e.uuid);
    expect(active).toContain(running.uuid);
    expect((await api(second, 'POST', `/v1/executions/${queued.uuid}/cancel`)).status).toBe(204);
    expect((await api(second, 'POST', `/v1/executions/${running.uuid}/cancel`)).status).toBe(204);
    expect((await waitFor(second, running.uuid, ended)).status).toBe('interrupted');
    expect((await waitFor(second, queued.uuid, ended)).status).toBe('interrupted');
  });
});
