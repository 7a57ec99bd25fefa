/** REST: interfaces, remote calls, validation, project binding, docs — against a real gateway and Python worker. */
import { request } from 'node:http';
import { readFile, symlink } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, gateway, tempProject } from './helpers.js';

afterAll(cleanup);

const EXTRA = {
  'broken.py': 'from portico import Interface\n\nclass Broken(Interface)\n    pass\n',
  'plain.py': 'X = 1\n',
  'typed.py': [
    'from dataclasses import dataclass',
    'from portico import Interface',
    '',
    'class Typed(Interface):',
    '    @dataclass',
    '    class Config:',
    '        name: str',
    '        rate: float = 0.1',
    '        tags: list[str] | None = None',
    '',
    '    def describe(self):',
    '        return {"name": self.config.name, "rate": self.config.rate}',
    '',
  ].join('\n'),
};

describe('REST interfaces', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway({ project: await tempProject(EXTRA) });
  });

  it('health: status, version and the launch project', async () => {
    const res = await api(g, 'GET', '/v1/health');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', version: '0.1.0', executions_active: 0 });
    expect(res.body.project).toBe(g.gateway.projects.defaultDir);
  });

  it('create: uuid is the content hash; the same config gives the same record', async () => {
    const a = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ step: 2, start: 5 }] });
    expect(a.status).toBe(200);
    expect(a.body.uuid).toMatch(/^[0-9a-f]{24}$/);
    expect(a.body).toMatchObject({ module: 'counter', kind: 'Interface', class_name: 'Counter', cached: false, config: { start: 5, step: 2 }, label: null, archived: false });
    expect(a.body.created_by).toBe(userInfo().username);
    const b = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 5 }, 'step=2'] });
    expect(b.body).toEqual(a.body);
  });

  it('create: versions select methods with literal arguments', async () => {
    const big = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: ['~big'] });
    expect(big.body.config).toEqual({ start: 0, step: 10 });
    const five = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: ['~big(step=5)'] });
    expect(five.body.config).toEqual({ start: 0, step: 5 });
    expect(five.body.uuid).not.toBe(big.body.uuid);
  });

  it('create: a client-supplied uuid is used, and an existing one returns the record unchanged', async () => {
    const first = await api(g, 'POST', '/v1/interfaces', { target: 'counter', uuid: 'my-counter', label: 'mine' }, { 'X-Service-User': 'ada' });
    expect(first.body).toMatchObject({ uuid: 'my-counter', created_by: 'ada', label: 'mine' });
    const again = await api(g, 'POST', '/v1/interfaces', { target: 'streamer', uuid: 'my-counter', label: 'other' });
    expect(again.body).toEqual(first.body);
  });

  it('create: config problems answer 400 with one issue per offending path', async () => {
    const res = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ nope: 1, start: 'x' }] });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_config');
    const paths = res.body.detail.issues.map((i: { path: string }) => i.path).sort();
    expect(paths).toEqual(['nope', 'start']);
    const missing = await api(g, 'POST', '/v1/interfaces', { target: 'typed' });
    expect(missing.status).toBe(400);
    expect(missing.body.detail.issues).toEqual([expect.objectContaining({ path: 'name' })]);
    const unknownVersion = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: ['~huge'] });
    expect(unknownVersion.status).toBe(400);
    expect(unknownVersion.body.message + JSON.stringify(unknownVersion.body.detail.issues)).toContain('huge');
  });

  it('create: version arguments are literals, never evaluated', async () => {
    const res = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: ["~big(__import__('os').getpid())"] });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_config');
  });

  it('create: unknown, broken and class-less modules are named in the error', async () => {
    const unknown = await api(g, 'POST', '/v1/interfaces', { target: 'nosuch' });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ code: 'unknown_module' });
    expect(unknown.body.message).toContain('nosuch');
    const outside = await api(g, 'POST', '/v1/interfaces', { target: 'json' });
    expect([outside.status, outside.body.code]).toEqual([400, 'unknown_module']);
    const broken = await api(g, 'POST', '/v1/interfaces', { target: 'broken' });
    expect(broken.status).toBe(400);
    expect(broken.body.code).toBe('module_error');
    expect(broken.body.message).toMatch(/broken.*SyntaxError/);
    const plain = await api(g, 'POST', '/v1/interfaces', { target: 'plain' });
    expect(plain.body).toMatchObject({ code: 'module_error' });
    expect(plain.body.message).toContain('plain');
  });

  it('get, list and delete; an unknown uuid is 404', async () => {
    const created = await api(g, 'POST', '/v1/interfaces', { target: 'streamer', version: [{ prefix: 'listed' }] });
    const got = await api(g, 'GET', `/v1/interfaces/${created.body.uuid}`);
    expect(got.body).toEqual(created.body);
    const list = await api(g, 'GET', '/v1/interfaces');
    expect(list.body.map((r: { uuid: string }) => r.uuid)).toContain(created.body.uuid);
    expect((await api(g, 'GET', '/v1/interfaces?limit=1')).body).toHaveLength(1);
    expect((await api(g, 'DELETE', `/v1/interfaces/${created.body.uuid}`)).status).toBe(204);
    const gone = await api(g, 'GET', `/v1/interfaces/${created.body.uuid}`);
    expect(gone.status).toBe(404);
    expect(gone.body.code).toBe('not_found');
    expect((await api(g, 'DELETE', '/v1/interfaces/nope')).status).toBe(404);
  });

  it('call: returns {payload}; target may be a module or an existing uuid', async () => {
    const res = await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', version: ['~big'], method: 'add', args: [2] });
    expect(res).toMatchObject({ status: 200, body: { payload: 20 } });
    const rec = await api(g, 'POST', '/v1/interfaces', { target: 'typed', version: [{ name: 'x' }] });
    const byId = await api(g, 'POST', '/v1/interfaces/call', { target: rec.body.uuid, method: 'describe' });
    expect(byId.body).toEqual({ payload: { name: 'x', rate: 0.1 } });
    const kw = await api(g, 'POST', '/v1/interfaces/call', { target: 'streamer', method: 'echo', kwargs: { value: { a: [1, null, 'x'] } } });
    expect(kw.body).toEqual({ payload: { a: [1, null, 'x'] } });
  });

  it('call: failures are structured, never a bare 500', async () => {
    const cases: Array<[object, number, string]> = [
      [{ target: 'counter', method: 'nope' }, 404, 'not_found'],
      [{ target: 'faulty', method: '_secret' }, 403, 'forbidden'],
      [{ target: 'counter', method: 'add', args: [1, 2, 3] }, 400, 'invalid_argument'],
      [{ target: 'faulty', method: 'explode', args: ['kaboom'] }, 400, 'call_failed'],
      [{ target: 'faulty', method: 'not_json' }, 400, 'unserializable_result'],
      [{ target: 'streamer', method: 'ticks' }, 400, 'streaming_unsupported'],
    ];
    for (const [body, status, code] of cases) {
      const res = await api(g, 'POST', '/v1/interfaces/call', body);
      expect([res.status, res.body.code], JSON.stringify(body)).toEqual([status, code]);
      expect(typeof res.body.message).toBe('string');
    }
    const explode = await api(g, 'POST', '/v1/interfaces/call', { target: 'faulty', method: 'explode', args: ['kaboom'] });
    expect(explode.body.detail).toMatchObject({ exception: 'ValueError' });
    expect(explode.body.message).toContain('kaboom');
  });

  it('validation: bad bodies and parameters answer 422 HTTPValidationError', async () => {
    const malformed = await api(g, 'POST', '/v1/interfaces', '{"target": ');
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail[0]).toMatchObject({ type: 'json_invalid', loc: ['body'] });
    const missing = await api(g, 'POST', '/v1/interfaces', { version: [] });
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0].loc).toEqual(['body', 'target']);
    const wrong = await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'add', args: 'x' });
    expect(wrong.body.detail[0].loc).toEqual(['body', 'args']);
    const limit = await api(g, 'GET', '/v1/interfaces?limit=0');
    expect(limit.status).toBe(422);
    expect(limit.body.detail[0].loc).toEqual(['query', 'limit']);
    const nobody = await api(g, 'POST', '/v1/interfaces');
    expect(nobody.status).toBe(422);
  });

  it('call: unknown fields are refused with 422 naming them, and nothing runs', async () => {
    const before = (await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'value' })).body.payload;
    const made = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 100 }] });
    const res = await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', uuid: made.body.uuid, method: 'add', label: 'x' });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('validation_error');
    expect(res.body.detail).toEqual([expect.objectContaining({ type: 'unrecognized_keys', loc: ['body'], msg: expect.stringContaining("'uuid', 'label'") })]);
    expect(res.body.message).toContain("'uuid'");
    // the default counter was not changed under the client's feet
    expect((await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'value' })).body.payload).toBe(before);
    // every field clients send still passes (portico.client, the landing page, widget runtime)
    const full = await api(g, 'POST', '/v1/interfaces/call', { target: made.body.uuid, version: [], meta: {}, method: 'add', args: [1], kwargs: {} });
    expect(full).toMatchObject({ status: 200, body: { payload: 101 } });
  });

  it('a body sent in several chunks (no Content-Length) is read whole', async () => {
    const body = JSON.stringify({ target: 'counter', version: [{ start: 5 }], method: 'add', args: [2] });
    const pieces = [body.slice(0, 7), body.slice(7, 30), body.slice(30)];
    const reply = await new Promise<{ status: number; body: unknown }>((resolve, reject) => {
      const req = request(`${g.url}/v1/interfaces/call`, { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
      });
      req.on('error', reject);
      // Each piece its own write, a tick apart, so the gateway sees them arrive separately.
      const next = (i: number) => (i < pieces.length ? req.write(pieces[i], () => setImmediate(() => next(i + 1))) : req.end());
      req.flushHeaders();
      next(0);
    });
    expect(reply).toEqual({ status: 200, body: { payload: 7 } });
  });

  it('a body declared over 16 MiB is refused with 413 payload_too_large before it is read', async () => {
    const res = await fetch(`${g.url}/v1/interfaces/call`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(16 * 1024 * 1024 + 1) }, body: 'x'.repeat(16 * 1024 * 1024 + 1) });
    expect(res.status).toBe(413);
    expect((await res.json()).code).toBe('payload_too_large');
  });

  it('a chunked body that grows past 16 MiB is answered 413 payload_too_large, not a dropped connection', async () => {
    const reply = await new Promise<{ status: number; code: unknown; connection: unknown }>((resolve, reject) => {
      const req = request(`${g.url}/v1/interfaces/call`, { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, code: JSON.parse(Buffer.concat(chunks).toString('utf8')).code, connection: res.headers.connection }));
      });
      req.on('error', reject);
      const piece = Buffer.alloc(1024 * 1024, 0x20);
      // 17 pieces of 1 MiB, each written once the last has gone: past the limit without a Content-Length.
      const next = (i: number) => (i < 17 ? req.write(piece, () => next(i + 1)) : req.end());
      next(0);
    });
    expect(reply).toEqual({ status: 413, code: 'payload_too_large', connection: 'close' });
  });

  it('unknown routes answer a structured 404', async () => {
    const res = await api(g, 'GET', '/v1/nothing');
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  });

  it('openapi.json is OpenAPI 3.1 generated from the request schemas; /docs works offline', async () => {
    const doc = await api(g, 'GET', '/openapi.json');
    expect(doc.body.openapi).toBe('3.1.0');
    expect(doc.body.info.version).toBe('5.1.0');
    expect(Object.keys(doc.body.paths)).toEqual(expect.arrayContaining(['/v1/interfaces', '/v1/interfaces/call', '/v1/interfaces/{uuid}', '/v1/health', '/v1/protocol']));
    expect(doc.body.components.schemas.CreateInterfaceRequest.required).toEqual(['target']);
    expect(doc.body.paths['/v1/interfaces'].post.responses['422']).toBeDefined();
    const page = await fetch(`${g.url}/docs`).then((r) => r.text());
    expect(page).toContain('/docs/swagger-ui-bundle.js');
    expect(page).not.toMatch(/https?:\/\//);
    const bundle = await fetch(`${g.url}/docs/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('content-type')).toContain('javascript');
  });

  it('protocol: frames, fields and the capability map come from the socket schemas', async () => {
    const { body } = await api(g, 'GET', '/v1/protocol');
    expect(body.protocol_version).toBe('1.0');
    const connect = body.ws_frames.find((f: { type: string }) => f.type === 'connect');
    expect(connect.direction).toBe('client_to_server');
    expect(connect.fields.find((f: { name: string }) => f.name === 'target')).toMatchObject({ required: true, type: 'string' });
    expect(connect.fields.find((f: { name: string }) => f.name === 'uuid').required).toBe(false);
    expect(body.capabilities.map((c: { name: string }) => c.name)).toEqual([
      'remote_call', 'rich_results', 'binary_upload', 'binary_read', 'config_search', 'create_by_id',
      'mutable_label', 'creator_attribution', 'multi_project', 'source_edit', 'widgets',
    ]);
    expect(body.errors.find((e: { code: string }) => e.code === 'worker_crashed').status).toBe(502);
    expect(body.limits.callTimeoutMs).toBeGreaterThan(0);
  });
});

describe('REST persistence', () => {
  it('records persist under <project>/.portico and survive a restart', async () => {
    const project = await tempProject();
    const first = await gateway({ project });
    const created = await api(first, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 3 }], label: 'kept' });
    await first.close();
    const beside = JSON.parse(await readFile(path.join(project, '.portico/interfaces', created.body.uuid, 'interface.json'), 'utf8'));
    expect(beside).toMatchObject({ module: 'counter', label: 'kept' });
    const second = await gateway({ project });
    expect((await api(second, 'GET', `/v1/interfaces/${created.body.uuid}`)).body).toEqual(created.body);
  });
});

describe('project binding', () => {
  it('refuses projects outside the launch project and the roots, before reading them', async () => {
    const g = await gateway();
    const other = await tempProject();
    const res = await api(g, 'GET', '/v1/interfaces', undefined, { 'X-Service-Project': other });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('forbidden');
    const viaQuery = await api(g, 'POST', `/v1/interfaces?project=${encodeURIComponent(other)}`, { target: 'counter' });
    expect(viaQuery.status).toBe(403);
  });

  it('serves projects under a root, and refuses escapes by .. or symlink', async () => {
    const root = await tempProject({}, { demo: false });
    const inside = path.join(root, 'inside');
    await (await import('node:fs/promises')).cp((await tempProject()), inside, { recursive: true });
    const outside = await tempProject();
    await symlink(outside, path.join(root, 'link-out'));
    const g = await gateway({ projectRoots: [root] });
    const ok = await api(g, 'POST', '/v1/interfaces', { target: 'counter' }, { 'X-Service-Project': inside });
    expect(ok.status).toBe(200);
    const dotdot = await api(g, 'GET', '/v1/interfaces', undefined, { 'X-Service-Project': `${inside}/../../${path.basename(outside)}` });
    expect(dotdot.status).toBe(403);
    const link = await api(g, 'GET', '/v1/interfaces', undefined, { 'X-Service-Project': path.join(root, 'link-out') });
    expect(link.status).toBe(403);
    const missing = await api(g, 'GET', '/v1/interfaces', undefined, { 'X-Service-Project': path.join(root, 'missing') });
    expect(missing.status).toBe(404);
  });
});
