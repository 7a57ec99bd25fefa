/**
 * The source API against a real gateway and real Python: opt-in, the source token beside
 * Authorization, listing, ETags, conditional writes (412), concurrent writers, delete, moves
 * between module and package, confinement, and invalidation (re-import, eviction, widget reload).
 */
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, Client, cleanup, gateway, tempProject } from './helpers.js';

const API_TOKEN = 'api-tok';
const SOURCE_TOKEN = 's3cret';
const AUTH = { authorization: `Bearer ${API_TOKEN}` };
const WRITE = { ...AUTH, 'x-service-source-token': SOURCE_TOKEN };

const LIVE = (value: number) => `from portico import Interface


class Live(Interface):
    def value(self):
        return ${value}
`;

const EXTRA = {
  'notes.md': '# Notes\n',
  'live.py': LIVE(1),
  'data/blob.bin': 'binary-ish\n',
  'env/pyvenv.cfg': 'home = /usr/bin\n',
  'env/inside_env.py': 'X = 1\n',
  'node_modules/dep.js': 'export default 1;\n',
};

const md5 = (text: string | Buffer) => createHash('md5').update(text).digest('hex');

let project: string;
let outside: string;
let g: Awaited<ReturnType<typeof gateway>>;

/** A request with the path sent exactly as written (fetch would normalize `..`). */
function raw(method: string, pathname: string, headers: Record<string, string> = AUTH, body?: unknown): Promise<{ status: number; body: any }> {
  const url = new URL(g.url);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, method, path: pathname, headers: { ...headers, ...(payload ? { 'content-type': 'application/json' } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : null });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const put = (file: string, content: string, headers: Record<string, string> = {}) => api(g, 'PUT', `/v1/source/${file}`, { content }, { ...WRITE, ...headers });
const get = (file: string, headers: Record<string, string> = {}) => api(g, 'GET', `/v1/source/${file}`, undefined, { ...AUTH, ...headers });
const call = (target: string, method: string) => api(g, 'POST', '/v1/interfaces/call', { target, method }, AUTH);

// Workers write bytecode here, as in production: an edit must never run a stale .pyc.
const dontWriteBytecode = process.env.PYTHONDONTWRITEBYTECODE;

beforeAll(async () => {
  delete process.env.PYTHONDONTWRITEBYTECODE;
  project = await tempProject(EXTRA);
  outside = await mkdtemp(path.join(tmpdir(), 'portico-outside-'));
  await writeFile(path.join(outside, 'secret.py'), 'SECRET = 1\n');
  await symlink(path.join(outside, 'secret.py'), path.join(project, 'leak.py'));
  await symlink(outside, path.join(project, 'elsewhere'));
  await symlink(path.join(project, 'counter.py'), path.join(project, 'alias.py'));
  await writeFile(path.join(project, 'latin1.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
  g = await gateway({ project, apiToken: API_TOKEN, enableSourceApi: true, sourceToken: SOURCE_TOKEN });
});
afterAll(async () => {
  if (dontWriteBytecode !== undefined) process.env.PYTHONDONTWRITEBYTECODE = dontWriteBytecode;
  await cleanup();
  await rm(outside, { recursive: true, force: true });
});

describe('opt-in and tokens', () => {
  it('a gateway without --enable-source-api answers 404 to every source route and touches nothing', async () => {
    const dir = await tempProject();
    const off = await gateway({ project: dir, sourceToken: SOURCE_TOKEN });
    const before = await readFile(path.join(dir, 'counter.py'), 'utf8');
    const headers = { 'x-service-source-token': SOURCE_TOKEN };
    for (const [method, pathname, body] of [
      ['GET', '/v1/source', undefined],
      ['GET', '/v1/source/counter.py', undefined],
      ['PUT', '/v1/source/counter.py', { content: 'x = 1\n' }],
      ['PUT', '/v1/source/new.py', { content: 'x = 1\n' }],
      ['DELETE', '/v1/source/counter.py', undefined],
      ['POST', '/v1/source/move', { from: 'counter.py', to: 'moved.py' }],
      ['PUT', '/v1/source/counter.py', 'not json'],
    ] as const) {
      const res = await api(off, method, pathname, body, headers);
      expect(res.status, `${method} ${pathname}`).toBe(404);
      expect(res.body.code).toBe('not_found');
      expect(res.body.message).toContain('--enable-source-api');
    }
    expect(await readFile(path.join(dir, 'counter.py'), 'utf8')).toBe(before);
    await expect(stat(path.join(dir, 'new.py'))).rejects.toThrow();
    // The docs of this gateway show only what it serves: no source routes, no source tag.
    const doc = (await api(off, 'GET', '/openapi.json')).body;
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/v1/source'))).toEqual([]);
    expect(doc.tags.map((t: { name: string }) => t.name)).not.toContain('source');
    expect(Object.keys(doc.paths)).toContain('/v1/interfaces');
    await expect(stat(path.join(dir, 'moved.py'))).rejects.toThrow();
  });

  it('/openapi.json describes the source routes with their bodies', async () => {
    const doc = (await api(g, 'GET', '/openapi.json')).body;
    expect(doc.paths['/v1/source/{path}'].put.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/SourceWriteRequest' });
    expect(doc.paths['/v1/source/move'].post.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/SourceMoveRequest' });
    expect(Object.keys(doc.components.schemas.SourceListResponse.properties)).toEqual(['base_dir', 'files', 'truncated']);
    expect(doc.paths['/v1/source/{path}'].put.responses).toHaveProperty('412');
  });

  it('reads need only Authorization', async () => {
    expect((await api(g, 'GET', '/v1/source')).status).toBe(401);
    expect((await api(g, 'GET', '/v1/source/counter.py')).status).toBe(401);
    expect((await api(g, 'GET', '/v1/source', undefined, AUTH)).status).toBe(200);
    expect((await get('counter.py')).status).toBe(200);
  });

  it('writes without the source token, or with a wrong one, are 403 source_token_required and change nothing', async () => {
    const before = await readFile(path.join(project, 'notes.md'), 'utf8');
    for (const headers of [AUTH, { ...AUTH, 'x-service-source-token': 'wrong' }, { ...AUTH, 'x-service-source-token': '' }, { ...AUTH, authorization: `Bearer ${SOURCE_TOKEN}` }]) {
      for (const [method, pathname, body] of [
        ['PUT', '/v1/source/notes.md', { content: 'changed\n' }],
        ['PUT', '/v1/source/created.md', { content: 'new\n' }],
        ['DELETE', '/v1/source/notes.md', undefined],
        ['POST', '/v1/source/move', { from: 'notes.md', to: 'moved.md' }],
      ] as const) {
        const res = await api(g, method, pathname, body, headers);
        const label = `${method} ${pathname} ${JSON.stringify(headers)}`;
        if (headers.authorization !== AUTH.authorization) {
          expect(res.status, label).toBe(401); // the source token is no bearer token
          continue;
        }
        expect(res.status, label).toBe(403);
        expect(res.body.code).toBe('source_token_required');
      }
    }
    // The source token without Authorization is not enough either.
    expect((await api(g, 'PUT', '/v1/source/notes.md', { content: 'x' }, { 'x-service-source-token': SOURCE_TOKEN })).status).toBe(401);
    expect(await readFile(path.join(project, 'notes.md'), 'utf8')).toBe(before);
    for (const name of ['created.md', 'moved.md']) await expect(stat(path.join(project, name))).rejects.toThrow();
  });
});

describe('list and read', () => {
  it('GET /v1/source lists the editable files, sorted, and nothing hidden, cached, foreign or outside', async () => {
    const res = await api(g, 'GET', '/v1/source', undefined, AUTH);
    expect(res.status).toBe(200);
    expect(res.body.base_dir).toBe(await realpath(project));
    expect(res.body.truncated).toBe(false);
    const paths: string[] = res.body.files.map((f: { path: string }) => f.path);
    expect(paths).toEqual([...paths].sort());
    for (const expected of ['counter.py', 'counter.widget.js', 'counter.widget.css', 'live.py', 'notes.md', 'latin1.txt', 'alias.py']) expect(paths).toContain(expected);
    for (const hidden of ['data/blob.bin', 'env/inside_env.py', 'env/pyvenv.cfg', 'node_modules/dep.js', 'leak.py', 'elsewhere/secret.py']) expect(paths).not.toContain(hidden);
    expect(paths.some((p) => p.startsWith('.portico/') || p.includes('__pycache__'))).toBe(false);
    const counter = res.body.files.find((f: { path: string }) => f.path === 'counter.py');
    const info = await stat(path.join(project, 'counter.py'));
    expect(counter).toEqual({ path: 'counter.py', module: 'counter', size: info.size, mtime_ns: expect.any(Number) });
    expect(Math.abs(counter.mtime_ns / 1e6 - info.mtimeMs)).toBeLessThan(1);
    expect(res.body.files.find((f: { path: string }) => f.path === 'counter.widget.js').module).toBeNull();
  });

  it('GET /v1/source/{path} returns the content with its strong ETag in the body and the header', async () => {
    const text = await readFile(path.join(project, 'counter.py'), 'utf8');
    const res = await get('counter.py');
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBe(`"${md5(text)}"`);
    expect(res.body).toEqual({ path: 'counter.py', module: 'counter', content: text, etag: md5(text), size: Buffer.byteLength(text) });
    const again = await fetch(`${g.url}/v1/source/counter.py`, { headers: { ...AUTH, 'if-none-match': `"${md5(text)}"` } });
    expect(again.status).toBe(304);
    expect((await get('nope.py')).status).toBe(404);
    expect((await get('nope.py')).body.code).toBe('not_found');
  });

  it('a symlink inside the project is followed; a file that is not UTF-8 is 415', async () => {
    expect((await get('alias.py')).body.content).toBe(await readFile(path.join(project, 'counter.py'), 'utf8'));
    const latin = await get('latin1.txt');
    expect(latin.status).toBe(415);
    expect(latin.body.code).toBe('not_source_file');
  });
});

describe('conditional writes', () => {
  it('PUT creates (201) then overwrites (200), with the new ETag each time', async () => {
    const created = await put('fresh/tool.py', 'A = 1\n');
    expect(created.status).toBe(201);
    expect(created.headers.get('etag')).toBe(`"${md5('A = 1\n')}"`);
    expect(created.body).toEqual({ path: 'fresh/tool.py', module: 'fresh.tool', etag: md5('A = 1\n'), created: true });
    expect(await readFile(path.join(project, 'fresh/tool.py'), 'utf8')).toBe('A = 1\n');
    const replaced = await put('fresh/tool.py', 'A = 2\n');
    expect(replaced.status).toBe(200);
    expect(replaced.body.created).toBe(false);
    expect((await get('fresh/tool.py')).body.content).toBe('A = 2\n');
  });

  it('If-None-Match: * on an existing file is 412 and changes nothing', async () => {
    await put('cond/a.py', 'A = 1\n');
    const res = await put('cond/a.py', 'A = 2\n', { 'if-none-match': '*' });
    expect(res.status).toBe(412);
    expect(res.body.code).toBe('precondition_failed');
    expect((await get('cond/a.py')).body.content).toBe('A = 1\n');
    expect((await put('cond/new.py', 'N = 1\n', { 'if-none-match': '*' })).status).toBe(201);
  });

  it('If-Match with a stale tag is 412; with the current tag (quoted or bare) or * it writes', async () => {
    const first = await put('cond/b.py', 'B = 1\n');
    const second = await put('cond/b.py', 'B = 2\n', { 'if-match': `"${first.body.etag}"` });
    expect(second.status).toBe(200);
    const stale = await put('cond/b.py', 'B = 3\n', { 'if-match': `"${first.body.etag}"` });
    expect(stale.status).toBe(412);
    expect(stale.body.code).toBe('precondition_failed');
    expect((await put('cond/b.py', 'B = 3\n', { 'if-match': `W/"${second.body.etag}"` })).status).toBe(412); // weak never matches
    expect((await put('cond/b.py', 'B = 3\n', { 'if-match': `"other", "${second.body.etag}"` })).status).toBe(200);
    expect((await put('cond/b.py', 'B = 4\n', { 'if-match': md5('B = 3\n') })).status).toBe(200);
    expect((await put('cond/b.py', 'B = 5\n', { 'if-match': '*' })).status).toBe(200);
    expect((await get('cond/b.py')).body.content).toBe('B = 5\n');
  });

  it('If-Match: * (or any tag) on a missing file is 412 and creates nothing', async () => {
    for (const tag of ['*', `"${md5('x')}"`]) {
      const res = await put('cond/missing/c.py', 'C = 1\n', { 'if-match': tag });
      expect(res.status).toBe(412);
    }
    await expect(stat(path.join(project, 'cond/missing'))).rejects.toThrow();
  });

  it('20 concurrent PUTs with the same If-Match: exactly one wins, the rest are 412, and the file holds the winner whole', async () => {
    const base = await put('race.py', 'RACE = 0\n');
    const contents = Array.from({ length: 20 }, (_, i) => `# writer ${i}\nRACE = ${i}\n${`# ${'x'.repeat(64)}\n`.repeat(1000 * (i + 1))}`);
    const results = await Promise.all(contents.map((content) => put('race.py', content, { 'if-match': `"${base.body.etag}"` })));
    const winners = results.filter((r) => r.status === 200);
    expect(winners).toHaveLength(1);
    expect(results.filter((r) => r.status === 412)).toHaveLength(19);
    const winner = contents[results.indexOf(winners[0]!)]!;
    const onDisk = await readFile(path.join(project, 'race.py'), 'utf8');
    expect(onDisk === winner).toBe(true);
    expect(winners[0]!.body.etag).toBe(md5(winner));
    expect((await get('race.py')).headers.get('etag')).toBe(`"${md5(winner)}"`);
  });

  it('a file over the size bound is 413 payload_too_large', async () => {
    const res = await put('big.txt', 'x'.repeat(4 * 1024 * 1024 + 1));
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload_too_large');
    await expect(stat(path.join(project, 'big.txt'))).rejects.toThrow();
  });
});

describe('delete and move', () => {
  it('DELETE removes the file (204), then 404; a stale If-Match is 412', async () => {
    const written = await put('gone/doomed.py', 'D = 1\n');
    expect((await api(g, 'DELETE', '/v1/source/gone/doomed.py', undefined, { ...WRITE, 'if-match': `"${md5('other')}"` })).status).toBe(412);
    const res = await api(g, 'DELETE', '/v1/source/gone/doomed.py', undefined, { ...WRITE, 'if-match': `"${written.body.etag}"` });
    expect(res.status).toBe(204);
    expect((await get('gone/doomed.py')).status).toBe(404);
    await expect(stat(path.join(project, 'gone'))).rejects.toThrow(); // the folder it emptied went too
    const again = await api(g, 'DELETE', '/v1/source/gone/doomed.py', undefined, WRITE);
    expect(again.status).toBe(404);
    expect(again.body.code).toBe('not_found');
  });

  it('move foo.py → foo/__init__.py and back: the interface keeps working under the same module', async () => {
    await put('mover.py', LIVE(10).replace('Live', 'Mover'));
    expect((await call('mover', 'value')).body).toEqual({ payload: 10 });

    const toPackage = await api(g, 'POST', '/v1/source/move', { from: 'mover.py', to: 'mover/__init__.py' }, WRITE);
    expect(toPackage.status).toBe(200);
    expect(toPackage.body).toEqual({ path: 'mover/__init__.py', module: 'mover', etag: md5(LIVE(10).replace('Live', 'Mover')), created: false });
    expect(toPackage.headers.get('etag')).toBe(`"${toPackage.body.etag}"`);
    expect((await get('mover.py')).status).toBe(404);
    await put('mover/__init__.py', LIVE(11).replace('Live', 'Mover'));
    expect((await call('mover', 'value')).body).toEqual({ payload: 11 });

    const back = await api(g, 'POST', '/v1/source/move', { from_path: 'mover/__init__.py', to: 'mover.py' }, WRITE);
    expect(back.status).toBe(200);
    expect(back.body.module).toBe('mover');
    await expect(stat(path.join(project, 'mover'))).rejects.toThrow(); // the emptied package folder went
    await put('mover.py', LIVE(12).replace('Live', 'Mover'));
    expect((await call('mover', 'value')).body).toEqual({ payload: 12 });
  });

  it('move refuses an existing destination (409), a missing source (404) and a stale If-Match (412)', async () => {
    await put('m/one.py', 'ONE = 1\n');
    await put('m/two.py', 'TWO = 2\n');
    const exists = await api(g, 'POST', '/v1/source/move', { from: 'm/one.py', to: 'm/two.py' }, WRITE);
    expect(exists.status).toBe(409);
    expect(exists.body.code).toBe('conflict');
    expect((await api(g, 'POST', '/v1/source/move', { from: 'm/none.py', to: 'm/three.py' }, WRITE)).status).toBe(404);
    expect((await api(g, 'POST', '/v1/source/move', { from: 'm/one.py', to: 'm/three.py' }, { ...WRITE, 'if-match': '"stale"' })).status).toBe(412);
    expect((await api(g, 'POST', '/v1/source/move', { to: 'm/three.py' }, WRITE)).status).toBe(422);
    expect((await get('m/two.py')).body.content).toBe('TWO = 2\n');
  });
});

describe('confinement', () => {
  it('.., absolute paths and empty segments are 403 forbidden, read or write', async () => {
    for (const pathname of [
      '/v1/source/../secret.py',
      '/v1/source/..%2F..%2Fetc%2Fpasswd.txt',
      '/v1/source/fresh/..%2F..%2Fx.py',
      '/v1/source/%2Fetc%2Fhosts.txt',
      `/v1/source/${encodeURIComponent(path.join(outside, 'secret.py'))}`,
      '/v1/source/a%5C..%5C..%5Cx.py',
      '/v1/source/a//b.py',
      '/v1/source/./counter.py',
    ]) {
      for (const method of ['GET', 'PUT', 'DELETE']) {
        const res = await raw(method, pathname, method === 'GET' ? AUTH : WRITE, method === 'PUT' ? { content: 'PWNED = 1\n' } : undefined);
        expect(res.status, `${method} ${pathname}`).toBe(403);
        expect(res.body.code).toBe('forbidden');
      }
    }
    expect(await readFile(path.join(outside, 'secret.py'), 'utf8')).toBe('SECRET = 1\n');
  });

  it('symlinks leading out are 403, for the file and for a folder on the way', async () => {
    for (const file of ['leak.py', 'elsewhere/secret.py', 'elsewhere/new.py']) {
      expect((await get(file)).status, file).toBe(403);
      const res = await put(file, 'PWNED = 1\n');
      expect(res.status, file).toBe(403);
      expect(res.body.code).toBe('forbidden');
    }
    expect(await readFile(path.join(outside, 'secret.py'), 'utf8')).toBe('SECRET = 1\n');
    await expect(stat(path.join(outside, 'new.py'))).rejects.toThrow();
    const move = await api(g, 'POST', '/v1/source/move', { from: 'notes.md', to: 'elsewhere/notes.md' }, WRITE);
    expect(move.status).toBe(403);
  });

  it('.portico, hidden files, __pycache__ and environments are 403; other extensions are 415 not_source_file', async () => {
    for (const file of ['.portico/index/seg-00.json', '.portico/evil.py', '.hidden.py', '__pycache__/x.py', 'env/inside_env.py', 'node_modules/dep.js']) {
      expect((await get(file)).status, file).toBe(403);
      const res = await put(file, 'X = 1\n');
      expect(res.status, file).toBe(403);
      expect(res.body.code).toBe('forbidden');
    }
    await expect(stat(path.join(project, '.portico/evil.py'))).rejects.toThrow();
    for (const file of ['data/blob.bin', 'run.sh', 'Makefile', 'counter.pyc']) {
      const res = await put(file, 'X = 1\n');
      expect(res.status, file).toBe(415);
      expect(res.body.code).toBe('not_source_file');
    }
    expect((await get('data/blob.bin')).status).toBe(415);
    const move = await api(g, 'POST', '/v1/source/move', { from: 'notes.md', to: '.portico/notes.md' }, WRITE);
    expect(move.status).toBe(403);
    expect((await api(g, 'POST', '/v1/source/move', { from: 'notes.md', to: '../notes.md' }, WRITE)).status).toBe(403);
    expect((await api(g, 'POST', '/v1/source/move', { from: 'notes.md', to: 'notes.sh' }, WRITE)).status).toBe(415);
    expect(await readFile(path.join(project, 'notes.md'), 'utf8')).toBe('# Notes\n');
  });
});

describe('invalidation', () => {
  it('after a PUT a REST call runs the new code (same size, same second: no stale bytecode)', async () => {
    expect((await call('live', 'value')).body).toEqual({ payload: 1 });
    expect((await readdir(path.join(project, '__pycache__'))).some((name) => name.startsWith('live.'))).toBe(true);
    for (const value of [2, 3, 4]) {
      expect((await put('live.py', LIVE(value))).status).toBe(200);
      expect((await call('live', 'value')).body).toEqual({ payload: value });
    }
    const schema = await api(g, 'GET', '/v1/project/live', undefined, AUTH);
    expect(schema.body.methods.map((m: { name: string }) => m.name)).toEqual(['value']);
    await put('live.py', `${LIVE(5)}\n    def extra(self):\n        return "new"\n`);
    expect((await api(g, 'GET', '/v1/project/live', undefined, AUTH)).body.methods.map((m: { name: string }) => m.name)).toEqual(['extra', 'value']);
    expect((await call('live', 'extra')).body).toEqual({ payload: 'new' });
  });

  it('a PUT of a widget module evicts its live instance and tells attached clients to reload; their socket stays', async () => {
    const client = await Client.open(g.url, { headers: AUTH });
    await client.connect('counter', { version: [{ start: 7 }] });
    expect((await client.request({ type: 'call', method: 'add', args: [3] })).payload).toBe(10);

    const text = await readFile(path.join(project, 'counter.py'), 'utf8');
    const res = await put('counter.py', text.replace('"""The current count."""', '"""The current count (edited)."""'));
    expect(res.status).toBe(200);
    const reload = await client.waitFor((f) => f.type === 'widget_reload');
    const esm = await fetch(`${g.url}/v1/project/counter/widget/esm`, { headers: AUTH });
    expect(reload.payload).toEqual({ asset: 'esm', etag: esm.headers.get('etag') });
    // Evicted: the next call on the same socket gets a fresh instance of the edited class, which
    // is handed the widget state the old one saved (add pushed count 10), not the count at start.
    expect((await client.request({ type: 'call', method: 'value' })).payload).toBe(10);
    client.close();
  });

  it('a PUT that changes a Config default: the next REST call by module name runs on the new config, as a new record', async () => {
    const module = (start: number) => ['from portico import Interface', '', 'class Tally(Interface):', '    class Config:', `        start: int = ${start}`, '', '    def start(self):', '        return self.config.start', ''].join('\n');
    expect((await put('tally.py', module(1))).status).toBe(201);
    expect((await call('tally', 'start')).body).toEqual({ payload: 1 });
    const first = await api(g, 'POST', '/v1/interfaces', { target: 'tally' }, AUTH);
    expect((await call('tally', 'start')).body).toEqual({ payload: 1 });

    expect((await put('tally.py', module(2))).status).toBe(200);
    expect((await call('tally', 'start')).body).toEqual({ payload: 2 });
    const second = await api(g, 'POST', '/v1/interfaces', { target: 'tally' }, AUTH);
    expect(second.body.config).toEqual({ start: 2 });
    expect(second.body.uuid).not.toBe(first.body.uuid);
    // The first record is still there, unchanged, under its own uuid.
    expect((await api(g, 'GET', `/v1/interfaces/${first.body.uuid}`, undefined, AUTH)).body.config).toEqual({ start: 1 });
  });

  it('a PUT of a widget front end sends widget_reload with the tag the asset is now served with', async () => {
    const client = await Client.open(g.url, { headers: AUTH });
    await client.connect('counter');
    const js = await readFile(path.join(project, 'counter.widget.js'), 'utf8');
    expect((await put('counter.widget.js', `${js}\n// edited through /v1/source\n`)).status).toBe(200);
    const reload = await client.waitFor((f) => f.type === 'widget_reload' && f.payload.asset === 'esm');
    const esm = await fetch(`${g.url}/v1/project/counter/widget/esm`, { headers: AUTH });
    expect(await esm.text()).toContain('// edited through /v1/source');
    expect(reload.payload.etag).toBe(esm.headers.get('etag'));

    expect((await put('counter.widget.css', '.counter { color: red; }\n')).status).toBe(200);
    const css = await client.waitFor((f) => f.type === 'widget_reload' && f.payload.asset === 'css');
    expect(css.payload.etag).toBe((await fetch(`${g.url}/v1/project/counter/widget/css`, { headers: AUTH })).headers.get('etag'));
    client.close();
  });

  it('a deleted module is gone for calls; a module created by PUT is callable at once', async () => {
    await put('ephemeral.py', LIVE(42).replace('Live', 'Ephemeral'));
    expect((await call('ephemeral', 'value')).body).toEqual({ payload: 42 });
    expect((await api(g, 'DELETE', '/v1/source/ephemeral.py', undefined, WRITE)).status).toBe(204);
    const gone = await api(g, 'POST', '/v1/interfaces/resolve', { target: 'ephemeral' }, AUTH);
    expect([gone.status, gone.body.code]).toEqual([400, 'unknown_module']);
  });
});

describe('projects', () => {
  it('the base directory is the bound project (X-Service-Project), within the project roots', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'portico-roots-'));
    const other = path.join(root, 'other');
    await mkdir(other);
    await writeFile(path.join(other, 'only_here.py'), 'X = 1\n');
    const multi = await gateway({ project: await tempProject(), apiToken: API_TOKEN, enableSourceApi: true, sourceToken: SOURCE_TOKEN, projectRoots: [root] });
    const listed = await api(multi, 'GET', '/v1/source', undefined, { ...AUTH, 'x-service-project': other });
    expect(listed.body.files.map((f: { path: string }) => f.path)).toEqual(['only_here.py']);
    const refused = await api(multi, 'GET', '/v1/source', undefined, { ...AUTH, 'x-service-project': outside });
    expect(refused.status).toBe(403);
    await rm(root, { recursive: true, force: true });
  });
});
