/**
 * The config index as users meet it: resolve, labels, archive, attribution, search over REST,
 * schema reflection, `portico get` / `reindex`, and the store's durability under concurrency
 * and SIGKILL.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, gateway, ROOT, tempProject } from './helpers.js';

afterAll(cleanup);

const BIN = path.join(ROOT, 'packages/server/bin/portico.js');
const run = promisify(execFile);

const TYPED = [
  'from dataclasses import dataclass, field',
  'from portico import Interface',
  '',
  'class Typed(Interface):',
  '    """A typed config."""',
  '',
  '    @dataclass',
  '    class Config:',
  '        name: str',
  '        "What to call it."',
  '        rate: float = 0.1',
  '        tags: list[str] = field(default_factory=list)',
  '',
  '    def version_fast(self, rate: float = 0.9):',
  '        """Goes fast."""',
  '        return {"rate": rate}',
  '',
  '    def describe(self, verbose: bool = False) -> dict:',
  '        """Describes itself."""',
  '        return {"name": self.config.name}',
  '',
].join('\n');

describe('resolve', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway({ project: await tempProject({ 'typed.py': TYPED }) });
  });

  it('returns module, normalized version, config, predicate, uuid and cli, and materializes nothing', async () => {
    const res = await api(g, 'POST', '/v1/interfaces/resolve', { target: 'counter', version: ['~big(step=3)', { 'start': 2 }] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ module: 'counter', config: { start: 2, step: 3 }, predicate: null });
    expect(res.body.cli).toBe("portico get counter '~big(step=3)' start=2");
    expect((await api(g, 'GET', `/v1/interfaces/${res.body.uuid}`)).status).toBe(404);
    const created = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: ['~big(step=3)', { start: 2 }] });
    expect(created.body.uuid).toBe(res.body.uuid);
  });

  it('running the cli line creates exactly that uuid', async () => {
    const project = await tempProject({ 'typed.py': TYPED });
    const resolved = await api(g, 'POST', '/v1/interfaces/resolve', {
      target: 'typed',
      version: [{ name: '1', tags: ['a', "it's"] }, '~fast'],
    });
    expect(resolved.status).toBe(200);
    const { stdout } = await run('bash', ['-c', `${resolved.body.cli.replace(/^portico/, `node ${BIN}`)} --project ${project}`]);
    expect(JSON.parse(stdout)).toMatchObject({ uuid: resolved.body.uuid, config: { name: '1', rate: 0.9, tags: ['a', "it's"] } });
  });

  it('answers 400 with an issue on the offending path for each kind of problem', async () => {
    const cases: Array<[unknown[], string | null, RegExp]> = [
      [[{ nope: 1 }], 'nope', /nope/],
      [[{ start: 'x' }], 'start', /int/],
      [['~huge'], null, /huge/],
      [["~big(__import__('os'))"], null, /literal|argument/i],
    ];
    for (const [version, issuePath, message] of cases) {
      const res = await api(g, 'POST', '/v1/interfaces/resolve', { target: 'counter', version });
      expect(res.status, JSON.stringify(version)).toBe(400);
      expect(res.body.detail.code).toBe('invalid_config');
      expect(res.body.detail.issues.some((i: { path: string | null; message: string }) => i.path === issuePath && message.test(i.message))).toBe(true);
    }
    const missing = await api(g, 'POST', '/v1/interfaces/resolve', { target: 'typed' });
    expect(missing.body.detail.issues).toEqual([expect.objectContaining({ path: 'name' })]);
  });
});

describe('labels, archive and attribution', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway();
  });

  it('label: set, replace, clear; config stays; unknown uuid is 404', async () => {
    const created = (await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 11 }] })).body;
    const set = await api(g, 'PATCH', `/v1/interfaces/${created.uuid}/label`, { label: 'first' });
    expect(set.body).toEqual({ ...created, label: 'first' });
    expect((await api(g, 'PATCH', `/v1/interfaces/${created.uuid}/label`, { label: null })).body.label).toBeNull();
    expect((await api(g, 'PATCH', `/v1/interfaces/${created.uuid}/label`, {})).status).toBe(422);
    expect((await api(g, 'PATCH', '/v1/interfaces/nope/label', { label: 'x' })).status).toBe(404);
  });

  it('label: 100 concurrent writes end with one of the written labels and the record intact', async () => {
    const created = (await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 12 }] })).body;
    const labels = Array.from({ length: 100 }, (_, i) => `label-${i}`);
    const results = await Promise.all(labels.map((label) => api(g, 'PATCH', `/v1/interfaces/${created.uuid}/label`, { label })));
    expect(results.every((r) => r.status === 200)).toBe(true);
    const final = (await api(g, 'GET', `/v1/interfaces/${created.uuid}`)).body;
    expect(labels).toContain(final.label);
    expect({ ...final, label: null }).toEqual({ ...created, label: null });
  });

  it('archive hides from search and list; restore brings it back; unknown uuid is 404', async () => {
    const created = (await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 13 }] })).body;
    const find = async (extra = {}) =>
      (await api(g, 'POST', '/v1/interfaces/search', { config: { filters: [{ path: 'start', op: 'eq', value: 13 }] }, ...extra })).body;
    expect((await find()).total).toBe(1);
    expect((await api(g, 'POST', `/v1/interfaces/${created.uuid}/archive`)).body.archived).toBe(true);
    expect((await find()).total).toBe(0);
    expect((await find({ include_archived: true })).items[0].uuid).toBe(created.uuid);
    expect((await api(g, 'GET', '/v1/interfaces')).body.map((r: { uuid: string }) => r.uuid)).not.toContain(created.uuid);
    expect((await api(g, 'GET', `/v1/interfaces/${created.uuid}`)).body.archived).toBe(true);
    expect((await api(g, 'POST', `/v1/interfaces/${created.uuid}/archive?restore=true`)).body.archived).toBe(false);
    expect((await find()).total).toBe(1);
    expect((await api(g, 'POST', '/v1/interfaces/nope/archive')).status).toBe(404);
    expect((await api(g, 'POST', `/v1/interfaces/${created.uuid}/archive?restore=maybe`)).status).toBe(422);
  });

  it('created_by comes from X-Service-User and is searchable', async () => {
    await api(g, 'POST', '/v1/interfaces', { target: 'streamer', version: [{ prefix: 'by-grace' }] }, { 'X-Service-User': 'grace' });
    const res = await api(g, 'POST', '/v1/interfaces/search', { created_by: 'grace' });
    expect(res.body.items.map((r: { config: { prefix: string } }) => r.config.prefix)).toEqual(['by-grace']);
  });
});

describe('search over REST', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway();
    for (let start = 0; start < 30; start++) {
      await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start, step: start % 3 }], label: start % 2 ? 'odd' : null });
    }
  });

  it('filters with operators, sorts by several keys, pages by offset and by cursor', async () => {
    const query = {
      module: 'counter',
      config: { filters: [{ path: 'start', op: 'gte', value: 10 }, { path: 'step', op: 'in', value: [0, 2] }] },
      sort: [{ by: 'config.step', direction: 'asc' }, { by: 'config.start', direction: 'desc' }],
      limit: 4,
    };
    const first = await api(g, 'POST', '/v1/interfaces/search', query);
    expect(first.status).toBe(200);
    const expected = Array.from({ length: 20 }, (_, i) => i + 10)
      .filter((s) => s % 3 !== 1)
      .sort((a, b) => (a % 3) - (b % 3) || b - a);
    expect(first.body.total).toBe(expected.length);
    const seen = first.body.items.map((r: { config: { start: number } }) => r.config.start);
    let cursor = first.body.next_cursor;
    while (cursor) {
      const page = await api(g, 'POST', '/v1/interfaces/search', { ...query, cursor });
      seen.push(...page.body.items.map((r: { config: { start: number } }) => r.config.start));
      cursor = page.body.next_cursor;
    }
    expect(seen).toEqual(expected);
    const offset = await api(g, 'POST', '/v1/interfaces/search', { ...query, offset: 4 });
    expect(offset.body.items.map((r: { config: { start: number } }) => r.config.start)).toEqual(expected.slice(4, 8));
  });

  it('filters on label, including unlabelled records', async () => {
    expect((await api(g, 'POST', '/v1/interfaces/search', { label: 'odd', limit: 1000 })).body.total).toBe(15);
    const unlabelled = await api(g, 'POST', '/v1/interfaces/search', { module: 'counter', filters: [{ path: 'label', op: 'eq', value: null }] });
    expect(unlabelled.body.total).toBe(15);
  });

  it('a bad path, operator or sort key answers 422, never 500', async () => {
    const bad = [
      { config: { filters: [{ path: 'a..b', op: 'eq', value: 1 }] } },
      { config: { filters: [{ path: 'start', op: 'like', value: 1 }] } },
      { config: { filters: [{ path: 'start', op: 'gt', value: [1] }] } },
      { sort: [{ by: 'nonsense' }] },
      { sort: [{ by: 'created_at', direction: 'sideways' }] },
      { limit: 0 },
      { cursor: 'garbage' },
    ];
    for (const body of bad) {
      const res = await api(g, 'POST', '/v1/interfaces/search', body);
      expect(res.status, JSON.stringify(body)).toBe(422);
    }
  });
});

describe('schema reflection', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway({ project: await tempProject({ 'typed.py': TYPED, 'broken.py': 'def oops(:\n' }) });
  });

  it('GET /v1/project lists the interface modules with docstrings, widget flags and errors', async () => {
    const res = await api(g, 'GET', '/v1/project');
    expect(res.status).toBe(200);
    expect(res.body.project).toBe(g.gateway.projects.defaultDir);
    const byModule = Object.fromEntries(res.body.modules.map((m: { module: string }) => [m.module, m]));
    expect(Object.keys(byModule)).toEqual(expect.arrayContaining(['broken', 'counter', 'faulty', 'slow', 'streamer', 'typed']));
    expect(byModule.counter).toMatchObject({ kind: 'Counter', doc: expect.stringContaining('Counts clicks'), error: null });
    expect(byModule.broken.error).toMatch(/SyntaxError/);
  });

  it('GET /v1/project/{module} reflects the Config as JSON Schema, versions and methods', async () => {
    const res = await api(g, 'GET', '/v1/project/typed');
    expect(res.status).toBe(200);
    const schema = res.body.config_schema;
    expect(schema.properties.name).toMatchObject({ type: 'string', description: 'What to call it.' });
    expect(schema.properties.rate).toMatchObject({ type: 'number', default: 0.1 });
    expect(schema.required).toEqual(['name']);
    expect(res.body.versions).toEqual(['~fast']);
    expect(res.body.version_methods).toEqual([expect.objectContaining({ name: 'fast', doc: 'Goes fast.', signature: '(rate: float = 0.9)' })]);
    expect(res.body.methods.map((m: { name: string }) => m.name)).toEqual(['describe']);
    expect(res.body.source_file).toBe('typed.py');
    const missing = await api(g, 'GET', '/v1/project/nosuch');
    expect([missing.status, missing.body.code, missing.body.detail]).toEqual([404, 'unknown_module', missing.body.message]);
  });
});

describe('durability', () => {
  it('reindex rebuilds the index from the interface directories, keeping created_by, label and archived', async () => {
    const project = await tempProject();
    const first = await gateway({ project });
    const a = (await api(first, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 1 }] }, { 'X-Service-User': 'ada' })).body;
    const b = (await api(first, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 2 }] })).body;
    await api(first, 'PATCH', `/v1/interfaces/${a.uuid}/label`, { label: 'kept' });
    await api(first, 'POST', `/v1/interfaces/${b.uuid}/archive`);
    await first.close();
    await rm(path.join(project, '.portico/index'), { recursive: true });
    const { stdout } = await run(process.execPath, [BIN, 'reindex', project]);
    expect(stdout).toContain('Indexed 2 interfaces');
    const second = await gateway({ project });
    expect((await api(second, 'GET', `/v1/interfaces/${a.uuid}`)).body).toMatchObject({ created_by: 'ada', label: 'kept', archived: false });
    expect((await api(second, 'GET', `/v1/interfaces/${b.uuid}`)).body).toMatchObject({ archived: true });
  });

  it('a second process cannot open an index a live gateway holds; get goes through it (found by the lock, or --url)', async () => {
    const project = await tempProject();
    const g = await gateway({ project });
    const res = await run(process.execPath, [BIN, 'reindex', project]).catch((err) => err);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`in use by the gateway at ${g.url}`);
    const found = JSON.parse((await run(process.execPath, [BIN, 'get', 'counter', '--project', project])).stdout);
    expect((await api(g, 'GET', `/v1/interfaces/${found.uuid}`)).body).toEqual(found);
    const { stdout } = await run(process.execPath, [BIN, 'get', 'counter', '~big', 'start=4', '--url', g.url, '--user', 'cli-user']);
    const printed = JSON.parse(stdout);
    expect(printed).toMatchObject({ module: 'counter', config: { start: 4, step: 10 }, created_by: 'cli-user' });
    expect((await api(g, 'GET', `/v1/interfaces/${printed.uuid}`)).body).toEqual(printed);
    const bad = await run(process.execPath, [BIN, 'get', 'counter', 'nope=1', '--url', g.url]).catch((err) => err);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('invalid_config');
  });

  it('SIGKILL during 1000 concurrent creates: the restarted gateway holds every acknowledged create', async () => {
    const project = await tempProject();
    const child = spawn(process.execPath, [BIN, 'serve', project, '--port', '0'], { stdio: ['ignore', 'pipe', 'ignore'] });
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
        const m = /API\s+(http:\/\/\S+)\/v1/.exec(out);
        if (m) resolve(m[1]!);
      });
      child.once('exit', () => reject(new Error(out)));
    });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    const acknowledged: string[] = [];
    const create = (start: number) =>
      new Promise<void>((resolve) => {
        const body = JSON.stringify({ target: 'counter', version: [{ start }] });
        const req = http.request(`${url}/v1/interfaces`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => {
            if (res.statusCode === 200) acknowledged.push(JSON.parse(text).uuid);
            resolve();
          });
          res.on('error', () => resolve());
        });
        req.on('error', () => resolve());
        req.end(body);
      });
    const all = Promise.all(Array.from({ length: 1000 }, (_, i) => create(i)));
    while (acknowledged.length < 200) await new Promise((r) => setTimeout(r, 5));
    child.kill('SIGKILL');
    await all;
    agent.destroy();
    expect(acknowledged.length).toBeGreaterThanOrEqual(200);

    const restarted = await gateway({ project });
    const found = await api(restarted, 'POST', '/v1/interfaces/search', { module: 'counter', limit: 1000 });
    const stored = new Set(found.body.items.map((r: { uuid: string }) => r.uuid));
    const missing = acknowledged.filter((uuid) => !stored.has(uuid));
    expect(missing).toEqual([]);
    // The replayed journal was folded into the segments, and no temp files were left behind.
    const files = await readdir(path.join(project, '.portico/index'));
    expect(files.filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(existsSync(path.join(project, '.portico/index/seg-00.json'))).toBe(true);
  });
});
