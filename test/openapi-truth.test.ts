/**
 * /openapi.json says what the gateway does: security as the gateway is configured (no credential
 * to check: none; public routes public), the bounds the server enforces, and the error bodies it
 * sends (a string `detail` beside `code` and `message`, the structured one on 400, the
 * HTTPValidationError on 422).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, gateway, tempProject } from './helpers.js';

afterAll(cleanup);

const TOKEN = 'truth-token';
type Operation = { security?: Array<Record<string, string[]>>; responses: Record<string, any>; parameters?: Array<{ name: string; in: string; schema: any }> };
type Doc = { security?: unknown; components: { securitySchemes?: Record<string, unknown>; schemas: Record<string, any> }; paths: Record<string, Record<string, Operation>> };

/** Every operation of the document, with a concrete path to call it on. */
function operations(doc: Doc): Array<{ method: string; template: string; url: string; op: Operation }> {
  const values: Record<string, string> = { uuid: 'x', path: 'x.py', module: 'counter', asset: 'esm' };
  return Object.entries(doc.paths).flatMap(([template, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ method, template, url: template.replace(/\{(\w+)\}/g, (_m, name: string) => values[name]!), op })),
  );
}

/** The requirement that applies to `op`: its own, else the document's. */
function requirement(doc: Doc, op: Operation): Array<Record<string, string[]>> {
  return op.security ?? (doc.security as Array<Record<string, string[]>> | undefined) ?? [];
}

const needsBearer = (doc: Doc, op: Operation) => requirement(doc, op).some((alternative) => 'bearer' in alternative);

