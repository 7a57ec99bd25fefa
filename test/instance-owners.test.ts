/**
 * Several gateways, one live instance (docs/operating/several-gateways.md): two or three gateways on one
 * PostgreSQL index and one project folder, each instance owned by the gateway that made it (a
 * lease in the index), the others forwarding to it. REST calls, WebSocket frames and widget pushes
 * land on one counter whichever gateway they reach; a forged gateway-to-gateway request is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realpath } from 'node:fs/promises';
import pg from 'pg';
import { api, cleanup, Client, gateway, tempProject } from './helpers.js';
import { startPostgres, type TestPostgres } from './support/postgres.js';

let postgres: TestPostgres;

/** A widget whose message handler sends its buffers back reversed. */
const ECHO = `
from portico import Interface, WidgetReply


class Echo(Interface):
    def ping(self):
        return "pong"

    def widget_state(self):
        return {}

    def widget_message(self, content, buffers):
        return WidgetReply({"sizes": [len(b) for b in buffers]}, [bytes(reversed(b)) for b in buffers])
`;
const TOKEN = 'owners-test-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };

beforeAll(async () => {
  postgres = await startPostgres();
});

afterAll(async () => {
  await cleanup();
  await postgres?.close();
});

async function pair(extra: Record<string, unknown> = {}) {
  const project = await tempProject();
  const options = { project, store: postgres.url, apiToken: TOKEN, instanceLeaseMs: 5000, ...extra };
  return { project, a: await gateway(options), b: await gateway(options) };
}

const call = (g: { url: string }, method: string, args: unknown[] = []) =>
  api(g, 'POST', '/v1/interfaces/call', { target: 'counter', version: ['~big'], method, args }, AUTH);

/** The project's leases as the index holds them: `columns` of each row, by uuid. */
async function owners(project: string, columns = 'uuid, address'): Promise<Array<Record<string, string>>> {
  const client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  try {
    return (await client.query(`SELECT ${columns} FROM portico_instance_owners WHERE project = $1 ORDER BY uuid`, [await realpath(project)])).rows;
  } finally {
    await client.end();
  }
}

