/**
 * Nothing poisons the index: a create or label the store cannot take whole (nested too deep to
 * serialize, over LIMITS.recordMaxBytes, a uuid that cannot name a folder) is refused with a
 * stable code before any of it reaches memory or disk, so listing and search keep answering and
 * nothing of it is left in the project. Record files are written compact. Against a real gateway
 * (embedded store) and Python worker; store-level cases for both stores are in
 * store-conformance.test.ts.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../packages/server/src/config/constants.js';
import { PorticoError } from '../packages/server/src/errors.js';
import type { RunningServer } from '../packages/server/src/index.js';
import { api, cleanup, Client, gateway, tempProject } from './helpers.js';

afterAll(cleanup);

/** `n` lists, one inside the other, around `inner`. */
const nested = (n: number, inner: unknown = 1): unknown => {
  let value = inner;
  for (let i = 0; i < n; i++) value = [value];
  return value;
};

/** Meta just within the request's nesting bound (level 64 in the body) and over the record size bound. */
const OVERSIZED_META = { deep: nested(62), blob: 'x'.repeat(LIMITS.recordMaxBytes) };

let g: RunningServer;
let project: string;

beforeAll(async () => {
  project = await tempProject();
  g = await gateway({ project });
});

/** GET /v1/interfaces and a search of the project both answer 200; the uuids the search finds. */
async function stillServing(): Promise<string[]> {
  const list = await api(g, 'GET', '/v1/interfaces');
  expect(list.status).toBe(200);
  const search = await api(g, 'POST', '/v1/interfaces/search', { include_archived: true, limit: 1000 });
  expect(search.status).toBe(200);
  return search.body.items.map((item: { uuid: string }) => item.uuid).sort();
}

/** The folders under .portico/interfaces (none for a refused create). */
async function interfaceFolders(): Promise<string[]> {
  return (await readdir(path.join(project, '.portico/interfaces')).catch(() => [] as string[])).sort();
}

describe('a create the store cannot take whole', () => {
  it('meta nested 20,000 deep (through the service, past the body bound) is refused with invalid_argument; listing and search keep answering', async () => {
    const before = await stillServing();
    const ctx = await g.gateway.bind();
    const refused = await g.gateway.interfaces.create(ctx, { target: 'counter', version: [{ start: 777 }], meta: { m: nested(20_000) as unknown[] } }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(PorticoError);
    expect(refused).toMatchObject({ code: 'invalid_argument', message: expect.stringMatching(/nested deeper than 64 levels \(at \$\.meta/) });
    expect(await stillServing()).toEqual(before);
    // The same create with a plain meta goes through afterwards.
    const created = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 777 }], meta: { m: 1 } });
    expect(created.status).toBe(200);
    expect(await stillServing()).toContain(created.body.uuid);
  });

  it('meta over limits.recordMaxBytes answers 413 payload_too_large naming the bound; nothing is stored', async () => {
    const before = await stillServing();
    const folders = await interfaceFolders();
    const res = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 778 }], meta: OVERSIZED_META });
    expect([res.status, res.body.code]).toEqual([413, 'payload_too_large']);
    expect(res.body.message).toMatch(/more than the 1048576 bytes a record may take \(limits\.recordMaxBytes\); its meta alone takes \d+/);
    expect(await stillServing()).toEqual(before);
    expect(await interfaceFolders()).toEqual(folders);
  });

  it('connect with meta over the bound answers payload_too_large to its id; the socket connects afterwards', async () => {
    const before = await stillServing();
    const c = await Client.open(g.url);
    const refused = await c.request({ type: 'connect', target: 'counter', version: [{ start: 779 }], meta: OVERSIZED_META });
    expect(refused).toMatchObject({ type: 'error', payload: { code: 'payload_too_large' } });
    expect(await stillServing()).toEqual(before);
    await c.connect('counter', { version: [{ start: 779 }] });
  });

  it('a client uuid that cannot name a folder (through the service, past the request schema) is refused with invalid_argument, and no record of it appears', async () => {
    const before = await stillServing();
    const ctx = await g.gateway.bind();
    await expect(g.gateway.interfaces.create(ctx, { target: 'counter', uuid: 'a/b' })).rejects.toMatchObject({ code: 'invalid_argument', message: expect.stringMatching(/^uuid 'a\/b' must be/) });
    expect(await stillServing()).toEqual(before);
    expect((await api(g, 'GET', '/v1/interfaces/a%2Fb')).status).toBe(404);
  });

  it('serves the record bound in /v1/protocol limits', async () => {
    expect((await api(g, 'GET', '/v1/protocol')).body.limits.recordMaxBytes).toBe(LIMITS.recordMaxBytes);
  });
});

describe('record files', () => {
  it('are compact: a record with meta nested to the bound is one line of its own JSON', async () => {
    const meta = { deep: nested(62) };
    const res = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 780 }], meta, label: 'deep' });
    expect(res.status).toBe(200);
    const file = path.join(project, '.portico/interfaces', res.body.uuid, 'interface.json');
    const text = await readFile(file, 'utf8');
    // cli and cached are the answer's, not the record's (cached is computed when answered).
    const { cli: _cli, cached: _cached, predicate: _predicate, ...shown } = res.body;
    expect(JSON.parse(text)).toMatchObject({ ...shown, predicate: {} });
    expect(text).toBe(`${JSON.stringify(JSON.parse(text))}\n`);
    expect((await stat(file)).size).toBeLessThan(1024);
    // A label change rewrites it, compact too.
    expect((await api(g, 'PATCH', `/v1/interfaces/${res.body.uuid}/label`, { label: 'relabelled' })).status).toBe(200);
    const relabelled = await readFile(file, 'utf8');
    expect(JSON.parse(relabelled).label).toBe('relabelled');
    expect(relabelled).toBe(`${JSON.stringify(JSON.parse(relabelled))}\n`);
  });
});
