/** An interface's data folder, files, provenance and related records; the executions socket. */
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, Client, gateway, tempProject } from './helpers.js';

afterAll(cleanup);

async function runToEnd(g: { url: string }, body: object): Promise<{ uuid: string; interfaces: string[] }> {
  const run = (await api(g, 'POST', '/v1/executions', body)).body;
  for (let i = 0; i < 600; i++) {
    const info = (await api(g, 'GET', `/v1/executions/${run.uuid}`)).body;
    if (['finished', 'failed', 'interrupted'].includes(info.status)) return run;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('run did not end');
}

describe('data and files', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  let project: string;
  let uuid: string;
  beforeAll(async () => {
    project = await tempProject();
    g = await gateway({ project });
    uuid = (await runToEnd(g, { interfaces: [{ target: 'trainer', version: [{ epochs: 2 }] }] })).interfaces[0]!;
    const dir = path.join(project, '.portico/interfaces', uuid);
    await mkdir(path.join(dir, 'nested'), { recursive: true });
    await writeFile(path.join(dir, 'nested/blob.bin'), Buffer.from([0, 255, 1, 254, 10, 13]));
    await writeFile(path.join(dir, '.hidden'), 'x');
    await writeFile(path.join(project, 'secret.txt'), 'outside');
    await symlink(path.join(project, 'secret.txt'), path.join(dir, 'escape'));
    await symlink(path.join(dir, 'result.json'), path.join(dir, 'inside-link'));
  });

  it('data status: local with its size; evicted once the folder is gone', async () => {
    const local = (await api(g, 'GET', `/v1/interfaces/${uuid}/data`)).body;
    expect(local).toMatchObject({ uuid, status: 'local', path: `.portico/interfaces/${uuid}` });
    expect(local.files).toBeGreaterThanOrEqual(3);
    const other = (await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 77 }] })).body;
    await rm(path.join(project, '.portico/interfaces', other.uuid), { recursive: true });
    expect((await api(g, 'GET', `/v1/interfaces/${other.uuid}/data`)).body.status).toBe('evicted');
    const remote = (await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 78 }], meta: { storage_uri: 's3://bucket/x' } })).body;
    await rm(path.join(project, '.portico/interfaces', remote.uuid), { recursive: true });
    expect((await api(g, 'GET', `/v1/interfaces/${remote.uuid}/data`)).body).toMatchObject({ status: 'remote', storage_uri: 's3://bucket/x' });
    expect((await api(g, 'GET', '/v1/interfaces/nope/data')).status).toBe(404);
  });

  it('files: lists relative paths without dotfiles; raw (?raw=true or Accept: application/octet-stream) reads bytes exactly; ranges', async () => {
    const { files } = (await api(g, 'GET', `/v1/interfaces/${uuid}/files`)).body;
    expect(files).toEqual(expect.arrayContaining(['cached', 'interface.json', 'nested/blob.bin', 'result.json']));
    expect(files).not.toContain('.hidden');
    const blob = await fetch(`${g.url}/v1/interfaces/${uuid}/files/nested/blob.bin?raw=true`);
    expect(blob.headers.get('content-type')).toBe('application/octet-stream');
    expect(blob.headers.get('x-content-type-options')).toBe('nosniff');
    expect(Buffer.from(await blob.arrayBuffer())).toEqual(Buffer.from([0, 255, 1, 254, 10, 13]));
    const accepted = await fetch(`${g.url}/v1/interfaces/${uuid}/files/nested/blob.bin`, { headers: { accept: 'application/octet-stream' } });
    expect(Buffer.from(await accepted.arrayBuffer())).toEqual(Buffer.from([0, 255, 1, 254, 10, 13]));
    const json = await fetch(`${g.url}/v1/interfaces/${uuid}/files/result.json?raw=1`);
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await json.json()).toEqual({ loss: 0.25, epochs: 2 });
    const part = await fetch(`${g.url}/v1/interfaces/${uuid}/files/nested/blob.bin`, { headers: { range: 'bytes=1-2', accept: 'application/octet-stream' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 1-2/6');
    expect(Buffer.from(await part.arrayBuffer())).toEqual(Buffer.from([255, 1]));
    expect((await fetch(`${g.url}/v1/interfaces/${uuid}/files/nested/blob.bin?raw=true`, { headers: { range: 'bytes=10-' } })).status).toBe(416);
    expect((await fetch(`${g.url}/v1/interfaces/${uuid}/files/inside-link?raw=true`)).status).toBe(200);
  });

  it('files: by default as the reference answers, a .json file parsed and any other text as a JSON string; Accept that prefers JSON keeps it', async () => {
    const dir = path.join(project, '.portico/interfaces', uuid);
    await writeFile(path.join(dir, 'notes.txt'), 'héllo\n"quoted"');
    await writeFile(path.join(dir, 'null.json'), 'null');
    const parsed = await fetch(`${g.url}/v1/interfaces/${uuid}/files/result.json`);
    expect(parsed.status).toBe(200);
    expect(parsed.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(parsed.headers.get('vary')).toMatch(/accept/i);
    expect(await parsed.json()).toEqual({ loss: 0.25, epochs: 2 });
    const text = await fetch(`${g.url}/v1/interfaces/${uuid}/files/notes.txt`);
    expect(text.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await text.text()).toBe(JSON.stringify('héllo\n"quoted"'));
    const nothing = await fetch(`${g.url}/v1/interfaces/${uuid}/files/null.json`);
    expect([nothing.status, await nothing.text()]).toEqual([200, 'null']);
    // A browser's Accept (*/* with anything) and one that prefers JSON both get the JSON answer.
    for (const accept of ['*/*', 'application/json, application/octet-stream;q=0.5', 'text/html,*/*;q=0.8']) {
      expect(await (await fetch(`${g.url}/v1/interfaces/${uuid}/files/notes.txt`, { headers: { accept } })).json()).toBe('héllo\n"quoted"');
    }
    // Range belongs to the raw bytes: the JSON answer is whole.
    expect(await (await fetch(`${g.url}/v1/interfaces/${uuid}/files/notes.txt`, { headers: { range: 'bytes=0-1' } })).json()).toBe('héllo\n"quoted"');
    expect((await api(g, 'GET', `/v1/interfaces/${uuid}/files/notes.txt?raw=maybe`)).status).toBe(422);
  });

  it('files: a file with no JSON answer (not UTF-8, a .json that does not parse) answers 406 file_needs_raw, never 500; raw still reads it', async () => {
    const dir = path.join(project, '.portico/interfaces', uuid);
    await writeFile(path.join(dir, 'broken.json'), '{"a": ');
    await writeFile(path.join(dir, 'deep.json'), '['.repeat(200_000) + ']'.repeat(200_000));
    for (const name of ['nested/blob.bin', 'broken.json', 'deep.json']) {
      const res = await api(g, 'GET', `/v1/interfaces/${uuid}/files/${name}`);
      expect(res.status, name).toBe(406);
      expect(res.body.code).toBe('file_needs_raw');
      expect(res.body.message).toContain('?raw=true or Accept: application/octet-stream');
    }
    expect(await (await fetch(`${g.url}/v1/interfaces/${uuid}/files/broken.json?raw=true`)).text()).toBe('{"a": ');
  });

  it('files: over 16 MiB the JSON answer is refused with payload_too_large, pointing at raw reads with Range', async () => {
    const dir = path.join(project, '.portico/interfaces', uuid);
    await writeFile(path.join(dir, 'big.txt'), Buffer.alloc(16 * 1024 * 1024 + 1, 'a'));
    const res = await api(g, 'GET', `/v1/interfaces/${uuid}/files/big.txt`);
    expect([res.status, res.body.code]).toEqual([413, 'payload_too_large']);
    expect(res.body.message).toMatch(/\?raw=true.*Range/);
    const part = await fetch(`${g.url}/v1/interfaces/${uuid}/files/big.txt?raw=true`, { headers: { range: 'bytes=-3' } });
    expect([part.status, await part.text()]).toEqual([206, 'aaa']);
  });

  it('files: traversal, symlinks leading out and missing files are refused, in both answers', async () => {
    for (const raw of ['', '?raw=true']) {
      expect((await fetch(`${g.url}/v1/interfaces/${uuid}/files/escape${raw}`)).status).toBe(403);
      expect((await fetch(`${g.url}/v1/interfaces/${uuid}/files/..%2F..%2F..%2Fsecret.txt${raw}`)).status).toBe(403);
      expect((await fetch(`${g.url}/v1/interfaces/${uuid}/files/nested/..%2F..%2Finterface.json${raw}`)).status).toBe(403);
      expect((await fetch(`${g.url}/v1/interfaces/${uuid}/files/missing.txt${raw}`)).status).toBe(404);
      expect((await fetch(`${g.url}/v1/interfaces/${uuid}/files/nested${raw}`)).status).toBe(404);
      expect((await fetch(`${g.url}/v1/interfaces/nope/files/result.json${raw}`)).status).toBe(404);
    }
  });
});

describe('provenance and related', () => {
  it('links contexts, ancestors, runs and manifests; depth and rels bound the walk', async () => {
    const project = await tempProject({
      'ctx.py': 'from portico import Interface\n\nclass Ctx(Interface):\n    """A context."""\n    def __enter__(self):\n        pass\n    def __exit__(self, *a):\n        pass\n',
    });
    const g = await gateway({ project });
    const ancestor = (await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 1 }] })).body;
    const run = await runToEnd(g, { interfaces: [{ target: 'trainer', version: [{ epochs: 1 }], context: [{ target: 'ctx' }] }] });
    const derived = (await api(g, 'POST', '/v1/interfaces', { target: 'trainer', version: [{ epochs: 1 }], meta: { derived_from: ancestor.uuid } })).body;
    const root = run.interfaces[0]!;

    const graph = (await api(g, 'GET', `/v1/interfaces/${root}/provenance`)).body;
    const kinds = Object.fromEntries(graph.nodes.map((n: { uuid: string; kind: string }) => [n.uuid, n.kind]));
    expect(graph.root).toBe(root);
    expect(kinds[run.uuid]).toBe('execution');
    const rels = graph.links.map((l: { source: string; target: string; rel: string }) => `${kinds[l.source]}-${l.rel}->${kinds[l.target]}`).sort();
    expect(rels).toEqual(['execution-manifest->manifest', 'interface-context->interface', 'interface-runs->execution']);
    const manifest = graph.nodes.find((n: { kind: string }) => n.kind === 'manifest');
    expect(Object.keys(manifest.attributes.modules)).toEqual(expect.arrayContaining(['trainer', 'ctx']));
    expect(graph.truncated).toBe(false);

    expect((await api(g, 'GET', `/v1/interfaces/${root}/provenance?depth=1&rels=runs`)).body.nodes.map((n: { uuid: string }) => n.uuid).sort()).toEqual([root, run.uuid].sort());
    expect((await api(g, 'GET', `/v1/interfaces/${root}/provenance?depth=0`)).body.nodes).toHaveLength(1);
    expect((await api(g, 'GET', `/v1/interfaces/${root}/provenance?rels=nonsense`)).status).toBe(422);

    const up = (await api(g, 'GET', `/v1/interfaces/${derived.uuid}/provenance`)).body;
    expect(up.links).toEqual([{ source: ancestor.uuid, target: derived.uuid, rel: 'derivation' }]);

    const related = (await api(g, 'GET', `/v1/interfaces/${root}/related`)).body;
    expect(related.related.map((r: { rel: string }) => r.rel).sort()).toEqual(['context', 'runs']);
    expect((await api(g, 'GET', '/v1/interfaces/nope/related')).status).toBe(404);
  });
});

