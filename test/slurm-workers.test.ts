/**
 * Workers placed by Slurm (issue #44, docs/running/slurm-workers.md): `--workers slurm` starts each
 * worker with srun in an allocation of its own on the test suite's real one-node cluster
 * (test/support/slurm.ts); the worker connects back with a one-time secret and speaks the frames
 * of a local worker. Nothing here is mocked: the jobs, the connect-back and the scancel are real.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, Client, gateway, ROOT, tempProject } from './helpers.js';
import { cleanEnv, readLines } from './support/requests.js';
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

/** A class that declares what its instances need; `name` tells the modules apart. */
const laned = (name: string, resources: string) => `
import os
from portico import Interface

class ${name}(Interface):
    __resources__ = ${resources}

    def where(self) -> dict:
        return {"job": os.environ.get("SLURM_JOB_ID"), "cpus": os.environ.get("SLURM_CPUS_PER_TASK")}
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

/** Gateways of the test running: closed at its end, since each worker job holds one of the node's few CPUs. */
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((g) => g.close()));
  await expect.poll(() => workerJobs(), { timeout: 30_000, interval: 250 }).toEqual([]);
}, 60_000);

async function placed(options: Record<string, unknown> = {}) {
  const logs: string[] = [];
  const project = (options.project as string | undefined) ?? (await tempProject({ 'placed.py': PLACED }));
  const g = await gateway({ project, workers: 'slurm', workerConnect: '127.0.0.1', slurm: { env: slurmEnv }, log: (line) => logs.push(line), ...options });
  open.push(g);
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

  it('streams, events of a stream, and a widget synced both ways go through the placed worker', async () => {
    const { g } = await placed();
    const res = await fetch(`${g.url}/v1/interfaces/call`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/x-ndjson' }, body: JSON.stringify({ target: 'placed', method: 'count', args: [3] }) });
    const lines = (await res.text()).trimEnd().split('\n').map((line) => JSON.parse(line));
    expect(lines).toEqual([
      { type: 'stream', payload: 0 },
      { type: 'stream', payload: 1 },
      { type: 'stream', payload: 2 },
      { type: 'stream', payload: null, final: true },
    ]);
    const page = await Client.open(g.url);
    const other = await Client.open(g.url);
    const { payload } = await page.connect('placed');
    await other.connect(payload.uuid);
    expect((await page.request({ type: 'widget_get' })).payload).toMatchObject({ state: { title: 'untitled' } });
    expect(await page.request({ type: 'widget_set', changes: { title: 'on a node' } })).toMatchObject({ type: 'widget_change', payload: { changes: { title: 'on a node' } } });
    expect((await other.waitFor((f) => f.type === 'widget_change')).payload).toMatchObject({ changes: { title: 'on a node' } });
    expect((await other.request({ type: 'widget_get' })).payload).toMatchObject({ state: { title: 'on a node' } });
  });

  it('scancel mid-stream: the stream ends with a typed error, attached clients hear allocation_ended, the next use gets a new job with the saved widget state', async () => {
    const { g } = await placed();
    const watcher = await Client.open(g.url);
    const { payload } = await watcher.connect('placed');
    const before = (await watcher.request({ type: 'call', method: 'where' })).payload.job as string;
    expect((await watcher.request({ type: 'widget_set', changes: { title: 'kept' } })).type).toBe('widget_change');
    const streamer = await Client.open(g.url);
    await streamer.connect(payload.uuid);
    const ended = streamer.request({ type: 'call', method: 'slow' });
    await streamer.waitFor((f) => f.type === 'stream' && f.payload === 2);
    expect(spawnSync('scancel', [before], { env: slurmEnv }).status).toBe(0);
    const last = await ended;
    expect(last).toMatchObject({ type: 'error', payload: { code: 'worker_crashed' } });
    const told = await watcher.waitFor((f) => f.type === 'instance_restarted');
    expect(told.payload).toMatchObject({ uuid: payload.uuid, reason: 'allocation_ended' });
    expect(told.payload.message).toMatch(new RegExp(`job ${before}.*CANCELLED`));
    // The page reads its state again: the instance is made again in a new allocation, with its saved widget state.
    expect((await watcher.request({ type: 'widget_get' })).payload).toMatchObject({ state: { title: 'kept' } });
    const after = (await watcher.request({ type: 'call', method: 'where' })).payload.job as string;
    expect(after).toMatch(/^\d+$/);
    expect(after).not.toBe(before);
  });

  it('an allocation Slurm refuses is 400 job_refused with its message, and nothing is left queued', async () => {
    const { g } = await placed({ slurm: { env: slurmEnv, partition: 'nosuchpartition' } });
    const res = await call(g, 'placed', 'where');
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatchObject({ code: 'job_refused', message: expect.stringMatching(/partition/i) });
    expect(workerJobs()).toEqual([]);
  });

  it('a forged connect-back is refused and logged; the real worker still attaches', async () => {
    const { g, logs } = await placed();
    expect((await call(g, 'placed', 'where')).status).toBe(200);
    const line = logs.find((l) => l.includes('listening for workers connecting back on'))!;
    const [host, port] = line.split(' on ').at(-1)!.split(':');
    const forge = async (bytes: Buffer): Promise<string> => {
      const socket = net.connect({ host, port: Number(port) });
      socket.on('error', () => undefined);
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(bytes);
      let got = '';
      socket.on('data', (d) => (got += d));
      await new Promise((resolve) => socket.once('close', resolve));
      return got;
    };
    const frame = (header: object) => {
      const json = Buffer.from(JSON.stringify(header));
      const prefix = Buffer.alloc(8);
      prefix.writeUInt32BE(json.length, 0);
      return Buffer.concat([prefix, json]);
    };
    // Closed without a byte of the protocol: nothing of the gateway is reachable this way.
    expect(await forge(frame({ op: 'hello', worker: 'guess', secret: 'guess' }))).toBe('');
    expect(await forge(frame({ op: 'heartbeat', id: 0 }))).toBe('');
    expect(await forge(Buffer.from('GET / HTTP/1.1\r\n\r\n'))).toBe('');
    await expect.poll(() => logs.filter((l) => l.includes('refused a worker connecting back from 127.0.0.1')).length).toBe(3);
    expect(logs.some((l) => /refused .*no worker is expected with that id/.test(l))).toBe(true);
    expect((await call(g, 'placed', 'where')).status).toBe(200);
  });

  it('idle release: after --worker-idle with no live instance the worker stops and its job leaves squeue; gateway stop ends the rest', async () => {
    const { g } = await placed({ workerIdleMs: 1000, instanceIdleMs: 1000 });
    expect((await call(g, 'placed', 'where')).status).toBe(200);
    expect(workerJobs()).toHaveLength(1);
    await expect.poll(() => workerJobs(), { timeout: 30_000, interval: 250 }).toEqual([]);
    expect(g.gateway.listProjects().workers).toEqual([]);
    // Again, and this time the gateway stops while the worker holds an instance.
    expect((await call(g, 'placed', 'where')).status).toBe(200);
    expect(workerJobs()).toHaveLength(1);
    await g.close();
    expect(workerJobs()).toEqual([]);
  });

  it('__resources__: classes that need the same share an allocation made with them, other classes run in the default one; bad ones are refused', async () => {
    const project = await tempProject({
      'placed.py': PLACED,
      'lane_a.py': laned('LaneA', '{"cpus": 1, "time_limit": 30}'),
      'lane_b.py': laned('LaneB', '{"time_limit": 30, "cpus": 1}'),
      'bad.py': laned('Bad', '{"gpus": "lots", "colour": "blue"}'),
    });
    const { g } = await placed({ project });
    const a = (await call(g, 'lane_a', 'where')).body.payload;
    const b = (await call(g, 'lane_b', 'where')).body.payload;
    const plain = (await call(g, 'placed', 'where')).body.payload;
    expect(a.job).toMatch(/^\d+$/);
    expect(b.job).toBe(a.job);
    expect(plain.job).not.toBe(a.job);
    expect(a.cpus).toBe('1');
    const limits = Object.fromEntries(squeue().map((line) => line.split('|')).map(([id]) => [id, spawnSync('squeue', ['--noheader', '--format=%l', `--jobs=${id}`], { env: slurmEnv, encoding: 'utf8' }).stdout.trim()]));
    expect(limits[a.job]).toBe('30:00');
    expect(limits[plain.job]).not.toBe('30:00');
    const workers = (await api(g, 'GET', '/v1/projects')).body.workers as Array<{ placement: { job: string; resources: object } }>;
    expect(workers.find((w) => w.placement.job === a.job)?.placement.resources).toEqual({ cpus: 1, time_limit: 30 });
    expect(workers.find((w) => w.placement.job === plain.job)?.placement.resources).toEqual({});
    const bad = await call(g, 'bad', 'where');
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatchObject({ code: 'module_error', message: expect.stringMatching(/__resources__.*gpus.*colour|__resources__.*colour.*gpus/) });
  });

  it('a controller that cannot be reached: 503 scheduler_unavailable; once it answers again, the next call is served', async () => {
    // The gateway's SLURM_CONF names a port nobody listens on, then the controller's own again.
    const conf = path.join(await tempProject({}, { demo: false }), 'slurm.conf');
    const good = readFileSync(cluster.env.SLURM_CONF!, 'utf8');
    writeFileSync(conf, good.replace(/^SlurmctldPort=.*$/m, 'SlurmctldPort=9'));
    const { g } = await placed({ slurm: { env: { ...slurmEnv, SLURM_CONF: conf } } });
    const res = await call(g, 'placed', 'where');
    expect(res.status).toBe(503);
    expect(res.body.detail).toMatchObject({ code: 'scheduler_unavailable', message: expect.stringMatching(/Unable to contact slurm controller/) });
    writeFileSync(conf, good);
    const again = await call(g, 'placed', 'where');
    expect(again.status).toBe(200);
    expect(again.body.payload.job).toMatch(/^\d+$/);
  });

  it('a worker whose job stays pending is listed with its job and reason; past --worker-wait: 503 worker_unavailable naming the job and Slurm\'s reason, and the job is cancelled', async () => {
    const blocker = blockNode();
    try {
      const { g } = await placed({ workerWaitMs: 5000 });
      const answer = call(g, 'placed', 'where');
      // Meanwhile the pending worker is listed, with its job and Slurm's reason.
      await expect
        .poll(async () => (await api(g, 'GET', '/v1/projects')).body.workers, { timeout: 4000, interval: 200 })
        .toEqual([expect.objectContaining({ pid: null, instances: 0, placement: expect.objectContaining({ job: expect.stringMatching(/^\d+$/), state: 'PENDING', reason: 'Resources' }) })]);
      const res = await answer;
      expect(res.status).toBe(503);
      expect(res.body.detail.code).toBe('worker_unavailable');
      expect(res.body.detail.message).toMatch(/Slurm job \d+ of the Python worker did not start within 5 s: PENDING \(Resources\); the job was cancelled/);
      expect((await api(g, 'GET', '/v1/projects')).body.workers).toEqual([]);
      await expect.poll(() => workerJobs(), { timeout: 10_000, interval: 250 }).toEqual([]);
    } finally {
      spawnSync('scancel', [blocker], { env: slurmEnv });
    }
  });

  it('waiting is visible: a WebSocket connect whose worker\'s job is pending hears `waiting` with Slurm\'s state and reason, then its answer once the job runs', async () => {
    const blocker = blockNode();
    try {
      const { g } = await placed({ workerWaitMs: 60_000 });
      const client = await Client.open(g.url);
      const id = client.send({ type: 'connect', target: 'placed' });
      const told = await client.waitFor((f) => f.id === id && f.type === 'waiting' && f.payload.reason === 'Resources', 30_000);
      expect(told.payload).toEqual({ job: expect.stringMatching(/^\d+$/), state: 'PENDING', reason: 'Resources', message: `Slurm job ${told.payload.job}: PENDING (Resources)` });
      expect(client.replies(id).every((f) => f.type === 'waiting')).toBe(true); // nothing else yet
      spawnSync('scancel', [blocker], { env: slurmEnv });
      const answer = await client.waitFor((f) => f.id === id && f.type !== 'waiting', 60_000);
      expect(answer.type).toBe('connected');
      // Every notice came before the answer, each a change from the one before.
      const replies = client.replies(id);
      expect(replies.at(-1)).toBe(answer);
      const notices = replies.slice(0, -1).map((f) => f.payload.message as string);
      expect(notices.length).toBeGreaterThanOrEqual(1);
      // (Slurm may go back to an earlier reason: Resources, Priority, Resources.)
      notices.slice(1).forEach((message, i) => expect(message, notices.join(' / ')).not.toBe(notices[i]));
      expect(notices.every((m) => m.startsWith(`Slurm job ${told.payload.job}: `))).toBe(true);
      // Running now: the next call waits for nothing and hears no notice.
      const call = await client.request({ type: 'call', method: 'where' });
      expect(call.payload.job).toBe(told.payload.job);
      expect(client.frames.filter((f) => f.type === 'waiting' && f.id !== id)).toEqual([]);
    } finally {
      spawnSync('scancel', [blocker], { env: slurmEnv }); // again if the test got there: a no-op
    }
  });

  it('waiting is visible to a call too: one whose class needs an allocation of its own hears `waiting` with its id while that job is pending, then its result', async () => {
    const project = await tempProject({ 'placed.py': PLACED, 'lane_a.py': laned('LaneA', '{"cpus": 1, "time_limit": 30}') });
    const { g } = await placed({ project, workerWaitMs: 60_000 });
    const client = await Client.open(g.url);
    await client.connect('lane_a'); // resolved by the default worker; the lane's starts on first use
    const blocker = blockNode(idleCpus()); // what the default worker left free: the lane's job waits
    try {
      await expect.poll(() => squeue().find((line) => line.startsWith(`${blocker}|`))?.split('|')[2], { timeout: 30_000, interval: 250 }).toBe('RUNNING');
      const id = client.send({ type: 'call', method: 'where' });
      const told = await client.waitFor((f) => f.id === id && f.type === 'waiting' && f.payload.reason === 'Resources', 30_000);
      expect(told.payload).toMatchObject({ job: expect.stringMatching(/^\d+$/), state: 'PENDING', message: `Slurm job ${told.payload.job}: PENDING (Resources)` });
      spawnSync('scancel', [blocker], { env: slurmEnv });
      const answer = await client.waitFor((f) => f.id === id && f.type !== 'waiting', 60_000);
      expect(answer).toMatchObject({ type: 'result', payload: { job: told.payload.job, cpus: '1' } });
      expect(client.replies(id).slice(0, -1).every((f) => f.type === 'waiting')).toBe(true);
    } finally {
      spawnSync('scancel', [blocker], { env: slurmEnv });
    }
  });

  it('waiting is visible to curl too: a streamed REST call whose worker\'s job is pending answers `waiting` lines at once, then its result once the job runs', async () => {
    const blocker = blockNode();
    try {
      const { g } = await placed({ workerWaitMs: 60_000 });
      const res = await streamed(g, 'application/x-ndjson', { target: 'placed', method: 'where' });
      // Headers come with the first notice, while the job is still pending.
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
      const lines = readLines(res);
      const told = await lines.until((line) => line.type === 'waiting' && line.payload.reason === 'Resources');
      expect(told.payload).toEqual({ job: expect.stringMatching(/^\d+$/), state: 'PENDING', reason: 'Resources', message: `Slurm job ${told.payload.job}: PENDING (Resources)` });
      spawnSync('scancel', [blocker], { env: slurmEnv });
      const all = await lines.all();
      expect(all.at(-1)).toMatchObject({ type: 'result', payload: { job: told.payload.job } });
      const notices = all.slice(0, -1);
      expect(notices.every((line) => line.type === 'waiting')).toBe(true);
      notices.slice(1).forEach((line, i) => expect(line.payload.message).not.toBe(notices[i].payload.message));
    } finally {
      spawnSync('scancel', [blocker], { env: slurmEnv }); // again if the test got there: a no-op
    }
  });

  it('a streamed REST call whose class needs an allocation of its own: `waiting` lines while that job is pending, then the result', async () => {
    const project = await tempProject({ 'placed.py': PLACED, 'lane_a.py': laned('LaneA', '{"cpus": 1, "time_limit": 30}') });
    const { g } = await placed({ project, workerWaitMs: 60_000 });
    expect((await api(g, 'POST', '/v1/interfaces', { target: 'lane_a' })).status).toBe(200); // resolved by the default worker
    const blocker = blockNode(idleCpus()); // what the default worker left free: the lane's job waits
    try {
      await expect.poll(() => squeue().find((line) => line.startsWith(`${blocker}|`))?.split('|')[2], { timeout: 30_000, interval: 250 }).toBe('RUNNING');
      const lines = readLines(await streamed(g, 'application/x-ndjson', { target: 'lane_a', method: 'where' }));
      const told = await lines.until((line) => line.type === 'waiting' && line.payload.reason === 'Resources');
      spawnSync('scancel', [blocker], { env: slurmEnv });
      const all = await lines.all();
      expect(all.at(-1)).toMatchObject({ type: 'result', payload: { job: told.payload.job, cpus: '1' } });
      expect(all.slice(0, -1).every((line) => line.type === 'waiting')).toBe(true);
    } finally {
      spawnSync('scancel', [blocker], { env: slurmEnv });
    }
  });

  it('a streamed REST call waiting past --worker-wait: `waiting` events, then an `error` event worker_unavailable naming the job (the status was sent with the first)', async () => {
    const blocker = blockNode();
    try {
      const { g } = await placed({ workerWaitMs: 5000 });
      const res = await streamed(g, 'text/event-stream', { target: 'placed', method: 'where' });
      expect(res.status).toBe(200);
      const events = (await res.text()).trimEnd().split('\n\n').map((block) => {
        const [event, data] = block.split('\n');
        return { event: event!.replace(/^event: /, ''), line: JSON.parse(data!.replace(/^data: /, '')) };
      });
      const last = events.at(-1)!;
      expect(last.event).toBe('error');
      expect(last.line.payload).toMatchObject({ code: 'worker_unavailable' });
      const notices = events.slice(0, -1);
      expect(notices.length).toBeGreaterThanOrEqual(1);
      expect(notices.every(({ event, line }) => event === 'waiting' && line.type === 'waiting')).toBe(true);
      expect(notices.at(-1)!.line.payload).toMatchObject({ state: 'PENDING', reason: 'Resources' });
      expect(last.line.payload.message).toContain(`Slurm job ${notices.at(-1)!.line.payload.job} `);
    } finally {
      spawnSync('scancel', [blocker], { env: slurmEnv });
    }
  });

  it('the Python client prints the wait on stderr while its connect waits for a pending job, then goes on', async () => {
    const blocker = blockNode();
    try {
      const { g } = await placed({ workerWaitMs: 60_000 });
      const script = 'import sys\nfrom portico.client import Gateway\nwith Gateway(sys.argv[1]).interface("placed") as placed:\n    print(placed.where()["job"])\n';
      const child = spawn('python3', ['-c', script, g.url], { env: { ...cleanEnv(), PYTHONPATH: path.join(ROOT, 'packages/server/python') }, stdio: ['ignore', 'pipe', 'pipe'] });
      spawned.push(child);
      let out = '';
      let err = '';
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (err += d));
      const exited = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? -1)));
      await expect.poll(() => err, { timeout: 30_000, interval: 200 }).toMatch(/^portico: Slurm job \d+: PENDING \(Resources\)$/m);
      expect(out).toBe(''); // still waiting, past the client's own connect timeout if need be
      spawnSync('scancel', [blocker], { env: slurmEnv });
      expect(await exited, err).toBe(0);
      const job = /Slurm job (\d+)/.exec(err)![1];
      expect(out.trim()).toBe(job);
      expect(err.trim().split('\n').every((line) => line.startsWith(`portico: Slurm job ${job}: `)), err).toBe(true);
    } finally {
      spawnSync('scancel', [blocker], { env: slurmEnv }); // again if the test got there: a no-op
    }
  });

  it('waiting past --worker-wait: the connect heard `waiting` with the reason, then 503 worker_unavailable naming the job', async () => {
    const blocker = blockNode();
    try {
      const { g } = await placed({ workerWaitMs: 5000 });
      const client = await Client.open(g.url);
      const answer = await client.request({ type: 'connect', target: 'placed' });
      expect(answer).toMatchObject({ type: 'error', payload: { code: 'worker_unavailable' } });
      const notices = client.replies(answer.id!).filter((f) => f.type === 'waiting');
      expect(notices.at(-1)!.payload).toMatchObject({ state: 'PENDING', reason: 'Resources' });
      expect(answer.payload.message).toContain(`Slurm job ${notices.at(-1)!.payload.job} `);
      expect(client.replies(answer.id!).indexOf(answer)).toBe(client.replies(answer.id!).length - 1);
    } finally {
      spawnSync('scancel', [blocker], { env: slurmEnv });
    }
  });

  it('a gateway killed with SIGKILL and started again cancels the worker job it left', async () => {
    const project = await tempProject({ 'placed.py': PLACED });
    const blocker = blockNode(); // keeps the first gateway's worker job pending: an orphan that would wait for ever
    try {
      const first = await serve(project);
      const waiting = fetch(`${first.url}/v1/interfaces/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ target: 'placed', method: 'where' }) }).catch(() => undefined);
      await expect.poll(() => workerJobs().map((line) => line.split('|')[2]), { timeout: 30_000, interval: 250 }).toEqual(['PENDING']);
      first.child.kill('SIGKILL');
      await waiting;
      await sleep(1000);
      expect(workerJobs()).toHaveLength(1); // its srun lives on without it
      const second = await serve(project);
      expect(second.out()).toMatch(/cancelled 1 worker job\(s\) an earlier run of this gateway left/);
      await expect.poll(() => workerJobs(), { timeout: 10_000, interval: 250 }).toEqual([]);
      second.child.kill('SIGTERM');
    } finally {
      spawnSync('scancel', [blocker], { env: slurmEnv });
    }
  });
});

