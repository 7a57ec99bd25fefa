/**
 * Every refusal path besides OIDC (test/oidc.test.ts): session tokens (minting, who may mint,
 * missing, wrong, expired and tampered credentials over REST and WebSocket, 4401), browser
 * origins (CORS with preflights before auth, WebSocket Origin), and the project and interpreter
 * allowlists with the workers they start.
 */
import { execFileSync } from 'node:child_process';
import { cp, mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../packages/server/src/index.js';
import { api, cleanup, Client, DEMO, gateway, tempProject } from './helpers.js';

afterAll(cleanup);

const TOKEN = 'api-token-for-tests';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const sleepUntil = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms - Date.now())));

function closed(client: Client): Promise<{ code: number; reason: string; at: number }> {
  return new Promise((resolve) => client.ws.once('close', (code, reason) => resolve({ code, reason: String(reason), at: Date.now() })));
}

describe('session tokens', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  const mint = (body?: unknown, token = TOKEN, headers: Record<string, string> = {}) =>
    api(g, 'POST', '/v1/auth/token', body, { ...bearer(token), ...headers });
  beforeAll(async () => {
    g = await gateway({ apiToken: TOKEN });
  });

  it(`the api token mints a pst1 token valid ${LIMITS.sessionTokenTtlDefaultS} s by default; the body is optional`, async () => {
    const before = Date.now();
    const res = await mint();
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({ token_type: 'Bearer', expires_in: LIMITS.sessionTokenTtlDefaultS, user: null });
    expect(res.body.access_token).toMatch(/^pst1\.[\w-]+\.[\w-]+$/);
    const expiresAt = Date.parse(res.body.expires_at);
    expect(expiresAt).toBeGreaterThan(before + (LIMITS.sessionTokenTtlDefaultS - 2) * 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + LIMITS.sessionTokenTtlDefaultS * 1000);
    expect((await mint({ ttl_seconds: 3600 })).body.expires_in).toBe(3600);
  });

  it('a session token admits REST and WebSocket (header or bearer subprotocol)', async () => {
    const { access_token: token } = (await mint({ ttl_seconds: 60 })).body;
    expect((await api(g, 'GET', '/v1/health', undefined, bearer(token))).status).toBe(200);
    const byHeader = await Client.open(g.url, { headers: bearer(token) });
    expect(await byHeader.request({ type: 'ping' })).toMatchObject({ type: 'pong' });
    const bySubprotocol = await Client.open(g.url, { protocols: ['bearer', token] });
    expect(bySubprotocol.ws.protocol).toBe('bearer');
    await bySubprotocol.connect('counter', { version: [{ start: 7 }] });
    expect(await bySubprotocol.request({ type: 'call', method: 'add', args: [1] })).toMatchObject({ payload: 8 });
  });

  it('a lifetime beyond an hour, or under a second, is refused with 422', async () => {
    for (const ttl_seconds of [LIMITS.sessionTokenTtlMaxS + 1, 0, 1.5, '60']) {
      const res = await mint({ ttl_seconds });
      expect(res.status, String(ttl_seconds)).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body', 'ttl_seconds']);
    }
  });

  it('a session token cannot mint another (403 mint_refused); nor can a missing or wrong credential (401)', async () => {
    const { access_token: token } = (await mint()).body;
    const again = await mint(undefined, token);
    expect(again.status).toBe(403);
    expect(again.body).toMatchObject({ code: 'mint_refused', message: expect.stringMatching(/only the api token/) });
    expect((await api(g, 'POST', '/v1/auth/token')).status).toBe(401);
    expect((await mint(undefined, 'wrong')).status).toBe(401);
  });

  it('a session token minted for a user fixes created_by (X-Service-User ignored), on REST and WebSocket', async () => {
    const { access_token: token, user } = (await mint({ user: 'ada' })).body;
    expect(user).toBe('ada');
    const created = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 11 }] }, { ...bearer(token), 'x-service-user': 'mallory' });
    expect(created.body.created_by).toBe('ada');
    const c = await Client.open(g.url, { protocols: ['bearer', token], headers: { 'x-service-user': 'mallory' } });
    expect((await c.connect('counter', { version: [{ start: 12 }] })).payload.created_by).toBe('ada');

    const { access_token: anyone } = (await mint()).body;
    const declared = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 13 }] }, { ...bearer(anyone), 'x-service-user': 'grace' });
    expect(declared.body.created_by).toBe('grace');
  });

  it('missing, wrong, tampered and expired credentials are refused with 401 on REST and on the WebSocket', async () => {
    const { access_token: token } = (await mint({ ttl_seconds: 1 })).body;
    const [prefix, payload, signature] = token.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const longer = Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 3600 })).toString('base64url');
    const flipped = (signature[0] === 'A' ? 'B' : 'A') + signature.slice(1);
    const cases: Array<[string, Record<string, string>, RegExp]> = [
      ['missing', {}, /Missing/],
      ['wrong', bearer('wrong'), /Invalid bearer token/],
      ['not bearer', { authorization: `Basic ${TOKEN}` }, /Missing/],
      ['payload tampered', bearer(`${prefix}.${longer}.${signature}`), /Invalid session token/],
      ['signature tampered', bearer(`${prefix}.${payload}.${flipped}`), /Invalid session token/],
      ['signature dropped', bearer(`${prefix}.${payload}`), /Invalid session token/],
    ];
    const check = async () => {
      for (const [what, headers, message] of cases) {
        const res = await api(g, 'GET', '/v1/health', undefined, headers);
        expect(res.status, what).toBe(401);
        expect(res.headers.get('www-authenticate'), what).toBe('Bearer');
        expect(res.body, what).toMatchObject({ code: 'unauthorized', message: expect.stringMatching(message) });
        await expect(Client.open(g.url, { headers }), what).rejects.toMatchObject({ status: 401 });
      }
    };
    await check();
    await sleepUntil(claims.exp * 1000 + 20);
    cases.push(['expired', bearer(token), /expired/]);
    await check();
    await expect(Client.open(g.url, { protocols: ['bearer', token] })).rejects.toMatchObject({ status: 401 });
  });

  it('a socket opened with a session token is closed with 4401 when the token expires', async () => {
    const { access_token: token, expires_at } = (await mint({ ttl_seconds: 2 })).body;
    const c = await Client.open(g.url, { protocols: ['bearer', token] });
    const done = closed(c);
    await c.connect('counter');
    const { code, reason, at } = await done;
    expect(code).toBe(4401);
    expect(reason).toBe('token expired');
    expect(at).toBeGreaterThanOrEqual(Date.parse(expires_at) - 50);
    expect(at).toBeLessThan(Date.parse(expires_at) + 2000);
  });

  it('a socket opened with the api token itself never expires', async () => {
    const c = await Client.open(g.url, { headers: bearer(TOKEN) });
    expect(await c.request({ type: 'ping' })).toMatchObject({ type: 'pong' });
    c.close();
  });

  it('/v1/auth/token is in the OpenAPI document with its refusals', async () => {
    const doc = (await api(g, 'GET', '/openapi.json')).body;
    const op = doc.paths['/v1/auth/token'].post;
    expect(op.tags).toEqual(['auth']);
    expect(op.requestBody.required).toBe(false);
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '401', '403', '409', '422']));
    expect(op.description).toMatch(/mint_refused/);
  });
});