describe('executions socket', () => {
  it('attaches by uuid and receives output as it grows, events, status changes; calls status, output and cancel', async () => {
    const g = await gateway();
    const run = (await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ epochs: 4, delay: 0.15 }] }] })).body;
    const c = await Client.open(g.url, { path: '/v1/executions/ws' });
    const connected = await c.request({ type: 'connect', target: run.uuid, offset: 0 });
    expect(connected).toMatchObject({ type: 'connected', payload: { uuid: run.uuid } });
    await c.waitFor((f) => f.type === 'status' && f.payload.status === 'finished', 20_000);
    const output = c.frames.filter((f) => f.type === 'output').map((f) => f.payload.output).join('');
    expect(output.trim().split('\n')).toEqual(['epoch 1/4 loss=0.5000', 'epoch 2/4 loss=0.2500', 'epoch 3/4 loss=0.1250', 'epoch 4/4 loss=0.0625']);
    expect(c.frames.filter((f) => f.type === 'output').length).toBeGreaterThan(1); // it arrived as it grew
    expect(c.frames.filter((f) => f.type === 'event').map((f) => f.payload.payload.epoch)).toEqual([1, 2, 3, 4]);
    expect((await c.request({ type: 'call', method: 'status' })).payload.status).toBe('finished');
    expect((await c.request({ type: 'call', method: 'output', kwargs: { tail: 22 } })).payload.output).toBe('epoch 4/4 loss=0.0625\n');

    const long = (await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ epochs: 1, delay: 60 }] }] })).body;
    const d = await Client.open(g.url, { path: '/v1/executions/ws' });
    await d.connect(long.uuid);
    await d.waitFor((f) => f.type === 'status' && f.payload.status === 'running', 10_000).catch(() => undefined);
    expect((await d.request({ type: 'call', method: 'cancel' })).type).toBe('result');
    await d.waitFor((f) => f.type === 'status' && f.payload.status === 'interrupted', 10_000);

    const e = await Client.open(g.url, { path: '/v1/executions/ws' });
    expect((await e.request({ type: 'connect', target: 'nope' })).payload.code).toBe('not_found');
    expect((await e.request({ type: 'call', method: 'status' })).payload.code).toBe('not_connected');
    expect((await e.request({ type: 'call', method: 'explode' })).payload.code).toBe('invalid_frame');
  });
});