/** `POST /v1/interfaces/call` answered as it happens (`accept`), as `curl -N` asks for it. */
const streamed = (g: { url: string }, accept: string, body: unknown) =>
  fetch(`${g.url}/v1/interfaces/call`, { method: 'POST', headers: { 'content-type': 'application/json', accept }, body: JSON.stringify(body) });

/** A batch job that takes `cpus` CPUs of the node (default: every one) until cancelled; resolves with its id. */
function blockNode(cpus = Number(spawnSync('sinfo', ['--noheader', '--format=%c'], { env: slurmEnv, encoding: 'utf8' }).stdout.trim().split('\n')[0])): string {
  const res = spawnSync('sbatch', ['--parsable', '--job-name=blocker', `--cpus-per-task=${cpus}`, '--output=/dev/null', '--wrap', 'sleep 600'], { env: slurmEnv, encoding: 'utf8' });
  const id = res.stdout.trim().split(';')[0]!;
  expect(id, res.stderr).toMatch(/^\d+$/);
  return id;
}

/** The node's CPUs no job holds now (sinfo's allocated/idle/other/total). */
function idleCpus(): number {
  const idle = Number(spawnSync('sinfo', ['--noheader', '--format=%C'], { env: slurmEnv, encoding: 'utf8' }).stdout.trim().split('/')[1]);
  expect(idle).toBeGreaterThan(0);
  return idle;
}

const BIN = path.resolve(__dirname, '../packages/server/bin/portico.js');

/** `portico serve --workers slurm` as a child process; resolves once its banner names its URL. */
async function serve(project: string): Promise<{ child: ChildProcess; url: string; out: () => string }> {
  const child = spawn(process.execPath, [BIN, 'serve', project, '--port', '0', '--workers', 'slurm', '--worker-connect', '127.0.0.1', '--log-level', 'info'], { env: slurmEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  spawned.push(child);
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /API (http:\/\/\S+)\/v1/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.stderr!.on('data', (d) => (out += d));
    child.once('exit', (code) => reject(new Error(`the gateway exited (${code}) before serving:\n${out}`)));
  });
  return { child, url, out: () => out };
}