describe('one live instance across gateways', () => {
  it('REST calls alternating between two gateways drive one counter: 10, 20, … 60', async () => {
    const { project, a, b } = await pair();
    expect((await call(a, 'reset')).body).toEqual({ payload: 0 });
    const answers: unknown[] = [];
    for (let i = 0; i < 6; i++) answers.push((await call(i % 2 ? b : a, 'add', [1])).body.payload);
    expect(answers).toEqual([10, 20, 30, 40, 50, 60]);
    // B holds no instance of its own: its worker never made one.
    const listed = (await api(b, 'GET', '/v1/projects', undefined, AUTH)).body;
    expect(listed.workers.reduce((n: number, w: { instances: number }) => n + w.instances, 0)).toBe(0);
    // The lease in the index names A, where B sent every call.
    const uuid = (await api(a, 'POST', '/v1/interfaces', { target: 'counter', version: ['~big'] }, AUTH)).body.uuid;
    expect(await owners(project)).toEqual([{ uuid, address: a.url }]);
  });

  it('a socket on B sees the pushes of calls made through A, and its widget_set reaches A', async () => {
    const { a, b } = await pair();
    const socket = await Client.open(b.url, { headers: AUTH });
    const connected = await socket.connect('counter', { version: ['~big'] });
    expect(connected.payload.module).toBe('counter');
    expect((await call(a, 'reset')).status).toBe(200);
    expect((await call(a, 'add', [2])).body.payload).toBe(20);
    const push = await socket.waitFor((f) => f.type === 'widget_change' && f.id === undefined && f.payload?.changes?.count === 20);
    expect(push.payload.changes).toEqual({ count: 20 });
    const set = await socket.request({ type: 'widget_set', changes: { count: 35 } });
    expect(set.type).toBe('widget_change');
    expect((await call(a, 'value')).body.payload).toBe(35);
    const result = await socket.request({ type: 'call', method: 'add', args: [1] });
    expect(result).toMatchObject({ type: 'result', payload: 45 });
  });

  it('the data plane crosses the relay as it came: an upload and a read of 3 MiB, widget buffers both ways as binary frames', async () => {
    const project = await tempProject({ 'echo.py': ECHO });
    const options = { project, store: postgres.url, apiToken: TOKEN, instanceLeaseMs: 5000 };
    const [a, b] = [await gateway(options), await gateway(options)];
    // A makes both instances (it takes their leases); every frame below goes through B.
    for (const [target, method] of [['files', 'listing'], ['echo', 'ping']]) expect((await api(a, 'POST', '/v1/interfaces/call', { target, method }, AUTH)).status).toBe(200);
    const socket = await Client.open(b.url, { headers: AUTH });
    await socket.connect('files', { buffers: 'binary' });
    const data = Buffer.from(Array.from({ length: 3 * 1024 * 1024 }, (_, i) => (i * 7919) % 251));
    const upload = socket.send({ type: 'chunk_start', path: 'data.bin', mode: 'write' });
    for (let at = 0; at < data.length; at += 1024 * 1024) socket.ws.send(data.subarray(at, at + 1024 * 1024));
    socket.send({ type: 'chunk_end', id: upload });
    expect(await socket.waitFor((f) => f.id === upload)).toMatchObject({ type: 'chunk_done', payload: { bytes_written: data.length } });
    const received: Buffer[] = [];
    socket.onBinary = (chunk) => received.push(Buffer.from(chunk));
    expect(await socket.request({ type: 'chunk_start', mode: 'read', params: { name: 'data.bin' } })).toMatchObject({ type: 'chunk_done', payload: { bytes_sent: data.length } });
    expect(Buffer.concat(received).equals(data)).toBe(true);

    const widget = await Client.open(b.url, { headers: AUTH });
    await widget.connect('echo', { buffers: 'binary' });
    const sent = [Buffer.from([1, 2, 3]), Buffer.alloc(0), Buffer.from('portico')];
    const id = widget.sendWithBuffers({ type: 'widget_msg', content: 'echo' }, sent);
    const reply = await widget.waitFor((f) => f.id === id && f.attached?.length === 3);
    expect(reply).toMatchObject({ type: 'widget_msg', payload: { content: { sizes: [3, 0, 7] } }, binary_buffers: 3 });
    expect(reply.attached!.map((buffer) => [...buffer])).toEqual(sent.map((buffer) => [...buffer].reverse()));
    // B's worker made neither instance: every byte went to A and back.
    const listed = (await api(b, 'GET', '/v1/projects', undefined, AUTH)).body;
    expect(listed.workers.reduce((n: number, w: { instances: number }) => n + w.instances, 0)).toBe(0);
  });

  it('a single gateway on PostgreSQL writes one lease per instance it makes, and nothing per call', async () => {
    const project = await tempProject();
    // A lease long enough that no renewal falls inside the test: renewals are the only other write.
    const only = await gateway({ project, store: postgres.url, apiToken: TOKEN, instanceLeaseMs: 180_000 });
    // xmin changes with every write to a row: equal before and after, the row was not written.
    const leases = () => owners(project, 'uuid, address, xmin::text AS version');
    expect((await call(only, 'reset')).status).toBe(200);
    const made = await leases();
    expect(made).toHaveLength(1);
    expect(made[0].address).toBe(only.url);
    for (let i = 1; i <= 10; i++) expect((await call(only, 'add', [1])).body.payload).toBe(10 * i);
    const socket = await Client.open(only.url, { headers: AUTH });
    await socket.connect('counter', { version: ['~big'] });
    for (let i = 11; i <= 20; i++) expect(await socket.request({ type: 'call', method: 'add', args: [1] })).toMatchObject({ type: 'result', payload: 10 * i });
    await socket.close();
    expect(await leases()).toEqual(made);
    // A second instance is a second lease, written once.
    expect((await api(only, 'POST', '/v1/interfaces/call', { target: 'counter', version: [{ step: 3 }], method: 'value' }, AUTH)).status).toBe(200);
    const after = await leases();
    expect(after).toHaveLength(2);
    expect(after).toEqual(expect.arrayContaining(made));
  });

  it('a request that says it comes from a gateway without the peer secret is refused', async () => {
    const { a } = await pair({ peerSecret: 'peer-secret' });
    const forged = await api(a, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'value' }, { ...AUTH, 'x-portico-peer': 'forged', 'x-portico-peer-user': 'mallory' });
    expect(forged.status).toBe(401);
    expect(forged.body.code).toBe('unauthorized');
    await expect(Client.open(a.url, { headers: { ...AUTH, 'x-portico-peer': 'forged' } })).rejects.toMatchObject({ status: 401 });
    const genuine = await api(a, 'POST', '/v1/interfaces', { target: 'counter' }, { authorization: 'Bearer peer-secret', 'x-portico-peer': 'b', 'x-portico-peer-user': 'alice' });
    expect(genuine.status).toBe(200);
  });
});
