/**
 * Clients written for the reference server read Portico's records: where the spec is silent,
 * each record carries the reference's field names and shapes (`../shared/reference/machinable-api.md`
 * §6–§11) beside Portico's own. Each shape is pinned with a real request to a real gateway.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, gateway, ROOT, runEnded, tempProject, waitForRun } from './helpers.js';

afterAll(cleanup);

const PYDANTIC = `
from typing import Literal, Optional

from pydantic import BaseModel, Field

from portico import Interface


class Stage(BaseModel):
    name: str
    epochs: int = Field(1, description="Passes over the data.")


class Optimizer(BaseModel):
    kind: Literal["sgd", "adam"] = "sgd"
    lr: float = 0.1


class Base(Interface):
    def version_zeta(self):
        """From the base class."""
        return {}


__interface__ = "Pipeline"


class Pipeline(Base):
    """A pipeline."""

    _widget_meta = {"height": 300}
    _esm = "export default { render({ el }) { el.textContent = 'x'; } }"

    class Config(BaseModel):
        stages: list[Stage] = Field(default_factory=list)
        optimizer: Optimizer = Optimizer()
        warmup: Optional[Optimizer] = None
        seed: int = Field(description="The random seed.")
        note: str | None = None

    def version_alpha(self, lr: float = 0.5):
        """Alpha."""
        return {"optimizer": {"lr": lr}}
`;

const DATACLASS = `
from dataclasses import dataclass, field
from typing import Literal, Optional

from portico import Interface


@dataclass
class Inner:
    depth: int = 2


class Plain(Interface):
    @dataclass
    class Config:
        mode: Literal["a", "b"] = field(default="a", metadata={"description": "Which way."})
        inner: Inner = field(default_factory=Inner)
        maybe: Optional[Inner] = None
        items: list[int] = field(default_factory=lambda: [1, 2])
`;

describe('ModuleSchema (GET /v1/project/{module})', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway({ project: await tempProject({ 'pipeline.py': PYDANTIC, 'plain.py': DATACLASS }) });
  });

  it('a pydantic Config gives config_fields as the reference reflects them: Python type strings, defaults, required, descriptions, nested fields', async () => {
    const res = await api(g, 'GET', '/v1/project/pipeline');
    expect(res.status).toBe(200);
    const fields = Object.fromEntries(res.body.config_fields.map((f: { name: string }) => [f.name, f]));
    expect(Object.keys(fields)).toEqual(['stages', 'optimizer', 'warmup', 'seed', 'note']);
    expect(fields.stages).toEqual({
      name: 'stages',
      type: 'list[pipeline.Stage]',
      default: [],
      required: false,
      description: null,
      fields: [
        { name: 'name', type: "<class 'str'>", default: null, required: true, description: null, fields: null },
        { name: 'epochs', type: "<class 'int'>", default: 1, required: false, description: 'Passes over the data.', fields: null },
      ],
    });
    expect(fields.optimizer).toMatchObject({ type: "<class 'pipeline.Optimizer'>", default: { kind: 'sgd', lr: 0.1 }, required: false });
    expect(fields.optimizer.fields[0]).toEqual({ name: 'kind', type: "typing.Literal['sgd', 'adam']", default: 'sgd', required: false, description: null, fields: null });
    expect(fields.warmup).toMatchObject({ type: 'typing.Optional[pipeline.Optimizer]', default: null, required: false });
    expect(fields.warmup.fields.map((f: { name: string }) => f.name)).toEqual(['kind', 'lr']);
    expect(fields.seed).toEqual({ name: 'seed', type: "<class 'int'>", default: null, required: true, description: 'The random seed.', fields: null });
    // The same text as the JSON Schema's.
    expect(res.body.config_schema.properties.seed.description).toBe('The random seed.');
    expect(fields.note).toMatchObject({ type: 'str | None', default: null, required: false, fields: null });
    // Portico's JSON Schema stays beside it.
    expect(res.body.config_schema.required).toEqual(['seed']);
  });

  it('a dataclass Config gives the same shape', async () => {
    const res = await api(g, 'GET', '/v1/project/plain');
    const fields = Object.fromEntries(res.body.config_fields.map((f: { name: string }) => [f.name, f]));
    expect(fields.mode).toEqual({ name: 'mode', type: "typing.Literal['a', 'b']", default: 'a', required: false, description: 'Which way.', fields: null });
    expect(fields.inner).toEqual({
      name: 'inner',
      type: "<class 'plain.Inner'>",
      default: { depth: 2 },
      required: false,
      description: null,
      fields: [{ name: 'depth', type: "<class 'int'>", default: 2, required: false, description: null, fields: null }],
    });
    expect(fields.maybe.fields).toEqual(fields.inner.fields);
    expect(fields.items).toEqual({ name: 'items', type: 'list[int]', default: [1, 2], required: false, description: null, fields: null });
  });

  it('versions are the expressions a client offers; version_methods describe them, inherited ones too, sorted by name', async () => {
    const res = await api(g, 'GET', '/v1/project/pipeline');
    expect(res.body.versions).toEqual(['~alpha', '~zeta']);
    expect(res.body.version_methods).toEqual([
      expect.objectContaining({ name: 'alpha', signature: '(lr: float = 0.5)', doc: 'Alpha.', source_line: 41 }),
      expect.objectContaining({ name: 'zeta', signature: '()', doc: 'From the base class.', source_line: 20 }),
    ]);
    // A version the schema offers resolves as offered.
    const resolved = await api(g, 'POST', '/v1/interfaces/resolve', { target: 'pipeline', version: [res.body.versions[0], { seed: 1 }] });
    expect(resolved.status).toBe(200);
    expect(resolved.body.config.optimizer).toEqual({ kind: 'sgd', lr: 0.5 });
  });

  it('the widget info carries the asset URLs and the meta; css_url is null without a stylesheet, and the URLs serve', async () => {
    const res = await api(g, 'GET', '/v1/project/pipeline');
    expect(res.body.widget).toEqual({ esm_url: '/v1/project/pipeline/widget/esm', css_url: null, meta: { height: 300 }, esm: true, css: false });
    const esm = await fetch(`${g.url}${res.body.widget.esm_url}`);
    expect(esm.status).toBe(200);
    expect(await esm.text()).toContain('render');
    expect((await api(g, 'GET', '/v1/project/plain')).body.widget).toBeNull();
    const counter = (await api(g, 'GET', '/v1/project/counter')).body.widget;
    expect(counter).toMatchObject({ esm_url: '/v1/project/counter/widget/esm', css_url: '/v1/project/counter/widget/css', meta: {} });
  });
});

describe('errors a reference client can print', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway({ project: await tempProject({ 'pipeline.py': PYDANTIC }), apiToken: 'secret' });
  });
  const auth = { Authorization: 'Bearer secret' };

  it('resolve of an unknown module, a bad version and a bad config each answer 400 with message and issues', async () => {
    const cases: Array<[unknown[], string, RegExp, string | null]> = [
      [[], 'nosuch', /nosuch/, null],
      [['fast'], 'counter', /~/, null],
      [[{ seed: 'one' }], 'pipeline', /seed|int/i, 'seed'],
      [[{ nope: 1, seed: 1 }], 'pipeline', /nope/, 'nope'],
    ];
    for (const [version, target, says, path] of cases) {
      const res = await api(g, 'POST', '/v1/interfaces/resolve', { target, version }, auth);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.detail.message).toMatch(says);
      expect(res.body.detail.issues.length).toBeGreaterThan(0);
      expect(res.body.detail.issues[0]).toEqual({ path, message: expect.any(String) });
      expect(res.body.message).toBe(res.body.detail.message);
    }
  });

  it('every error body has its code and a readable message at the top level; detail is that message but on 400 and 422', async () => {
    const unknown = await api(g, 'GET', '/v1/interfaces/0123456789abcdef01234567', undefined, auth);
    expect(unknown.status).toBe(404);
    // As FastAPI and the reference server send it: a client that shows `detail` shows the message.
    expect(unknown.body).toEqual({ detail: unknown.body.message, code: 'not_found', message: expect.stringContaining('0123456789abcdef01234567') });
    const invalid = await api(g, 'POST', '/v1/interfaces', { version: 'x' }, auth);
    expect(invalid.status).toBe(422);
    expect(Array.isArray(invalid.body.detail)).toBe(true);
    expect(invalid.body.message).toMatch(/^Invalid request: body\.target: /);
    const refused = await api(g, 'GET', '/v1/interfaces');
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ detail: refused.body.message, code: 'unauthorized', message: expect.any(String) });
  });
});

describe('failures of the call endpoint carry the structured detail, whatever their status', () => {
  const PROBE = `
from portico import Interface


class Probe(Interface):
    def hello(self):
        return "hi"

    def _secret(self):
        return "no"
`;
  const NARROW = `
from portico import Interface


class Narrow(Interface):
    __api_methods__ = ["one"]

    def one(self):
        return 1

    def two(self):
        return 2
`;
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway({ project: await tempProject({ 'probe.py': PROBE, 'narrow.py': NARROW }), apiToken: 'secret' });
  });
  const auth = { Authorization: 'Bearer secret' };

  it('an unknown, a private, an inherited and an unlisted method: 404 / 403 with detail.code and detail.message', async () => {
    const cases: Array<[string, string, number, string, RegExp]> = [
      ['probe', 'nope', 404, 'not_found', /nope/],
      ['probe', '_secret', 403, 'forbidden', /_secret/],
      ['probe', 'local_directory', 403, 'forbidden', /local_directory/],
      ['narrow', 'two', 403, 'forbidden', /two/],
    ];
    for (const [target, method, status, code, says] of cases) {
      const res = await api(g, 'POST', '/v1/interfaces/call', { target, method }, auth);
      expect([res.status, res.body.detail?.code], `${target}.${method}: ${JSON.stringify(res.body)}`).toEqual([status, code]);
      expect(res.body.detail.message).toMatch(says);
      // The top level keeps code and message too, as on every other error body.
      expect([res.body.code, res.body.message]).toEqual([code, res.body.detail.message]);
    }
    expect((await api(g, 'POST', '/v1/interfaces/call', { target: 'probe', method: 'hello' }, auth)).body).toEqual({ payload: 'hi' });
  });

  it('a refused credential and a wrong HTTP method on the call path are structured too; other paths keep the string', async () => {
    const refused = await api(g, 'POST', '/v1/interfaces/call', { target: 'probe', method: 'hello' });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ detail: { code: 'unauthorized', message: refused.body.message }, code: 'unauthorized', message: expect.any(String) });
    const wrongMethod = await api(g, 'PUT', '/v1/interfaces/call', {}, auth);
    expect([wrongMethod.status, wrongMethod.body.detail?.code]).toEqual([405, 'method_not_allowed']);
    const elsewhere = await api(g, 'GET', '/v1/interfaces/0123456789abcdef01234567', undefined, auth);
    expect(typeof elsewhere.body.detail).toBe('string');
  });

  it('/openapi.json documents the structured body for every error status of the call endpoint', async () => {
    const doc = (await api(g, 'GET', '/openapi.json')).body;
    const responses = doc.paths['/v1/interfaces/call'].post.responses as Record<string, { content?: Record<string, { schema: unknown }> }>;
    for (const [status, response] of Object.entries(responses)) {
      if (status.startsWith('2') || status === '422' || status === '431') continue;
      expect(response.content?.['application/json']?.schema, status).toEqual({ $ref: '#/components/schemas/BadRequestResponse' });
    }
  });
});

describe('GET /v1/protocol', () => {
  it('lists every frame once per direction it travels (widget_msg both ways) and the widget hooks among the interface hooks', async () => {
    const g = await gateway({ project: await tempProject() });
    const { body } = await api(g, 'GET', '/v1/protocol');
    const keys = body.ws_frames.map((f: { type: string; direction: string; endpoint: string }) => `${f.endpoint} ${f.direction} ${f.type}`);
    expect(new Set(keys).size).toBe(keys.length);
    // output is a call's printed output on the interfaces socket and a run's output.log on the executions socket
    expect(keys).toEqual(expect.arrayContaining(['/v1/interfaces/ws server_to_client output', '/v1/executions/ws server_to_client output']));
    expect(keys).toEqual(expect.arrayContaining(['/v1/interfaces/ws client_to_server widget_msg', '/v1/interfaces/ws server_to_client widget_msg', '/v1/interfaces/ws server_to_client widget_change']));
    expect(body.ws_frames.every((f: { summary: string }) => f.summary.length > 0)).toBe(true);
    const hooks = body.interface_hooks.map((h: { name: string }) => h.name);
    expect(hooks).toEqual(expect.arrayContaining(['read', 'emit', 'local_directory', 'widget_state', 'widget_update', 'widget_message']));
  });
});

describe('search items (POST /v1/interfaces/search)', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway({ project: await tempProject() });
  });

  async function runToEnd(version: Record<string, unknown>): Promise<{ uuid: string; interfaces: string[] }> {
    const { body } = await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [version] }] });
    await waitForRun(g, body.uuid, runEnded);
    return body;
  }

  it('carry id and created_at_ns beside uuid and created_at, and sort by created_at_ns as by created_at', async () => {
    const a = (await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 1 }] })).body;
    await new Promise((r) => setTimeout(r, 5));
    const b = (await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 2 }] })).body;
    const res = await api(g, 'POST', '/v1/interfaces/search', { module: 'counter', sort: [{ by: 'created_at_ns', direction: 'asc' }] });
    expect(res.status).toBe(200);
    expect(res.body.items.map((i: { id: string }) => i.id)).toEqual([a.uuid, b.uuid]);
    for (const item of res.body.items) {
      expect(item.id).toBe(item.uuid);
      expect(item.created_at_ns).toBe(Date.parse(item.created_at) * 1e6);
      expect(item).not.toHaveProperty('status');
      // What a plain search leaves out (it reads no runs): cached comes with include_status.
      expect(item).not.toHaveProperty('cached');
    }
  });

  it('kind is the record kind as the reference has it ("Interface"), the class is class_name; both filter, class_name sorts', async () => {
    await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 30 }] });
    await api(g, 'POST', '/v1/interfaces', { target: 'streamer', version: [] });
    const all = (await api(g, 'POST', '/v1/interfaces/search', { limit: 1000 })).body.items as Array<{ kind: string; class_name: string; module: string }>;
    expect(all.length).toBeGreaterThan(1);
    for (const item of all) expect(item.kind).toBe('Interface');
    expect(new Set(all.map((i) => `${i.module}:${i.class_name}`))).toEqual(new Set(['counter:Counter', 'streamer:Streamer', ...all.filter((i) => i.module === 'trainer').map(() => 'trainer:Trainer')]));
    const total = (request: object) => api(g, 'POST', '/v1/interfaces/search', { ...request, limit: 1 }).then((res) => [res.status, res.body.total, res.body.total_exact]);
    expect(await total({ kind: 'Interface' })).toEqual([200, all.length, true]);
    expect(await total({ kind: 'Execution' })).toEqual([200, 0, true]);
    expect(await total({ kind: 'Counter' })).toEqual([200, 0, true]);
    const counters = all.filter((i) => i.class_name === 'Counter').length;
    expect(await total({ class_name: 'Counter' })).toEqual([200, counters, true]);
    expect(await total({ filters: [{ path: 'class_name', op: 'eq', value: 'Counter' }] })).toEqual([200, counters, true]);
    expect(await total({ filters: [{ path: 'class_name', op: 'ne', value: 'Counter' }] })).toEqual([200, all.length - counters, true]);
    const sorted = (await api(g, 'POST', '/v1/interfaces/search', { sort: [{ by: 'class_name', direction: 'asc' }], limit: 1000 })).body.items.map((i: { class_name: string }) => i.class_name);
    expect(sorted).toEqual([...sorted].sort());
    expect((await api(g, 'POST', '/v1/interfaces/search', { filters: [{ path: 'class', op: 'eq', value: 'x' }] })).status).toBe(422);
  });

  it('include_status gives draft, running, cached and failed from the real runs, with their count and the newest run', async () => {
    const draft = (await api(g, 'POST', '/v1/interfaces', { target: 'trainer', version: [{ epochs: 1, delay: 0.01 }] })).body;
    const twice = await runToEnd({ epochs: 1 });
    const again = await runToEnd({ epochs: 1 });
    expect(again.interfaces).toEqual(twice.interfaces);
    const failed = await runToEnd({ epochs: 2, fail_at: 1 });
    const live = (await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ epochs: 1, delay: 30 }] }] })).body;
    try {
      const res = await api(g, 'POST', '/v1/interfaces/search', { module: 'trainer', include_status: true });
      const byId = Object.fromEntries(res.body.items.map((i: { id: string }) => [i.id, i]));
      expect(byId[draft.uuid]).toMatchObject({ status: 'draft', run_count: 0, execution_uuid: null });
      expect(byId[twice.interfaces[0]!]).toMatchObject({ status: 'cached', cached: true, run_count: 2, execution_uuid: again.uuid });
      expect(byId[failed.interfaces[0]!]).toMatchObject({ status: 'failed', cached: false, run_count: 1, execution_uuid: failed.uuid });
      expect(byId[live.interfaces[0]!]).toMatchObject({ status: 'running', cached: false, run_count: 1, execution_uuid: live.uuid });
      expect(byId[draft.uuid]).toMatchObject({ cached: false });
      // InterfaceInfo answers carry the same cached, computed when answered; the listing in one pass.
      for (const [uuid, cached] of [[draft.uuid, false], [twice.interfaces[0]!, true], [failed.interfaces[0]!, false], [live.interfaces[0]!, false]] as const) {
        expect((await api(g, 'GET', `/v1/interfaces/${uuid}`)).body.cached, uuid).toBe(cached);
      }
      const listed = Object.fromEntries((await api(g, 'GET', '/v1/interfaces')).body.map((i: { uuid: string; cached: boolean }) => [i.uuid, i.cached]));
      expect([listed[draft.uuid], listed[twice.interfaces[0]!], listed[failed.interfaces[0]!], listed[live.interfaces[0]!]]).toEqual([false, true, false, false]);
      expect((await api(g, 'POST', '/v1/interfaces', { target: 'trainer', version: [{ epochs: 1 }] })).body).toMatchObject({ uuid: twice.interfaces[0], cached: true });
    } finally {
      await api(g, 'POST', `/v1/executions/${live.uuid}/cancel`);
    }
  });
});

describe('widget hooks through POST /v1/interfaces/call', () => {
  it('widget_state, widget_update and widget_message answer as the WebSocket frames do; private names stay refused', async () => {
    const g = await gateway({
      project: await tempProject({
        'echoer.py': 'from portico import Interface\n\nclass Echoer(Interface):\n    def widget_message(self, content, buffers):\n        return {"echo": content}\n',
      }),
    });
    const call = (target: string, method: string, extra: Record<string, unknown> = {}) => api(g, 'POST', '/v1/interfaces/call', { target, method, ...extra });
    expect((await call('counter', 'reset')).body.payload).toBe(0);
    expect((await call('counter', 'widget_state')).body).toEqual({ payload: { count: 0, step: 1 } });
    expect((await call('counter', 'widget_update', { args: [{ count: 5 }] })).body).toEqual({ payload: { count: 5 } });
    expect((await call('counter', 'value')).body.payload).toBe(5);
    expect((await call('counter', 'widget_update', { kwargs: { changes: { count: 7 } } })).body.payload).toEqual({ count: 7 });
    const bad = await call('counter', 'widget_update', { args: ['seven'] });
    expect(bad.status).toBe(400);
    expect(bad.body.detail.code).toBe('invalid_argument');
    expect((await call('echoer', 'widget_message', { args: [{ hi: 1 }] })).body).toEqual({ payload: { echo: { hi: 1 } } });
    const readOnly = await call('echoer', 'widget_update', { args: [{ x: 1 }] });
    expect([readOnly.status, readOnly.body.code]).toEqual([409, 'read_only']);
    expect((await call('counter', '_private')).status).toBe(403);
  });
});

describe('data status, lifecycle, related and provenance', () => {
  it('carry the reference fields beside Portico\'s: available, mounted, local_uri, bytes_missing; cached; each neighbour\'s and node\'s version', async () => {
    const g = await gateway({ project: await tempProject() });
    const { body: run } = await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ epochs: 1 }], context: [{ target: 'counter', version: [{ start: 3 }] }] }] });
    await waitForRun(g, run.uuid, (info) => info.status === 'finished');
    const [iface] = run.interfaces;
    const data = (await api(g, 'GET', `/v1/interfaces/${iface}/data`)).body;
    expect(data).toMatchObject({ status: 'local', available: true, mounted: true, bytes_missing: false, local_uri: expect.stringContaining(iface) });
    const life = (await api(g, 'POST', '/v1/interfaces/lifecycle', { target: 'trainer', version: [{ epochs: 1 }], context: [{ target: 'counter', version: [{ start: 3 }] }] })).body;
    expect(life).toMatchObject({ status: 'cached', cached: true, execution_uuid: run.uuid });
    const draft = (await api(g, 'POST', '/v1/interfaces/lifecycle', { target: 'trainer', version: [{ epochs: 9 }] })).body;
    expect(draft).toMatchObject({ status: 'draft', cached: false });
    const related = (await api(g, 'GET', `/v1/interfaces/${iface}/related`)).body.related;
    const counter = related.find((r: { rel: string }) => r.rel === 'context');
    expect(counter).toMatchObject({ module: 'counter', version: [{ start: 3 }] });
    expect(related.find((r: { uuid: string }) => r.uuid === run.uuid)).toMatchObject({ version: [] });
    const graph = (await api(g, 'GET', `/v1/interfaces/${iface}/provenance`)).body;
    expect(graph.nodes.find((n: { uuid: string }) => n.uuid === iface)).toMatchObject({ kind: 'interface', version: [{ epochs: 1 }] });
    expect(graph.nodes.find((n: { uuid: string }) => n.uuid === run.uuid)).toMatchObject({ kind: 'execution', version: [] });
    await rmInterfaceDir(iface);
    expect((await api(g, 'GET', `/v1/interfaces/${iface}/data`)).body).toMatchObject({ status: 'evicted', available: false, mounted: false, local_uri: null, bytes_missing: true });

    async function rmInterfaceDir(uuid: string) {
      const { rm } = await import('node:fs/promises');
      await rm(`${g.gateway.projects.defaultDir}/.portico/interfaces/${uuid}`, { recursive: true, force: true });
    }
  });
});

describe('one file (GET /v1/interfaces/{uuid}/files/{path})', () => {
  it('answers as the reference: a .json file parsed, any other text as a JSON string; raw bytes when asked', async () => {
    const { mkdir, writeFile } = await import('node:fs/promises');
    const path = await import('node:path');
    const project = await tempProject();
    const g = await gateway({ project });
    const { uuid } = (await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 41 }] })).body;
    const dir = path.join(project, '.portico/interfaces', uuid);
    await mkdir(path.join(dir, 'out'), { recursive: true });
    await writeFile(path.join(dir, 'out/metrics.json'), '{"loss": 0.5, "steps": [1, 2]}\n');
    await writeFile(path.join(dir, 'out/log.txt'), 'line 1\nline 2\n');
    const parsed = await api(g, 'GET', `/v1/interfaces/${uuid}/files/out/metrics.json`);
    expect([parsed.status, parsed.headers.get('content-type'), parsed.body]).toEqual([200, 'application/json; charset=utf-8', { loss: 0.5, steps: [1, 2] }]);
    const text = await api(g, 'GET', `/v1/interfaces/${uuid}/files/out/log.txt`);
    expect([text.status, text.headers.get('content-type'), text.body]).toEqual([200, 'application/json; charset=utf-8', 'line 1\nline 2\n']);
    // The record file the store keeps beside the data is a .json file too.
    expect((await api(g, 'GET', `/v1/interfaces/${uuid}/files/interface.json`)).body).toMatchObject({ uuid, kind: 'Interface', class_name: 'Counter' });
    const raw = await fetch(`${g.url}/v1/interfaces/${uuid}/files/out/log.txt?raw=true`);
    expect([raw.headers.get('content-type'), await raw.text()]).toEqual(['text/plain; charset=utf-8', 'line 1\nline 2\n']);
    const accepted = await fetch(`${g.url}/v1/interfaces/${uuid}/files/out/metrics.json`, { headers: { accept: 'application/octet-stream' } });
    expect(await accepted.text()).toBe('{"loss": 0.5, "steps": [1, 2]}\n');
    const missing = await api(g, 'GET', `/v1/interfaces/${uuid}/files/out/none.json`);
    expect([missing.status, missing.body.code, missing.body.detail]).toEqual([404, 'not_found', "File 'out/none.json' not found"]);
  });
});

describe('InterfaceInfo', () => {
  it('kind is "Interface", the class name is class_name, and cached says whether its newest run finished', async () => {
    const g = await gateway({ project: await tempProject() });
    const made = (await api(g, 'POST', '/v1/interfaces', { target: 'trainer', version: [{ epochs: 1 }] })).body;
    expect(made).toMatchObject({ module: 'trainer', kind: 'Interface', class_name: 'Trainer', cached: false });
    const { body: run } = await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ epochs: 1 }] }] });
    await waitForRun(g, run.uuid, (info) => info.status === 'finished');
    expect((await api(g, 'GET', `/v1/interfaces/${made.uuid}`)).body).toMatchObject({ kind: 'Interface', class_name: 'Trainer', cached: true });
    expect((await api(g, 'PATCH', `/v1/interfaces/${made.uuid}/label`, { label: 'done' })).body).toMatchObject({ label: 'done', cached: true });
  });

  it('predicate is null when no context folded in; cli is a line that, run in a shell, gives back the same interface', async () => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const path = await import('node:path');
    const bin = path.join(ROOT, 'packages/server/bin/portico.js');
    const project = await tempProject();
    const g = await gateway({ project });
    const plain = (await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: ['~big(step=3)', { start: 2 }] })).body;
    expect(plain.predicate).toBeNull();
    expect(plain.cli).toBe("portico get counter '~big(step=3)' start=2");
    const named = (await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 5 }], uuid: 'my-own-id' })).body;
    expect(named.cli).toBe('portico get my-own-id');
    const { body: run } = await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ epochs: 1 }], context: [{ target: 'counter' }] }] });
    const scoped = (await api(g, 'GET', `/v1/interfaces/${run.interfaces[0]}`)).body;
    expect(scoped.predicate).toEqual({ context: [expect.any(String)] });
    expect(scoped.cli).toBe(`portico get ${scoped.uuid}`);
    for (const info of [plain, named, scoped]) {
      expect((await api(g, 'GET', `/v1/interfaces/${info.uuid}`)).body.cli).toBe(info.cli);
      const line = `${info.cli.replace(/^portico/, `node ${bin}`)} --url ${g.url}`;
      const { stdout } = await promisify(execFile)('bash', ['-c', line]);
      expect(JSON.parse(stdout).uuid, line).toBe(info.uuid);
    }
  });
});

describe('ExecutionInfo', () => {
  it('carries the reference fields beside Portico\'s: module, config, version, resources, parent_uuid, is_resumed, resumed_at, label', async () => {
    const g = await gateway({ project: await tempProject() });
    const { body: run } = await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ epochs: 1 }] }], resources: { cpus: 2 } });
    expect(run).toMatchObject({ module: 'portico.run', config: {}, version: [], resources: { cpus: 2 }, parent_uuid: run.interfaces[0], is_resumed: false, resumed_at: null, label: null });
    const listed = (await api(g, 'GET', '/v1/executions')).body.find((e: { uuid: string }) => e.uuid === run.uuid);
    expect(listed).toMatchObject({ resources: { cpus: 2 }, parent_uuid: run.interfaces[0] });
  });
});
