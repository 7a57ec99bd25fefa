/** WebSocket /v1/interfaces/ws: connect, calls, streams, events, errors and faults against a real worker. */
import { existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, Client, gateway, tempProject } from './helpers.js';

afterAll(cleanup);

const EXTRA = {
  'marker.py': [
    'import os, time',
    'from portico import Interface, CallCancelled',
    '',
    'class Marker(Interface):',
    '    """Writes a file when its slow call is cancelled, so a test can see the cancel land."""',
    '    def hang(self, name: str):',
    '        try:',
    '            while True:',
    '                time.sleep(0.01)',
    '        except CallCancelled:',
    '            open(os.path.join(os.getcwd(), name), "w").write("cancelled")',
    '            raise',
    '',
    '    def pid(self):',
    '        return os.getpid()',
    '',
  ].join('\n'),
};

describe('WebSocket remote calls', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  let project: string;
  beforeAll(async () => {
    project = await tempProject(EXTRA);
    g = await gateway({ project });
  });

  it('connect answers connected with the uuid and resolved config; call answers result', async () => {
    const c = await Client.open(g.url);
    const connected = await c.connect('counter', { version: ['~big'] });
    expect(connected.payload).toMatchObject({ module: 'counter', config: { start: 0, step: 10 } });
    expect(connected.payload.uuid).toMatch(/^[0-9a-f]{24}$/);
    expect(await c.request({ type: 'call', method: 'add', args: [1] })).toMatchObject({ type: 'result', payload: 10 });
    expect(await c.request({ type: 'call', method: 'add', kwargs: { n: 2 } })).toMatchObject({ type: 'result', payload: 30 });
  });

  it('connect by uuid attaches to the existing record; a client uuid creates by id', async () => {
    const rest = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 7 }] });
    const c = await Client.open(g.url);
    const byUuid = await c.connect(rest.body.uuid);
    expect(byUuid.payload).toEqual(rest.body);
    const d = await Client.open(g.url);
    const byId = await d.connect('counter', { uuid: 'ws-made', label: 'from ws', meta: { who: 'test' } });
    expect(byId.payload).toMatchObject({ uuid: 'ws-made', label: 'from ws', meta: { who: 'test' } });
  });

  it('generators stream items in order and end with final: true; emit() arrives as events before the end', async () => {
    const c = await Client.open(g.url);
    await c.connect('streamer');
    const id = c.send({ type: 'call', method: 'ticks', args: [3] });
    await c.waitFor((f) => f.id === id && f.final === true);
    const frames = c.frames.filter((f) => f.id === id || f.type === 'event');
    expect(frames.map((f) => [f.type, f.payload, f.final])).toEqual([
      ['stream', 'tick 0', false],
      ['event', { progress: 1 / 3 }, undefined],
      ['stream', 'tick 1', false],
      ['event', { progress: 2 / 3 }, undefined],
      ['stream', 'tick 2', false],
      ['event', { progress: 1 }, undefined],
      ['stream', null, true],
    ]);
  });

  it('async generators stream too', async () => {
    const c = await Client.open(g.url);
    await c.connect('streamer');
    const id = c.send({ type: 'call', method: 'aticks', args: [4] });
    await c.waitFor((f) => f.id === id && f.final === true);
    expect(c.replies(id).map((f) => f.payload)).toEqual([0, 1, 2, 3, null]);
  });

  it('events reach every client attached to the interface', async () => {
    const a = await Client.open(g.url);
    const b = await Client.open(g.url);
    const { payload } = await a.connect('streamer', { version: [{ prefix: 'shared' }] });
    await b.connect(payload.uuid);
    await a.request({ type: 'call', method: 'ticks', args: [2] });
    await b.waitFor((f) => f.type === 'event' && f.payload.progress === 1);
    expect(b.frames.filter((f) => f.type === 'event').map((f) => f.payload)).toEqual([{ progress: 0.5 }, { progress: 1 }]);
    expect(b.frames.some((f) => f.type === 'stream')).toBe(false);
  });

  it('a slow call does not block ping or another call on the same socket', async () => {
    const c = await Client.open(g.url);
    await c.connect('slow');
    const slow = c.send({ type: 'call', method: 'wait', args: [1.5] });
    expect(await c.request({ type: 'ping' })).toMatchObject({ type: 'pong' });
    expect(await c.request({ type: 'call', method: 'quick' })).toMatchObject({ payload: 'quick' });
    expect(c.replies(slow)).toHaveLength(0);
    expect((await c.waitFor((f) => f.id === slow)).type).toBe('result');
  });

  it('errors are typed frames and the socket stays usable', async () => {
    const c = await Client.open(g.url);
    expect(await c.request({ type: 'ping', id: 7 })).toEqual({ type: 'pong', id: 7 });
    expect((await c.request({ type: 'call', method: 'add' })).payload.code).toBe('not_connected');
    c.sendRaw('{not json');
    const bad = await c.waitFor((f) => f.type === 'error' && f.id === undefined);
    expect(bad.payload.code).toBe('invalid_frame');
    expect((await c.request({ type: 'teleport' })).payload.code).toBe('unknown_frame');
    expect((await c.request({ type: 'connect' })).payload).toMatchObject({ code: 'invalid_frame', issues: [{ path: 'target' }] });
    c.sendRaw(Buffer.from([1, 2, 3]));
    await c.waitFor((f) => f.type === 'error' && /Binary/.test(f.payload.message));
    c.sendRaw('[1,2]');
    await c.waitFor((f) => f.type === 'error' && /object/.test(f.payload.message));
    expect((await c.request({ type: 'connect', target: 'nosuch' })).payload.code).toBe('unknown_module');
    await c.connect('faulty');
    expect((await c.request({ type: 'connect', target: 'counter' })).payload.code).toBe('already_connected');
    const raised = await c.request({ type: 'call', method: 'explode', args: ['bad'] });
    expect(raised.payload).toMatchObject({ code: 'call_failed', exception: 'ValueError' });
    expect((await c.request({ type: 'call', method: '_secret' })).payload.code).toBe('forbidden');
    expect((await c.request({ type: 'call', method: 'missing' })).payload.code).toBe('not_found');
    expect((await c.request({ type: 'call', method: 'explode', args: [1, 2, 3] })).payload.code).toBe('invalid_argument');
    expect((await c.request({ type: 'call', method: 'not_json' })).payload.code).toBe('unserializable_result');
    expect((await c.request({ type: 'call' })).payload.code).toBe('invalid_frame');
    expect(await c.request({ type: 'ping' })).toMatchObject({ type: 'pong' });
  });

  it('a close frame closes the socket with 1000', async () => {
    const c = await Client.open(g.url);
    await c.connect('counter');
    const closed = new Promise<number>((resolve) => c.ws.once('close', (code) => resolve(code)));
    c.send({ type: 'close' });
    expect(await closed).toBe(1000);
  });

  it('a client that goes away cancels its call inside Python', async () => {
    const c = await Client.open(g.url);
    await c.connect('marker');
    c.send({ type: 'call', method: 'hang', args: ['cancelled.txt'] });
    await new Promise((r) => setTimeout(r, 300));
    c.ws.terminate();
    const file = path.join(project, 'cancelled.txt');
    for (let i = 0; i < 100 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 100));
    expect(existsSync(file)).toBe(true);
  });

  it('1000 concurrent calls over 50 sockets are all answered correctly', async () => {
    const clients = await Promise.all(Array.from({ length: 50 }, () => Client.open(g.url)));
    await Promise.all(clients.map((c) => c.connect('streamer')));
    const expected = new Map<string | number, unknown>();
    const ids = clients.map((c, ci) =>
      Array.from({ length: 20 }, (_, k) => {
        const value = { client: ci, k, text: `v${ci}-${k}` };
        const id = c.send({ type: 'call', method: 'echo', args: [value] });
        expected.set(`${ci}:${id}`, value);
        return id;
      }),
    );
    await Promise.all(clients.map((c, ci) => Promise.all(ids[ci]!.map((id) => c.waitFor((f) => f.id === id))))); 
    let answered = 0;
    clients.forEach((c, ci) => {
      for (const id of ids[ci]!) {
        const replies = c.replies(id);
        expect(replies).toHaveLength(1);
        expect(replies[0]).toMatchObject({ type: 'result', payload: expected.get(`${ci}:${id}`) });
        answered++;
      }
    });
    expect(answered).toBe(1000);
  });
});

