/**
 * Issue 45: what the REST call path checks per request stays per request, whatever moved out of
 * it (work done once per connection or per process instead). Every request here travels on ONE
 * keep-alive connection (an agent with one socket, each answer read whole before the next
 * request), and each test checks that it did: a credential admitted on a connection is not
 * remembered for the connection's next request (a session token that expired meanwhile, a wrong
 * token after a right one), a project taken out of the roots is refused on the very next request,
 * a body that fails validation answers 422 with the same detail every time, and the access line
 * carries the status the client got.
 */
import http from 'node:http';
import { Writable } from 'node:stream';
import { cp, mkdir, rename, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, DEMO, gateway, tempProject } from './helpers.js';

afterAll(cleanup);

const TOKEN = 'api-token-for-keep-alive-tests';

/** A client on one keep-alive connection: `send` resolves with the status, the parsed body and the socket it went on. */
function oneConnection(url: string) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set<unknown>();
  const send = (method: string, pathname: string, body?: unknown, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const text = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
      const req = http.request(new URL(pathname, url), { method, agent, headers: { ...(text ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) } : {}), ...headers } }, (res) => {
        sockets.add(res.socket);
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks).toString();
          let parsed: unknown = raw;
          try {
            parsed = raw ? JSON.parse(raw) : null;
          } catch {
            // not JSON: kept as text
          }
          resolve({ status: res.statusCode!, body: parsed });
        });
      });
      req.on('error', reject);
      req.end(text);
    });
  return { send, connections: () => sockets.size, close: () => agent.destroy() };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const call = { target: 'counter', method: 'add', args: [1] };

describe('credentials are checked on every request of a keep-alive connection', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway({ apiToken: TOKEN });
  });

  it('a session token that expires between two requests is refused on the second, same connection', async () => {
    const client = oneConnection(g.url);
    try {
      const minted = await client.send('POST', '/v1/auth/token', { ttl_seconds: 1 }, bearer(TOKEN));
      expect(minted.status).toBe(200);
      const { access_token: token, expires_at } = minted.body;
      expect(await client.send('POST', '/v1/interfaces/call', call, bearer(token))).toMatchObject({ status: 200 });
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(expires_at) + 1100 - Date.now())));
      const after = await client.send('POST', '/v1/interfaces/call', call, bearer(token));
      expect(after).toMatchObject({ status: 401, body: { code: 'unauthorized', message: expect.stringMatching(/expired/) } });
      expect(client.connections()).toBe(1);
    } finally {
      client.close();
    }
  });

  it('a wrong token after the right one, and no token after it, are refused on the same connection', async () => {
    const client = oneConnection(g.url);
    try {
      expect(await client.send('POST', '/v1/interfaces/call', call, bearer(TOKEN))).toMatchObject({ status: 200 });
      expect(await client.send('POST', '/v1/interfaces/call', call, bearer('wrong'))).toMatchObject({ status: 401, body: { code: 'unauthorized' } });
      expect(await client.send('POST', '/v1/interfaces/call', call)).toMatchObject({ status: 401, body: { code: 'unauthorized', message: expect.stringMatching(/Missing/) } });
      expect(await client.send('POST', '/v1/interfaces/call', call, bearer(TOKEN))).toMatchObject({ status: 200 });
      expect(client.connections()).toBe(1);
    } finally {
      client.close();
    }
  });
});

describe('a project taken out of the roots', () => {
  it('is refused on the very next request of the connection that used it', async () => {
    const root = await tempProject({}, { demo: false });
    const outside = await tempProject({}, { demo: false });
    const project = path.join(root, 'project');
    await mkdir(project);
    await cp(path.join(DEMO, 'counter.py'), path.join(project, 'counter.py'));
    const g = await gateway({ projectRoots: [root] });
    const client = oneConnection(g.url);
    const inProject = { 'x-service-project': project };
    try {
      expect(await client.send('POST', '/v1/interfaces/call', call, inProject)).toMatchObject({ status: 200, body: { payload: 1 } });
      // Moved out of the root, a link to it left in its place: the link leads out of the roots.
      await rename(project, path.join(outside, 'project'));
      await symlink(path.join(outside, 'project'), project);
      expect(await client.send('POST', '/v1/interfaces/call', call, inProject)).toMatchObject({ status: 403, body: { code: 'forbidden' } });
      // Gone altogether.
      await rm(project);
      expect(await client.send('POST', '/v1/interfaces/call', call, inProject)).toMatchObject({ status: 404, body: { code: 'not_found' } });
      expect(client.connections()).toBe(1);
    } finally {
      client.close();
    }
  });
});

describe('validation and the access line on one connection', () => {
  it('a body that fails validation answers 422 with the same detail each time, between good calls; each access line has the status sent', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const g = await gateway({ apiToken: TOKEN, logger: pino({ level: 'info' }, sink) });
    const client = oneConnection(g.url);
    const send = (id: string, body: unknown, headers: Record<string, string> = bearer(TOKEN)) => client.send('POST', '/v1/interfaces/call', body, { ...headers, 'x-request-id': id });
    const invalid: Array<[unknown, unknown[]]> = [
      [{ target: 'counter', method: 'add', args: 'x' }, [{ type: 'invalid_type', loc: ['body', 'args'], msg: 'Invalid input: expected array, received string', input: 'x' }]],
      [{ target: 'counter', args: [1] }, [{ type: 'invalid_type', loc: ['body', 'method'], msg: 'Invalid input: expected string, received undefined' }]],
      [{ target: '', method: 'add' }, [{ type: 'too_small', loc: ['body', 'target'], msg: 'Too small: expected string to have >=1 characters', input: '' }]],
      ['{"target": ', [{ type: 'json_invalid', loc: ['body'], msg: expect.stringMatching(/^JSON decode error: /) }]],
    ];
    try {
      const statuses = new Map<string, number>();
      for (let round = 0; round < 2; round++) {
        statuses.set(`ok-${round}`, (await send(`ok-${round}`, call)).status);
        for (const [i, [body, detail]] of invalid.entries()) {
          const res = await send(`bad-${round}-${i}`, body);
          statuses.set(`bad-${round}-${i}`, res.status);
          expect(res.status, JSON.stringify(body)).toBe(422);
          expect(res.body.code).toBe('validation_error');
          expect(res.body.detail, JSON.stringify(body)).toEqual(detail);
        }
        statuses.set(`denied-${round}`, (await send(`denied-${round}`, call, bearer('wrong'))).status);
      }
      expect([...statuses.values()].filter((s) => s === 200)).toHaveLength(2);
      expect([...statuses.values()].filter((s) => s === 401)).toHaveLength(2);
      expect(client.connections()).toBe(1);
      // Each request's access line has the status its client got, and the error code with it.
      await expect.poll(() => [...statuses.keys()].every((id) => lines.some((l) => l.msg === 'http' && l.req_id === id))).toBe(true);
      for (const [id, status] of statuses) {
        const line = lines.find((l) => l.msg === 'http' && l.req_id === id)!;
        expect(line, id).toMatchObject({ method: 'POST', path: '/v1/interfaces/call', status });
        const code = status === 200 ? undefined : status === 401 ? 'unauthorized' : 'validation_error';
        expect(line.code, id).toBe(code);
      }
    } finally {
      client.close();
    }
  });
});