describe('session tokens on a gateway without an api token', () => {
  it('minting answers 409 no_api_token: nothing needs a token there', async () => {
    const g = await gateway();
    const res = await api(g, 'POST', '/v1/auth/token');
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('no_api_token');
  });
});

describe('origins', () => {
  const ALLOWED = 'http://allowed.test';
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway({ apiToken: TOKEN, allowOrigins: [ALLOWED] });
  });

  it('a preflight from an allowlisted origin is answered before authentication', async () => {
    const res = await api(g, 'OPTIONS', '/v1/interfaces/call', undefined, {
      origin: ALLOWED,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type, x-service-project',
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(res.headers.get('access-control-allow-methods')).toMatch(/POST/);
    expect(res.headers.get('access-control-allow-headers')).toMatch(/Authorization/);
    expect(res.headers.get('access-control-allow-headers')).toMatch(/X-Service-Project/);
    expect(res.headers.get('www-authenticate')).toBeNull();
  });

  it('CORS headers go only to allowlisted origins, on successes and on refusals alike', async () => {
    const ok = await api(g, 'GET', '/v1/health', undefined, { origin: ALLOWED, ...bearer(TOKEN) });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(ok.headers.get('vary')).toMatch(/Origin/);
    expect(ok.headers.get('access-control-expose-headers')).toMatch(/WWW-Authenticate/);
    // The page can read why it was refused.
    const refused = await api(g, 'GET', '/v1/health', undefined, { origin: ALLOWED });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(ALLOWED);

    const noOrigin = await api(g, 'GET', '/v1/health', undefined, bearer(TOKEN));
    expect(noOrigin.headers.get('access-control-allow-origin')).toBeNull();
    const same = await api(g, 'GET', '/v1/health', undefined, { origin: g.url, ...bearer(TOKEN) });
    expect(same.status).toBe(200);
    expect(same.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('a foreign origin is refused with 403 and no CORS headers, preflight or not, token or not', async () => {
    for (const [method, headers] of [
      ['OPTIONS', { 'access-control-request-method': 'POST' }],
      ['GET', bearer(TOKEN)],
      ['GET', {}],
    ] as const) {
      const res = await api(g, method, '/v1/health', undefined, { origin: 'http://evil.test', ...headers });
      expect(res.status, `${method} ${JSON.stringify(headers)}`).toBe(403);
      expect(res.body.code).toBe('forbidden');
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    }
  });

  it('a WebSocket upgrade from a disallowed Origin is refused even with a valid token; allowlisted ones pass', async () => {
    await expect(Client.open(g.url, { headers: { origin: 'http://evil.test', ...bearer(TOKEN) } })).rejects.toMatchObject({ status: 403 });
    await expect(Client.open(g.url, { headers: { origin: 'null' }, protocols: ['bearer', TOKEN] })).rejects.toMatchObject({ status: 403 });
    const allowed = await Client.open(g.url, { headers: { origin: ALLOWED }, protocols: ['bearer', TOKEN] });
    expect(await allowed.request({ type: 'ping' })).toMatchObject({ type: 'pong' });
    await expect(Client.open(g.url, { headers: { origin: ALLOWED } })).rejects.toMatchObject({ status: 401 });
  });
});

describe('projects and interpreters', () => {
  /** This interpreter under its absolute path: another allowlist entry than the default `python3`. */
  const OTHER_PYTHON = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
  const BROKEN_PYTHON = '/nonexistent/bin/python3';
  let g: Awaited<ReturnType<typeof gateway>>;
  let root: string;
  let second: string;
  let outside: string;

  beforeAll(async () => {
    root = await tempProject({}, { demo: false });
    second = path.join(root, 'second');
    await mkdir(second);
    await cp(path.join(DEMO, 'counter.py'), path.join(second, 'counter.py'));
    outside = await tempProject();
    await symlink(outside, path.join(root, 'escape'));
    g = await gateway({ apiToken: TOKEN, projectRoots: [root], pythonAllowlist: [OTHER_PYTHON, BROKEN_PYTHON] });
  });

  const call = (headers: Record<string, string> = {}, query = '') =>
    api(g, 'POST', `/v1/interfaces/call${query}`, { target: 'counter', method: 'add', args: [1] }, { ...bearer(TOKEN), ...headers });

  it('a project outside the roots is refused (header, query, symlink out of a root, WebSocket connect)', async () => {
    for (const [headers, query] of [
      [{ 'x-service-project': outside }, ''],
      [{}, `?project=${encodeURIComponent(outside)}`],
      [{ 'x-service-project': path.join(root, 'escape') }, ''],
      [{ 'x-service-project': `${second}/../../${path.basename(outside)}` }, ''],
    ] as const) {
      const res = await call(headers, query);
      expect(res.status, JSON.stringify([headers, query])).toBe(403);
      expect(res.body).toMatchObject({ code: 'forbidden', message: expect.stringMatching(/not permitted/) });
    }
    const c = await Client.open(g.url, { headers: bearer(TOKEN) });
    expect(await c.request({ type: 'connect', target: 'counter', project: outside })).toMatchObject({ type: 'error', payload: { code: 'forbidden' } });
    const viaUpgrade = await Client.open(`${g.url}`, { headers: bearer(TOKEN), path: `/v1/interfaces/ws?project=${encodeURIComponent(outside)}` });
    expect(await viaUpgrade.request({ type: 'connect', target: 'counter' })).toMatchObject({ type: 'error', payload: { code: 'forbidden' } });
  });

  it('an interpreter outside the allowlist is refused with 403 (header, query, WebSocket)', async () => {
    for (const [headers, query] of [
      [{ 'x-service-python': '/usr/bin/env' }, ''],
      [{}, '?python=python2'],
    ] as const) {
      const res = await call(headers, query);
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'forbidden', message: expect.stringMatching(/Interpreter .* is not permitted.*--python-allowlist/) });
    }
    const c = await Client.open(g.url, { headers: { ...bearer(TOKEN), 'x-service-python': '/usr/bin/env' } });
    expect(await c.request({ type: 'connect', target: 'counter' })).toMatchObject({ type: 'error', payload: { code: 'forbidden' } });
  });

  it('an allowlisted interpreter that cannot start answers 503 worker_unavailable naming it', async () => {
    const res = await call({ 'x-service-python': BROKEN_PYTHON });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ code: 'worker_unavailable', message: expect.stringContaining(BROKEN_PYTHON) });
  });

  it('each (project, interpreter) gets its own worker; /v1/projects lists projects, roots, interpreters and workers', async () => {
    expect((await call()).body).toEqual({ payload: 1 });
    // Another worker makes its own instance of the same uuid, handed the widget state the first
    // one saved (docs/writing/widgets.md ("Widget state comes back")): it counts on from 1.
    expect((await call({ 'x-service-python': OTHER_PYTHON })).body).toEqual({ payload: 2 });
    // The query picks the same worker as the header: the counter there has counted once already.
    expect((await call({}, `?python=${encodeURIComponent(OTHER_PYTHON)}`)).body).toEqual({ payload: 3 });
    expect((await call({ 'x-service-project': second })).body).toEqual({ payload: 1 });
    const c = await Client.open(g.url, { headers: { ...bearer(TOKEN), 'x-service-python': OTHER_PYTHON, 'x-service-project': second } });
    await c.connect('counter');

    const res = await api(g, 'GET', '/v1/projects', undefined, bearer(TOKEN));
    expect(res.status).toBe(200);
    const project = g.gateway.projects.defaultDir;
    expect(res.body).toMatchObject({ default: project, roots: [root], python: 'python3', python_allowlist: [OTHER_PYTHON, BROKEN_PYTHON] });
    expect(res.body.open).toEqual([project, second]);
    const pairs = res.body.workers.map((w: { directory: string; python: string }) => `${w.directory} ${w.python}`).sort();
    expect(pairs).toEqual([`${project} ${OTHER_PYTHON}`, `${project} python3`, `${second} ${OTHER_PYTHON}`, `${second} python3`].sort());
    const pids = new Set(res.body.workers.map((w: { pid: number }) => w.pid));
    expect(pids.size).toBe(4);
    expect((await api(g, 'GET', '/v1/projects')).status).toBe(401);
  });
});
