/**
 * The nesting bound of client JSON (LIMITS.jsonDepthMax) on every path into the gateway: REST
 * bodies, and text frames on /v1/interfaces/ws and /v1/executions/ws. A request nested past it is
 * refused with invalid_argument before anything reaches Python, and the worker and the socket stay
 * usable; one nested exactly to the bound goes through. Against a real gateway and Python worker.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LIMITS } from '../packages/server/src/config/constants.js';
import { api, cleanup, Client, gateway, type Frame } from './helpers.js';

afterAll(cleanup);

/** `n` arrays, one inside the other, around `inner`: in a request's field, its innermost is level n. */
const nested = (n: number, inner = '"bottom"') => '['.repeat(n) + inner + ']'.repeat(n);
/** `n` objects, one inside the other. */
const nestedObjects = (n: number) => '{"k":'.repeat(n) + '1' + '}'.repeat(n);

const REFUSAL = /^JSON nested deeper than 64 levels \(at \$/;

/** A WebSocket text frame sent as is, and the error frame answering its id. */
async function refusedFrame(client: Client, text: string, id: string): Promise<Frame['payload']> {
  client.sendRaw(text);
  const reply = await client.waitFor((f) => f.id === id);
  expect(reply.type).toBe('error');
  return reply.payload;
}

/**
 * The longest text JSON.parse was given while `run` ran (the gateway runs in this process): a
 * refusal must not parse what it refuses, which for a maximal frame of nested lists cost V8
 * seconds and gigabytes.
 */
async function longestParsed(run: () => Promise<void>): Promise<number> {
  const parse = vi.spyOn(JSON, 'parse');
  try {
    await run();
    return Math.max(0, ...parse.mock.calls.map(([text]) => String(text).length));
  } finally {
    parse.mockRestore();
  }
}

/** The socket still answers: ping → pong. */
async function stillUsable(client: Client): Promise<void> {
  expect((await client.request({ type: 'ping' })).type).toBe('pong');
}

describe('JSON nesting bound over REST', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway();
  });

  it('is 64 levels below the envelope, served in /v1/protocol limits', async () => {
    expect(LIMITS.jsonDepthMax).toBe(64);
    expect((await api(g, 'GET', '/v1/protocol')).body.limits.jsonDepthMax).toBe(64);
  });

  it('call: a 2 KB call with args nested 1,200 deep is refused with invalid_argument, and the worker still answers', async () => {
    const body = `{"target":"counter","method":"add","args":${nested(1200, '1')}}`;
    expect(body.length).toBeLessThan(2600);
    const res = await api(g, 'POST', '/v1/interfaces/call', body);
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatchObject({ code: 'invalid_argument', message: 'JSON nested deeper than 64 levels (at $.args[0][0][0][0][0]…)' });
    const next = await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'add', args: [3] });
    expect(next).toMatchObject({ status: 200, body: { payload: 3 } });
  });

  it('call: args whose innermost list is exactly level 64 reach the method; level 65 is refused', async () => {
    const exact = await api(g, 'POST', '/v1/interfaces/call', `{"target":"streamer","method":"echo","args":${nested(64)}}`);
    expect(exact.status).toBe(200);
    expect(JSON.stringify(exact.body.payload)).toBe(nested(63));
    const over = await api(g, 'POST', '/v1/interfaces/call', `{"target":"streamer","method":"echo","args":${nested(65)}}`);
    expect([over.status, over.body.detail.code]).toEqual([400, 'invalid_argument']);
    expect(over.body.detail.message).toMatch(REFUSAL);
  });

  it('call: kwargs and version are bounded the same way', async () => {
    const kwargs = await api(g, 'POST', '/v1/interfaces/call', `{"target":"streamer","method":"echo","kwargs":{"value":${nestedObjects(1200)}}}`);
    expect([kwargs.status, kwargs.body.detail.code]).toEqual([400, 'invalid_argument']);
    expect(kwargs.body.detail.message).toBe('JSON nested deeper than 64 levels (at $.kwargs.value.k.k.k.k…)');
    const version = await api(g, 'POST', '/v1/interfaces/call', `{"target":"counter","method":"add","version":[{"start":${nested(1200, '0')}}]}`);
    expect([version.status, version.body.detail.code]).toEqual([400, 'invalid_argument']);
  });

  it('create: meta nested 20,000 deep is refused, and listing still answers', async () => {
    const res = await api(g, 'POST', '/v1/interfaces', `{"target":"counter","meta":{"x":${nested(20_000, '1')}}}`);
    expect([res.status, res.body.detail.code]).toEqual([400, 'invalid_argument']);
    expect(res.body.detail.message).toBe('JSON nested deeper than 64 levels (at $.meta.x[0][0][0][0]…)');
    expect((await api(g, 'GET', '/v1/interfaces')).status).toBe(200);
  });

  it('a 15 MiB body nested 7 million deep is refused without being parsed', async () => {
    const n = 7 * 1024 * 1024;
    const body = `{"target":"counter","method":"add","args":${'['.repeat(n)}${']'.repeat(n)}}`;
    let res: Awaited<ReturnType<typeof api>> | undefined;
    expect(await longestParsed(async () => void (res = await api(g, 'POST', '/v1/interfaces/call', body)))).toBeLessThan(1024);
    expect([res!.status, res!.body.detail.code]).toEqual([400, 'invalid_argument']);
  });

  it('search: a query nested past the bound is refused', async () => {
    const res = await api(g, 'POST', '/v1/interfaces/search', `{"config":{"filters":[{"path":"start","op":"in","value":${nested(1200, '1')}}]}}`);
    expect([res.status, res.body.detail.code]).toEqual([400, 'invalid_argument']);
    expect((await api(g, 'POST', '/v1/interfaces/search', { module: 'counter' })).status).toBe(200);
  });
});

