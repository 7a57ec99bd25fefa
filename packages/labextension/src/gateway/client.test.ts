import { describe, expect, it } from 'vitest';
import { GatewayClient, GatewayError } from './client.js';

interface Seen {
  url: string;
  init: RequestInit | undefined;
}

function fakeFetch(status: number, body: unknown, seen: Seen[] = []) {
  return async (url: string, init?: RequestInit) => {
    seen.push({ url, init });
    return new Response(body === undefined ? '' : JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  };
}

describe('GatewayClient', () => {
  it('sends the token as a Bearer header and the project as ?project=, under a path prefix', async () => {
    const seen: Seen[] = [];
    const client = new GatewayClient({ url: 'http://gw:8000/portico/', token: 'secret', project: '/srv/p' }, fakeFetch(200, { items: [], total: 0, next_cursor: null }, seen));
    await client.search({ limit: 5 });
    expect(seen[0]!.url).toBe('http://gw:8000/portico/v1/interfaces/search?project=%2Fsrv%2Fp');
    expect(seen[0]!.init?.method).toBe('POST');
    expect((seen[0]!.init?.headers as Record<string, string>).Authorization).toBe('Bearer secret');
    expect(JSON.parse(String(seen[0]!.init?.body))).toEqual({ limit: 5 });
  });

  it('no token, no Authorization header', async () => {
    const seen: Seen[] = [];
    await new GatewayClient({ url: 'http://gw' }, fakeFetch(200, {}, seen)).get('u1');
    expect(seen[0]!.url).toBe('http://gw/v1/interfaces/u1');
    expect((seen[0]!.init?.headers as Record<string, string>).Authorization).toBeUndefined();
  });

  it('label, archive, runs, output and cancel hit the documented routes', async () => {
    const seen: Seen[] = [];
    const client = new GatewayClient({ url: 'http://gw' }, fakeFetch(200, {}, seen));
    await client.setLabel('u/1', null);
    await client.archive('u1', true);
    await client.executions('u1', { active: true, limit: 3 });
    await client.output('e1', { offset: 10 });
    await client.cancel('e1');
    expect(seen.map(({ url, init }) => `${init?.method} ${url}`)).toEqual([
      'PATCH http://gw/v1/interfaces/u%2F1/label',
      'POST http://gw/v1/interfaces/u1/archive?restore=true',
      'GET http://gw/v1/interfaces/u1/executions?active=true&limit=3',
      'GET http://gw/v1/executions/e1/output?offset=10',
      'POST http://gw/v1/executions/e1/cancel',
    ]);
    expect(JSON.parse(String(seen[0]!.init?.body))).toEqual({ label: null });
  });

  it("keeps the gateway's error code and message", async () => {
    const client = new GatewayClient({ url: 'http://gw' }, fakeFetch(404, { detail: 'No interface u9', code: 'not_found', message: 'No interface u9' }));
    await expect(client.get('u9')).rejects.toMatchObject({ name: 'GatewayError', code: 'not_found', status: 404, message: 'No interface u9' });
  });

  it("reads a 400's structured detail, an older gateway's, and a plain FastAPI detail", async () => {
    const bad = { detail: { code: 'invalid_config', message: 'Unknown key', issues: [] }, code: 'invalid_config', message: 'Unknown key' };
    await expect(new GatewayClient({ url: 'http://gw' }, fakeFetch(400, bad)).get('u9')).rejects.toMatchObject({ code: 'invalid_config', status: 400, message: 'Unknown key' });
    const older = { detail: { code: 'not_found', message: 'No interface u9' }, message: 'No interface u9' };
    await expect(new GatewayClient({ url: 'http://gw' }, fakeFetch(404, older)).get('u9')).rejects.toMatchObject({ code: 'not_found', message: 'No interface u9' });
    await expect(new GatewayClient({ url: 'http://gw' }, fakeFetch(404, { detail: 'Not Found' })).get('u9')).rejects.toMatchObject({ code: 'bad_response', message: 'HTTP 404: Not Found' });
  });

  it('a 422 lists the request issues', async () => {
    const client = new GatewayClient({ url: 'http://gw' }, fakeFetch(422, { detail: [{ loc: ['body', 'limit'], msg: 'Too big' }] }));
    await expect(client.search({ limit: 5000 })).rejects.toMatchObject({ code: 'invalid_request', message: 'body.limit: Too big' });
  });

  it('no answer at all (down, or refused by CORS) is unreachable, with a hint', async () => {
    const client = new GatewayClient({ url: 'http://gw' }, async () => {
      throw new TypeError('Failed to fetch');
    });
    const error = await client.get('u1').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({ code: 'unreachable', message: expect.stringContaining('--allow-origins') });
  });
});
