/**
 * The live instance's lifetime (docs/writing/lifetime.md): it lives until it is released or has had no
 * use and no attached client for --instance-idle; a worker stops only when it holds none and
 * has been idle --worker-idle; a worker that dies or wedges is started again at once and the
 * attached clients hear `instance_restarted`; one that keeps dying backs off.
 */
import { chmod, writeFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api, cleanup, Client, gateway, tempProject } from './helpers.js';

afterAll(cleanup);

const PROBE = `
import os, signal, time
from portico import Interface

class Probe(Interface):
    def __init__(self):
        self.count = 0

    def tick(self) -> int:
        self.count += 1
        return self.count

    def sleep(self, seconds: float) -> float:
        time.sleep(seconds)
        return seconds

    def crash(self):
        os._exit(1)

    def freeze(self):
        # Stops the whole process: no thread can answer anything, as in a wedge.
        os.kill(os.getpid(), signal.SIGSTOP)
`;

const BOARD = `
from portico import Interface

class Board(Interface):
    def __init__(self):
        self.title = "untitled"
        self.image = b""

    def widget_state(self):
        return {"title": self.title, "image": self.image}

    def widget_update(self, changes):
        if "title" in changes:
            self.title = str(changes["title"])
        if "image" in changes:
            self.image = bytes(changes["image"])
        return changes

    def retitle(self, title):
        self.title = title
        self.push_widget_change({"title": title})
`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function created(g: { url: string }, target: string, version: unknown[] = []): Promise<string> {
  const res = await api(g, 'POST', '/v1/interfaces', { target, version });
  expect(res.status).toBe(200);
  return res.body.uuid as string;
}

const call = (g: { url: string }, uuid: string, method: string, args: unknown[] = []) => api(g, 'POST', '/v1/interfaces/call', { target: uuid, method, args });

describe('lifetime', { timeout: 120_000 }, () => {
  it('REST calls by uuid keep the instance and its worker alive past --worker-idle', async () => {
    const g = await gateway({ project: await tempProject({ 'probe.py': PROBE }), workerIdleMs: 1000, instanceIdleMs: 60_000 });
    const uuid = await created(g, 'probe');
    const counts: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await call(g, uuid, 'tick');
      expect(res.status).toBe(200);
      counts.push(res.body.payload);
      await sleep(1600); // longer than --worker-idle each time
    }
    expect(counts).toEqual([1, 2, 3, 4, 5, 6]);
    const health = (await api(g, 'GET', '/v1/health')).body;
    expect(health.instances[g.gateway.projects.defaultDir]).toBe(1);
    expect(health.workers).toBe(1);
  });

  it('an instance with no use and no client for --instance-idle is released; then its worker stops', async () => {
    const g = await gateway({ project: await tempProject({ 'probe.py': PROBE }), workerIdleMs: 1000, instanceIdleMs: 1500 });
    const uuid = await created(g, 'probe');
    expect((await call(g, uuid, 'tick')).body.payload).toBe(1);
    expect((await call(g, uuid, 'tick')).body.payload).toBe(2);
    await expect.poll(async () => (await api(g, 'GET', '/v1/health')).body.instances[g.gateway.projects.defaultDir] ?? 0, { timeout: 10_000 }).toBe(0);
    await expect.poll(() => g.gateway.listProjects().workers.length, { timeout: 10_000 }).toBe(0);
    expect((await call(g, uuid, 'tick')).body.payload).toBe(1);
  });

  it('a worker slower to start than --worker-idle is waited for, not stopped as idle', async () => {
    // An interpreter that takes 2.5 s to start, as a cold one on a loaded machine does.
    const project = await tempProject({ 'probe.py': PROBE });
    const python = path.join(project, 'slow-python');
    await writeFile(python, `#!/bin/sh\nsleep 2.5\nexec ${process.env.PORTICO_PYTHON || 'python3'} "$@"\n`);
    await chmod(python, 0o755);
    const g = await gateway({ project, python, workerIdleMs: 500, instanceIdleMs: 60_000 });
    const uuid = await created(g, 'probe');
    expect((await call(g, uuid, 'tick')).body.payload).toBe(1);
    const client = await Client.open(g.url);
    await client.connect(uuid);
    expect((await client.request({ type: 'call', method: 'tick' })).payload).toBe(2);
    client.close();
  });

  it('an attached client keeps its instance however quiet; going away detaches, never releases', async () => {
    const g = await gateway({ project: await tempProject({ 'probe.py': PROBE }), workerIdleMs: 1000, instanceIdleMs: 2000 });
    const first = await Client.open(g.url);
    const { payload } = await first.connect('probe');
    expect((await first.request({ type: 'call', method: 'tick' })).payload).toBe(1);
    await sleep(3500); // past --instance-idle, but attached
    expect((await first.request({ type: 'call', method: 'tick' })).payload).toBe(2);
    first.close();
    // A script that exits: the next one finds the count where the first left it.
    const second = await Client.open(g.url);
    await second.connect(payload.uuid);
    expect((await second.request({ type: 'call', method: 'tick' })).payload).toBe(3);
    second.close();
    expect((await call(g, payload.uuid, 'tick')).body.payload).toBe(4);
  });

  it('release over REST and over the socket drops the live instance; the record stays', async () => {
    const g = await gateway({ project: await tempProject({ 'probe.py': PROBE }) });
    const uuid = await created(g, 'probe');
    await call(g, uuid, 'tick');
    expect((await call(g, uuid, 'tick')).body.payload).toBe(2);
    const released = await api(g, 'POST', `/v1/interfaces/${uuid}/release`);
    expect(released).toMatchObject({ status: 200, body: { uuid, released: true } });
    expect((await api(g, 'POST', `/v1/interfaces/${uuid}/release`)).body).toEqual({ uuid, released: false });
    expect((await api(g, 'GET', `/v1/interfaces/${uuid}`)).status).toBe(200);
    expect((await call(g, uuid, 'tick')).body.payload).toBe(1);

    const ws = await Client.open(g.url);
    await ws.connect(uuid);
    expect((await ws.request({ type: 'call', method: 'tick' })).payload).toBe(2);
    expect(await ws.request({ type: 'release' })).toMatchObject({ type: 'released', payload: { uuid, released: true } });
    expect((await ws.request({ type: 'call', method: 'tick' })).payload).toBe(1);
    expect((await api(g, 'POST', '/v1/interfaces/nope/release')).status).toBe(404);
    const fresh = await Client.open(g.url);
    expect(await fresh.request({ type: 'release' })).toMatchObject({ type: 'error', payload: { code: 'not_connected' } });
  });
});