describe('security as the gateway is configured', { timeout: 60_000 }, () => {
  it('no token and no OIDC issuer: no operation has a security requirement or a 401, and none answers 401', async () => {
    const g = await gateway({ project: await tempProject(), enableSourceApi: true, sourceToken: 'st' });
    const doc = (await api(g, 'GET', '/openapi.json')).body as Doc;
    expect(doc.security).toBeUndefined();
    expect(doc.components.securitySchemes?.bearer).toBeUndefined();
    for (const { method, template, url, op } of operations(doc)) {
      const what = `${method.toUpperCase()} ${template}`;
      expect(needsBearer(doc, op), what).toBe(false);
      expect(op.responses['401'], what).toBeUndefined();
      const res = await api(g, method.toUpperCase(), url, ['post', 'put', 'patch'].includes(method) ? {} : undefined);
      expect(res.status, what).not.toBe(401);
    }
  });

  it('with a token: every operation needs the bearer credential and answers 401 without it, but the public ones', async () => {
    const g = await gateway({ project: await tempProject(), apiToken: TOKEN, enableSourceApi: true, sourceToken: 'st' });
    const res = await api(g, 'GET', '/openapi.json');
    expect(res.status).toBe(200); // public itself
    const doc = res.body as Doc;
    expect(doc.security).toEqual([{ bearer: [] }]);
    expect(doc.components.securitySchemes?.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    const open: string[] = [];
    for (const { method, template, url, op } of operations(doc)) {
      const what = `${method.toUpperCase()} ${template}`;
      const answer = await api(g, method.toUpperCase(), url, ['post', 'put', 'patch'].includes(method) ? {} : undefined);
      if (needsBearer(doc, op)) {
        expect(op.responses['401'], what).toBeDefined();
        expect([answer.status, answer.headers.get('www-authenticate')], what).toEqual([401, 'Bearer']);
      } else {
        open.push(what);
        expect(op.security, what).toEqual([]);
        expect(op.responses['401'], what).toBeUndefined();
        expect(answer.status, what).not.toBe(401);
      }
    }
    expect(open).toEqual(['GET /v1/origin']);
  });

  it('an OIDC issuer alone asks for the bearer credential too', async () => {
    const g = await gateway({ project: await tempProject(), oidcIssuer: 'http://127.0.0.1:9/issuer', oidcAudience: 'portico' });
    const doc = (await api(g, 'GET', '/openapi.json')).body as Doc;
    expect(doc.security).toEqual([{ bearer: [] }]);
    expect((await api(g, 'GET', '/v1/health')).status).toBe(401);
  });

  it('source writes need the source token besides the bearer credential', async () => {
    const g = await gateway({ project: await tempProject(), apiToken: TOKEN, enableSourceApi: true, sourceToken: 'st' });
    const doc = (await api(g, 'GET', '/openapi.json')).body as Doc;
    expect(doc.components.securitySchemes?.sourceToken).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Service-Source-Token' });
    expect(doc.paths['/v1/source/{path}']!.put!.security).toEqual([{ bearer: [], sourceToken: [] }]);
    expect(doc.paths['/v1/source/{path}']!.get!.security).toBeUndefined();
    const refused = await api(g, 'PUT', '/v1/source/x.py', { content: '' }, { authorization: `Bearer ${TOKEN}` });
    expect([refused.status, refused.body.code]).toEqual([403, 'source_token_required']);
  });
});

describe('every bound the server enforces is in the schema', { timeout: 60_000 }, () => {
  const auth = { authorization: `Bearer ${TOKEN}` };
  let g: Awaited<ReturnType<typeof gateway>>;
  let doc: Doc;
  const param = (template: string, method: string, name: string) => doc.paths[template]![method]!.parameters!.find((p) => p.name === name)!.schema;

  beforeAll(async () => {
    g = await gateway({ project: await tempProject(), apiToken: TOKEN, enableSourceApi: true, sourceToken: 'st' });
    doc = (await api(g, 'GET', '/openapi.json')).body as Doc;
  });

  it('move needs from (or from_path)', async () => {
    expect(doc.components.schemas.SourceMoveRequest.anyOf).toEqual([{ required: ['from'] }, { required: ['from_path'] }]);
    const res = await api(g, 'POST', '/v1/source/move', { to: 'b.py' }, { ...auth, 'x-service-source-token': 'st' });
    expect([res.status, res.body.detail[0].loc]).toEqual([422, ['body', 'from']]);
  });

  it('a filter path is dotted segments: the pattern refuses what the server refuses', async () => {
    const pattern = new RegExp(doc.components.schemas.Filter.properties.path.pattern);
    const configPattern = new RegExp(doc.components.schemas.ConfigFilter.properties.path.pattern);
    for (const path of ['config..x', 'nope', 'label.x', '']) {
      expect(pattern.test(path), path).toBe(false);
      const res = await api(g, 'POST', '/v1/interfaces/search', { filters: [{ path }] }, auth);
      expect([res.status, res.body.detail[0].loc], path).toEqual([422, ['body', 'filters', 0, 'path']]);
    }
    expect(configPattern.test('stages[0].epochs')).toBe(true);
    expect(configPattern.test('a..b')).toBe(false);
    // The refusal still says what is wrong with the path.
    const unknown = await api(g, 'POST', '/v1/interfaces/search', { filters: [{ path: 'nope' }] }, auth);
    expect(unknown.body.detail[0].msg).toMatch(/Unknown record field "nope"/);
  });

  it('limit: 1..1000, decimal digits only', async () => {
    expect(param('/v1/interfaces', 'get', 'limit')).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000 });
    for (const limit of ['0', '1001', '1e2', '', '-1', '2.5']) {
      expect((await api(g, 'GET', `/v1/interfaces?limit=${limit}`, undefined, auth)).status, limit).toBe(422);
    }
    expect((await api(g, 'GET', '/v1/interfaces?limit=1000', undefined, auth)).status).toBe(200);
    expect(param('/v1/executions/{uuid}/output', 'get', 'offset')).toEqual(expect.objectContaining({ type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER }));
  });

  it('provenance rels: a comma-separated list of the edge labels', async () => {
    const created = await api(g, 'POST', '/v1/interfaces', { target: 'counter' }, auth);
    const pattern = new RegExp(param('/v1/interfaces/{uuid}/provenance', 'get', 'rels').pattern);
    for (const rels of ['runs', 'derivation, runs', '', 'context,manifest,']) {
      expect(pattern.test(rels), rels).toBe(true);
      expect((await api(g, 'GET', `/v1/interfaces/${created.body.uuid}/provenance?rels=${encodeURIComponent(rels)}`, undefined, auth)).status, rels).toBe(200);
    }
    for (const rels of ['bogus', 'runs;derivation']) {
      expect(pattern.test(rels), rels).toBe(false);
      expect((await api(g, 'GET', `/v1/interfaces/${created.body.uuid}/provenance?rels=${encodeURIComponent(rels)}`, undefined, auth)).status, rels).toBe(422);
    }
  });

  it('a client-chosen uuid names a folder: its pattern is the rule', async () => {
    const pattern = new RegExp(doc.components.schemas.CreateInterfaceRequest.properties.uuid.pattern);
    for (const uuid of ['..', 'a/b', 'x'.repeat(129)]) {
      expect(pattern.test(uuid), uuid).toBe(false);
      const res = await api(g, 'POST', '/v1/interfaces', { target: 'counter', uuid }, auth);
      expect([res.status, res.body.detail[0].loc], uuid).toEqual([422, ['body', 'uuid']]);
    }
    expect(pattern.test('my-run.v2')).toBe(true);
  });

  it('search: a cursor takes no offset, and the two archive flags agree', () => {
    const find = doc.components.schemas.FindRequest;
    expect(find.properties.offset).toMatchObject({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
    expect(JSON.stringify(find.allOf)).toContain('"cursor","offset"');
    expect(JSON.stringify(find.allOf)).toContain('"include_archived","include_hidden"');
  });

  it('every body can be refused for its size (413) or its nesting (400); every operation for its origin (403) or a shutdown (503)', () => {
    for (const [template, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const what = `${method.toUpperCase()} ${template}`;
        if ((op as { requestBody?: unknown }).requestBody) expect(Object.keys(op.responses), what).toEqual(expect.arrayContaining(['400', '413']));
        if (template !== '/v1/origin') expect(Object.keys(op.responses), what).toContain('403');
        expect(Object.keys(op.responses), what).toContain('503');
      }
    }
  });
});

describe('error bodies read well in other clients', { timeout: 60_000 }, () => {
  it('every status but 400: `detail` is the message, with `code` and `message` beside it; the document says so', async () => {
    const g = await gateway({ project: await tempProject(), apiToken: TOKEN });
    const auth = { authorization: `Bearer ${TOKEN}` };
    const missing = await api(g, 'GET', '/v1/interfaces/nope', undefined, auth);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: "Interface 'nope' not found", code: 'not_found', message: "Interface 'nope' not found" });
    const unauthorized = await api(g, 'GET', '/v1/health');
    expect(unauthorized.body).toEqual({ detail: 'Missing bearer token', code: 'unauthorized', message: 'Missing bearer token' });
    // 400: the structured detail the spec fixes, code and message beside it too.
    const unresolvable = await api(g, 'POST', '/v1/interfaces/resolve', { target: 'counter', version: [{ nope: 1 }] }, auth);
    expect(unresolvable.status).toBe(400);
    expect(unresolvable.body).toMatchObject({ detail: { code: 'invalid_config', message: expect.any(String), issues: [expect.objectContaining({ path: 'nope' })] }, code: 'invalid_config' });
    expect(unresolvable.body.message).toBe(unresolvable.body.detail.message);
    // 422: HTTPValidationError.
    const invalid = await api(g, 'POST', '/v1/interfaces', {}, auth);
    expect(invalid.status).toBe(422);
    expect(invalid.body).toMatchObject({ detail: [expect.objectContaining({ loc: ['body', 'target'] })], code: 'validation_error' });

    const doc = (await api(g, 'GET', '/openapi.json')).body as Doc;
    const get = doc.paths['/v1/interfaces/{uuid}']!.get!;
    expect(get.responses['404'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ErrorResponse' });
    expect(doc.components.schemas.ErrorResponse.properties.detail).toMatchObject({ type: 'string' });
    expect(doc.components.schemas.ErrorResponse.required).toEqual(['detail', 'code', 'message']);
    const resolve = doc.paths['/v1/interfaces/resolve']!.post!;
    expect(resolve.responses['400'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/BadRequestResponse' });
    expect(doc.components.schemas.BadRequestResponse.properties.detail).toEqual({ $ref: '#/components/schemas/ErrorDetail' });
  });
});
