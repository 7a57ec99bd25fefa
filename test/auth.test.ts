/** The api token and the origin policy, for REST and WebSocket upgrades alike. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, Client, gateway } from './helpers.js';

afterAll(cleanup);

const TOKEN = 's3cret-token';

describe('api token', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway({ apiToken: TOKEN });
  });

  it('REST without or with a wrong token is 401 with WWW-Authenticate: Bearer', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: TOKEN }, { authorization: `Basic ${TOKEN}` }] as Array<Record<string, string>>) {
      const res = await api(g, 'GET', '/v1/health', undefined, headers);
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(res.body.code).toBe('unauthorized');
    }
    const post = await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'add' });
    expect(post.status).toBe(401);
  });

  it('REST with the token is admitted', async () => {
    const res = await api(g, 'GET', '/v1/health', undefined, { authorization: `Bearer ${TOKEN}` });
    expect(res.status).toBe(200);
    const call = await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'add', args: [3] }, { authorization: `bearer ${TOKEN}` });
    expect(call.body).toEqual({ payload: 3 });
  });

  it('/docs and /openapi.json need no token', async () => {
    expect((await api(g, 'GET', '/openapi.json')).status).toBe(200);
    expect((await api(g, 'GET', '/docs')).status).toBe(200);
    expect((await fetch(`${g.url}/docs/swagger-ui.css`)).status).toBe(200);
  });

  it('WebSocket upgrades need the same credential', async () => {
    await expect(Client.open(g.url)).rejects.toMatchObject({ status: 401 });
    await expect(Client.open(g.url, { headers: { authorization: 'Bearer nope' } })).rejects.toMatchObject({ status: 401 });
    await expect(Client.open(g.url, { protocols: ['bearer', 'nope'] })).rejects.toMatchObject({ status: 401 });
    const byHeader = await Client.open(g.url, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await byHeader.request({ type: 'ping' })).toMatchObject({ type: 'pong' });
  });

  it('the token may travel as the bearer subprotocol; the server answers bearer', async () => {
    const c = await Client.open(g.url, { protocols: ['bearer', TOKEN] });
    expect(c.ws.protocol).toBe('bearer');
    await c.connect('counter', { version: [{ start: 100 }] });
    expect(await c.request({ type: 'call', method: 'add', args: [2] })).toMatchObject({ payload: 102 });
  });

  it('an upgrade on an unknown path is refused', async () => {
    await expect(Client.open(g.url, { headers: { authorization: `Bearer ${TOKEN}` }, path: '/v1/nope/ws' })).rejects.toMatchObject({ status: 404 });
  });
});

describe('origins', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway({ allowOrigins: ['http://allowed.test'] });
  });

  it('a browser socket from a foreign origin is refused; same-origin and allowlisted ones pass', async () => {
    await expect(Client.open(g.url, { headers: { origin: 'http://evil.test' } })).rejects.toMatchObject({ status: 403 });
    const same = await Client.open(g.url, { headers: { origin: g.url } });
    expect(await same.request({ type: 'ping' })).toMatchObject({ type: 'pong' });
    const allowed = await Client.open(g.url, { headers: { origin: 'http://allowed.test' } });
    expect(await allowed.request({ type: 'ping' })).toMatchObject({ type: 'pong' });
  });

  it('a REST request from a foreign origin is refused', async () => {
    const res = await api(g, 'GET', '/v1/health', undefined, { origin: 'http://evil.test' });
    expect(res.status).toBe(403);
  });
});