describe('widget state that comes back', { timeout: 120_000 }, () => {
  it('after a crash from another interface: the board keeps its title and image, and its client is told to read it again', async () => {
    const project = await tempProject({ 'probe.py': PROBE, 'board.py': BOARD });
    const g = await gateway({ project });
    const page = await Client.open(g.url);
    const { payload } = await page.connect('board');
    const image = Buffer.from([0, 1, 2, 255]);
    const set = await page.request({ type: 'widget_set', changes: { title: 'My board', image: null }, buffer_paths: [['image']], buffers: [image.toString('base64')] });
    expect(set.type).toBe('widget_change');
    const crasher = await created(g, 'probe');
    await sleep(200); // the save is coalesced (30 ms)
    expect((await call(g, crasher, 'crash')).body.code).toBe('worker_crashed');
    const told = await page.waitFor((f) => f.type === 'instance_restarted');
    expect(told.payload.uuid).toBe(payload.uuid);
    const state = await page.request({ type: 'widget_get' });
    expect(state.payload.state).toEqual({ title: 'My board', image: null });
    expect(Buffer.from(state.payload.buffers[0], 'base64')).toEqual(image);
  });

  it('set through any door: a REST call of widget_update, and a widget_message that changes the state, come back after a crash', async () => {
    const project = await tempProject({ 'probe.py': PROBE, 'board.py': BOARD.replace('    def retitle', '    def widget_message(self, content, buffers):\n        self.title = str(content)\n        return None\n\n    def retitle') });
    const g = await gateway({ project });
    const board = await created(g, 'board');
    // As the reference's web SDK sets it: by module name, the changes as a keyword.
    const updated = await api(g, 'POST', '/v1/interfaces/call', { target: 'board', method: 'widget_update', kwargs: { changes: { title: 'Set over REST' } } });
    expect([updated.status, updated.body.payload]).toEqual([200, { title: 'Set over REST' }]);
    const crasher = await created(g, 'probe');
    await sleep(200); // the save is coalesced (30 ms)
    expect((await call(g, crasher, 'crash')).body.code).toBe('worker_crashed');
    const after = await call(g, board, 'widget_state');
    expect(after.body.payload?.title, JSON.stringify(after.body)).toBe('Set over REST');

    // A custom message whose hook changes the state, over the WebSocket: kept the same way.
    const ws = await Client.open(g.url);
    await ws.connect(board);
    await ws.request({ type: 'widget_msg', content: 'Set by a message' });
    ws.close();
    // Released (a second crash this soon would be a quick death in a row): the next use makes it again from the saved file.
    expect((await api(g, 'POST', `/v1/interfaces/${board}/release`)).body.released).toBe(true);
    const last = await call(g, board, 'widget_state');
    expect(last.body.payload?.title, JSON.stringify(last.body)).toBe('Set by a message');
  });

  it('after an idle release, and on another gateway serving the same folder after this one stops', async () => {
    const project = await tempProject({ 'board.py': BOARD });
    const g = await gateway({ project, instanceIdleMs: 1000, workerIdleMs: 1000 });
    const uuid = await created(g, 'board');
    expect((await call(g, uuid, 'retitle', ['pushed from Python'])).status).toBe(200);
    await expect.poll(() => g.gateway.listProjects().workers.length, { timeout: 10_000 }).toBe(0);
    const ws = await Client.open(g.url);
    await ws.connect(uuid);
    expect((await ws.request({ type: 'widget_get' })).payload.state.title).toBe('pushed from Python');
    await ws.request({ type: 'widget_set', changes: { title: 'last words' } });
    ws.close();
    await g.close();
    const next = await gateway({ project });
    const again = await Client.open(next.url);
    await again.connect(uuid);
    expect((await again.request({ type: 'widget_get' })).payload.state.title).toBe('last words');
  });
});