/** The project's worker once a call is in flight on it (as GET /v1/projects lists it). */
async function busyWorker(g: Awaited<ReturnType<typeof gateway>>) {
  for (let i = 0; i < 100; i++) {
    const worker = g.gateway.listProjects().workers.find((w) => w.directory === g.gateway.projects.defaultDir);
    if (worker && worker.calls > 0) return worker;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no call reached the worker');
}

describe('worker faults', () => {
  it('a worker killed mid-call fails that call with worker_crashed; the next call runs on a fresh worker', async () => {
    const g = await gateway({ project: await tempProject(EXTRA) });
    const c = await Client.open(g.url);
    await c.connect('marker');
    const firstPid = (await c.request({ type: 'call', method: 'pid' })).payload;
    const hung = c.send({ type: 'call', method: 'hang', args: ['never.txt'] });
    await new Promise((r) => setTimeout(r, 200));
    const worker = g.gateway.listProjects().workers.find((w) => w.directory === g.gateway.projects.defaultDir);
    expect(worker?.pid).toBe(firstPid);
    process.kill(worker!.pid!, 'SIGKILL');
    const failed = await c.waitFor((f) => f.id === hung);
    expect(failed).toMatchObject({ type: 'error', payload: { code: 'worker_crashed' } });
    const next = await c.request({ type: 'call', method: 'pid' });
    expect(next.type).toBe('result');
    expect(next.payload).not.toBe(firstPid);
    const rest = await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'add', args: [4] });
    expect(rest.body).toEqual({ payload: 4 });
  });

  it('a REST call in flight when the worker dies answers 502 worker_crashed', async () => {
    const g = await gateway({ project: await tempProject(EXTRA) });
    const pending = api(g, 'POST', '/v1/interfaces/call', { target: 'marker', method: 'hang', args: ['x.txt'] });
    const worker = await busyWorker(g);
    await new Promise((r) => setTimeout(r, 200));
    process.kill(worker.pid!, 'SIGKILL');
    const res = await pending;
    expect(res.status).toBe(502);
    expect(res.body.code).toBe('worker_crashed');
  });

  it('a REST client that goes away cancels its call inside Python, also on a connection that made calls before', async () => {
    const project = await tempProject(EXTRA);
    const g = await gateway({ project });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const post = (method: string, args: unknown[]) => {
      const body = JSON.stringify({ target: 'marker', method, args });
      return http.request(`${g.url}/v1/interfaces/call`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }).end(body);
    };
    const answered = (req: http.ClientRequest) =>
      new Promise<number>((resolve, reject) => req.on('response', (res) => res.resume().on('end', () => resolve(res.statusCode!))).on('error', reject));
    const sockets = new Set<unknown>();
    for (let i = 0; i < 2; i++) {
      const req = post('pid', []);
      req.on('socket', (socket) => sockets.add(socket));
      expect(await answered(req)).toBe(200);
    }
    const hung = post('hang', ['rest-cancelled.txt']);
    hung.on('socket', (socket) => sockets.add(socket));
    hung.on('error', () => undefined);
    await busyWorker(g);
    expect(sockets.size).toBe(1); // all three calls on one keep-alive connection
    hung.destroy();
    const file = path.join(project, 'rest-cancelled.txt');
    for (let i = 0; i < 100 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 100));
    expect(existsSync(file)).toBe(true);
    agent.destroy();
  });
});