describe('JSON nesting bound over the WebSocket', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway();
  });

  it('call: args nested 1,200 deep answer an error frame with the id; the socket and worker stay usable', async () => {
    const c = await Client.open(g.url);
    await c.connect('counter');
    const payload = await refusedFrame(c, `{"type":"call","id":"deep-call","method":"add","args":${nested(1200, '1')}}`, 'deep-call');
    expect(payload).toEqual({ code: 'invalid_argument', message: 'JSON nested deeper than 64 levels (at $.args[0][0][0][0][0]…)' });
    const kwargs = await refusedFrame(c, `{"id":"deep-kwargs","type":"call","method":"add","kwargs":{"n":${nestedObjects(1200)}}}`, 'deep-kwargs');
    expect(kwargs.code).toBe('invalid_argument');
    await stillUsable(c);
    expect(await c.request({ type: 'call', method: 'add', args: [2] })).toMatchObject({ type: 'result', payload: 2 });
  });

  it('a 32 MiB frame nested 16 million deep, its id last, is refused without being parsed and answers that id', async () => {
    const c = await Client.open(g.url);
    const n = 16 * 1024 * 1024;
    const text = `{"type":"call","method":"add","args":${'['.repeat(n)}${']'.repeat(n)},"id":"late-id"}`;
    let payload: Frame['payload'];
    expect(await longestParsed(async () => void (payload = await refusedFrame(c, text, 'late-id')))).toBeLessThan(1024);
    expect(payload.code).toBe('invalid_argument');
    await stillUsable(c);
  });

  it('call: args exactly 64 levels deep reach the method; 65 are refused', async () => {
    const c = await Client.open(g.url);
    await c.connect('streamer');
    c.sendRaw(`{"type":"call","id":"exact","method":"echo","args":${nested(64)}}`);
    const exact = await c.waitFor((f) => f.id === 'exact');
    expect(exact.type).toBe('result');
    expect(JSON.stringify(exact.payload)).toBe(nested(63));
    const over = await refusedFrame(c, `{"type":"call","id":"over","method":"echo","args":${nested(65)}}`, 'over');
    expect(over.code).toBe('invalid_argument');
    expect(over.message).toMatch(REFUSAL);
  });

  it('connect: meta nested past the bound is refused; the socket connects afterwards', async () => {
    const c = await Client.open(g.url);
    const payload = await refusedFrame(c, `{"type":"connect","id":"deep-connect","target":"counter","meta":{"x":${nested(20_000, '1')}}}`, 'deep-connect');
    expect(payload).toMatchObject({ code: 'invalid_argument', message: 'JSON nested deeper than 64 levels (at $.meta.x[0][0][0][0]…)' });
    const version = await refusedFrame(c, `{"type":"connect","id":"deep-version","target":"counter","version":[{"start":${nested(1200, '0')}}]}`, 'deep-version');
    expect(version.code).toBe('invalid_argument');
    await stillUsable(c);
    await c.connect('counter');
  });

  it('widget_set changes and widget_msg content nested past the bound are refused', async () => {
    const c = await Client.open(g.url);
    await c.connect('counter');
    const set = await refusedFrame(c, `{"type":"widget_set","id":"deep-set","changes":{"count":${nested(1200, '1')}}}`, 'deep-set');
    expect(set.code).toBe('invalid_argument');
    expect(set.message).toMatch(REFUSAL);
    const msg = await refusedFrame(c, `{"type":"widget_msg","id":"deep-msg","content":${nestedObjects(1200)}}`, 'deep-msg');
    expect(msg.code).toBe('invalid_argument');
    expect(msg.message).toMatch(REFUSAL);
    await stillUsable(c);
    expect((await c.request({ type: 'widget_set', changes: { count: 5 } })).type).toBe('widget_change');
  });

  it('chunk_start: read params nested past the bound are refused, and no transfer is left active', async () => {
    const c = await Client.open(g.url);
    await c.connect('files');
    const payload = await refusedFrame(c, `{"type":"chunk_start","id":"deep-read","mode":"read","params":{"name":${nested(1200)}}}`, 'deep-read');
    expect(payload.code).toBe('invalid_argument');
    expect(payload.message).toMatch(REFUSAL);
    await stillUsable(c);
    // A transfer left active would answer transfer_active here.
    expect((await c.request({ type: 'chunk_start', mode: 'read', params: { name: 'missing.bin' } })).payload.code).toBe('not_found');
  });

  it('/v1/executions/ws: connect and call frames nested past the bound are refused', async () => {
    const c = await Client.open(g.url, { path: '/v1/executions/ws' });
    const connect = await refusedFrame(c, `{"type":"connect","id":"deep-run","target":"x","extra":${nested(1200)}}`, 'deep-run');
    expect(connect.code).toBe('invalid_argument');
    const call = await refusedFrame(c, `{"type":"call","id":"deep-output","method":"output","kwargs":{"tail":${nested(1200, '1')}}}`, 'deep-output');
    expect(call.code).toBe('invalid_argument');
    await stillUsable(c);
  });
});