describe('supervision', { timeout: 120_000 }, () => {
  it('a crash fails the calls in flight, starts the worker again at once and tells every attached client', async () => {
    const g = await gateway({ project: await tempProject({ 'probe.py': PROBE }) });
    const watcher = await Client.open(g.url);
    const { payload } = await watcher.connect('counter');
    await watcher.request({ type: 'call', method: 'add', args: [3] });
    const crasher = await created(g, 'probe', [{}]);
    const sleeper = await Client.open(g.url);
    await sleeper.connect('slow');
    const sleeping = sleeper.request({ type: 'call', method: 'wait', args: [30] });
    await sleep(300);
    const [before] = g.gateway.listProjects().workers;

    const crash = await call(g, crasher, 'crash');
    expect(crash.status).toBe(502);
    expect(crash.body.code).toBe('worker_crashed');
    expect((await sleeping).payload.code).toBe('worker_crashed');
    const told = await watcher.waitFor((f) => f.type === 'instance_restarted');
    expect(told.payload).toMatchObject({ uuid: payload.uuid, reason: 'worker_crashed' });
    expect(told.payload.message).toMatch(/exit code 1/);
    // started again without waiting for a request
    await expect.poll(() => g.gateway.listProjects().workers.some((w) => w.pid !== before!.pid), { timeout: 10_000 }).toBe(true);
    expect((await watcher.request({ type: 'call', method: 'value' })).type).toBe('result');
    const metrics = await (await fetch(`${g.url}/metrics`)).text();
    expect(metrics).toMatch(/portico_worker_restarts_total\{reason="crashed"\} 1/);
  });

  it('calls arriving right behind a crash wait for the new worker and are answered; the call in flight fails with worker_crashed', async () => {
    const g = await gateway({ project: await tempProject({ 'probe.py': PROBE }) });
    const crasher = await created(g, 'probe', [{}]);
    expect((await call(g, crasher, 'tick')).status).toBe(200);
    const crash = call(g, crasher, 'crash');
    // Another interface of the same project, within milliseconds: each a config not resolved yet,
    // so each needs the worker before its call is sent (resolve), as a first call by module does.
    const answers = await Promise.all(
      [0, 1, 2, 5, 10, 20, 50].map(async (start) => {
        await sleep(start);
        const res = await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', version: [{ start }], method: 'add', args: [1] });
        return [res.status, res.body];
      }),
    );
    expect(answers).toEqual([0, 1, 2, 5, 10, 20, 50].map((start) => [200, { payload: start + 1 }]));
    expect(await crash).toMatchObject({ status: 502, body: { code: 'worker_crashed' } });
  });

  it('a call arriving while quick deaths in a row back off waits for the next start (within the bound), not worker_unavailable', async () => {
    const g = await gateway({ project: await tempProject({ 'probe.py': PROBE }) });
    const crasher = await created(g, 'probe', [{}]);
    expect((await call(g, crasher, 'tick')).status).toBe(200);
    expect((await call(g, crasher, 'crash')).body.code).toBe('worker_crashed');
    // Started again at once (it held a live instance); dying again within 10 s of that start backs off 0.5 s.
    expect((await call(g, crasher, 'tick')).status).toBe(200);
    expect((await call(g, crasher, 'crash')).body.code).toBe('worker_crashed');
    const res = await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', version: [{ start: 7 }], method: 'add', args: [2] });
    expect(res).toMatchObject({ status: 200, body: { payload: 9 } });
    const protocol = (await api(g, 'GET', '/v1/protocol')).body;
    expect(protocol.limits.workerRestartWaitMs).toBe(5000);
  });

  it('a wedged worker is found by its heartbeat, reported degraded, killed and replaced', async () => {
    const g = await gateway({ project: await tempProject({ 'probe.py': PROBE }), workerLivenessMs: 1000 });
    const watcher = await Client.open(g.url);
    const { payload } = await watcher.connect('probe');
    expect((await watcher.request({ type: 'call', method: 'tick' })).payload).toBe(1);
    const [before] = g.gateway.listProjects().workers;
    expect((await api(g, 'GET', '/v1/health')).body.status).toBe('ok');

    const frozen = watcher.request({ type: 'call', method: 'freeze' });
    await expect.poll(async () => (await api(g, 'GET', '/v1/health')).body.status, { timeout: 10_000, interval: 100 }).toBe('degraded');
    const health = (await api(g, 'GET', '/v1/health')).body;
    expect(health.problems[0]).toMatchObject({ project: g.gateway.projects.defaultDir, status: expect.stringMatching(/wedged|restarting/) });
    expect((await frozen).payload.code).toBe('worker_crashed');
    const told = await watcher.waitFor((f) => f.type === 'instance_restarted');
    expect(told.payload).toMatchObject({ uuid: payload.uuid, reason: 'worker_wedged' });
    await expect.poll(async () => (await api(g, 'GET', '/v1/health')).body.status, { timeout: 15_000 }).toBe('ok');
    expect(g.gateway.listProjects().workers[0]!.pid).not.toBe(before!.pid);
    expect((await watcher.request({ type: 'call', method: 'tick' })).payload).toBe(1);
    const metrics = await (await fetch(`${g.url}/metrics`)).text();
    expect(metrics).toMatch(/portico_worker_restarts_total\{reason="wedged"\} 1/);
  });

  it('a worker that keeps dying at start is started again with growing delays, not in a loop', async () => {
    const project = await tempProject({ 'probe.py': PROBE });
    // An interpreter that works until the test breaks it, then dies at once (as a broken venv would).
    const broken = path.join(project, 'broken');
    const starts = path.join(project, 'starts.log');
    const python = path.join(project, 'python-wrapper');
    await writeFile(python, `#!/bin/sh\necho start >> '${starts}'\n[ -e '${broken}' ] && exit 3\nexec ${process.env.PORTICO_PYTHON || 'python3'} "$@"\n`);
    await chmod(python, 0o755);
    const g = await gateway({ project, python });
    const watcher = await Client.open(g.url);
    await watcher.connect('probe');
    expect((await watcher.request({ type: 'call', method: 'tick' })).payload).toBe(1);
    await writeFile(broken, '');
    const [worker] = g.gateway.listProjects().workers;
    process.kill(worker!.pid!, 'SIGKILL');
    await sleep(3000);
    // 1 start before, then at once, +0.5 s, +1 s, +2 s: a handful, not hundreds.
    const attempts = (await readFile(starts, 'utf8')).trim().split('\n').length - 1;
    expect(attempts).toBeGreaterThanOrEqual(3);
    expect(attempts).toBeLessThanOrEqual(5);
    const health = (await api(g, 'GET', '/v1/health')).body;
    expect(health.status).toBe('degraded');
    expect(health.problems[0]).toMatchObject({ status: 'crash_loop', failures: expect.any(Number), next_attempt_at: expect.any(String) });
    const refused = await watcher.request({ type: 'call', method: 'tick' });
    expect(refused.payload.code).toBe('worker_unavailable');
  });
});
