/**
 * /v1/source: the project's source files (opt-in with --enable-source-api). Reads need what every
 * route needs (Authorization when the gateway has a token); writes also need
 * X-Service-Source-Token. A gateway without the option mounts stand-ins that answer 404
 * `not_found` to every source request without reading its path or body.
 */
import type Koa from 'koa';
import {
  SourceFileContent,
  SourceListResponse,
  SourceMoveRequest,
  SourcePathParams,
  SourceWriteRequest,
  SourceWriteResponse,
} from '../../contract/source.js';
import type { Gateway } from '../../service/gateway.js';
import type { Preconditions, SourceService } from '../../service/source.js';
import { bindRequest } from '../bind.js';
import { route } from '../route.js';

export const SOURCE_TOKEN_HEADER = 'x-service-source-token';

const TAG = 'source';

/** An ETag as its header carries it: quoted, as RFC 9110 §8.8.3 asks (bodies carry it bare). */
function etagHeader(etag: string): string {
  return `"${etag}"`;
}

function preconditions(ctx: Koa.Context): Preconditions {
  return { ifMatch: ctx.get('if-match') || undefined, ifNoneMatch: ctx.get('if-none-match') || undefined };
}

export function sourceRoutes(gateway: Gateway) {
  const source = gateway.source;
  if (!gateway.options.enableSourceApi) return disabledRoutes(source);

  /** Writes check the source token first (a malformed body is refused by validation before). */
  const authorize = (ctx: Koa.Context) => source.authorizeWrite(ctx.get(SOURCE_TOKEN_HEADER) || undefined);

  return [
    route({
      method: 'get',
      path: '/v1/source',
      tag: TAG,
      summary: 'List source files',
      description:
        'Editable source files under the project directory (.py, .js, .mjs, .css, .json, .md, .txt), sorted by path. Hidden folders (.portico, .git, …), __pycache__, node_modules and Python environments are never listed; symlinked folders are not followed.',
      response: SourceListResponse,
      errors: [401, 403, 404],
      handler: async (ctx) => source.list(await bindRequest(ctx, gateway)),
    }),
    route({
      method: 'post',
      path: '/v1/source/move',
      tag: TAG,
      summary: 'Move a source file',
      description:
        'Renames `from` to `to` atomically within the project (missing folders are created; a folder left empty is removed), e.g. `foo.py` → `foo/__init__.py` and back. 409 when `to` exists; If-Match applies to `from`. Needs X-Service-Source-Token. The modules of both names are invalidated before the answer.',
      body: SourceMoveRequest,
      response: SourceWriteResponse,
      errors: [401, 403, 404, 409, 412, 415],
      handler: async (ctx, { body }) => {
        authorize(ctx);
        const moved = await source.move(await bindRequest(ctx, gateway), body.from ?? body.from_path!, body.to, preconditions(ctx));
        ctx.set('ETag', etagHeader(moved.etag));
        return moved;
      },
    }),
    route({
      method: 'get',
      path: '/v1/source/{path}',
      koaPath: '/v1/source/*path',
      tag: TAG,
      summary: 'Read a source file',
      description: 'The content as UTF-8 text with its strong ETag (quoted MD5 of the bytes), also in the ETag header. If-None-Match with that tag answers 304.',
      params: SourcePathParams,
      response: SourceFileContent,
      errors: [401, 403, 404, 413, 415],
      handler: async (ctx, { params }) => {
        const file = await source.read(await bindRequest(ctx, gateway), params.path);
        ctx.set('ETag', etagHeader(file.etag));
        ctx.set('Cache-Control', 'no-cache');
        if (source.notModified(ctx.get('if-none-match') || undefined, file.etag)) {
          ctx.status = 304;
          ctx.body = null;
          return undefined;
        }
        return file;
      },
    }),
    route({
      method: 'put',
      path: '/v1/source/{path}',
      koaPath: '/v1/source/*path',
      tag: TAG,
      summary: 'Create or overwrite a source file',
      description:
        'Writes the whole file atomically: 201 when it was created, 200 when replaced, with the new ETag. If-Match (a quoted tag, or *) answers 412 unless the file exists with that tag; If-None-Match: * answers 412 if the file exists (create only). Of concurrent writes with the same If-Match exactly one wins. Needs X-Service-Source-Token. The module is re-imported, its live instances evicted and attached widgets reloaded before the answer.',
      params: SourcePathParams,
      body: SourceWriteRequest,
      response: SourceWriteResponse,
      errors: [401, 403, 409, 412, 413, 415],
      handler: async (ctx, { params, body }) => {
        authorize(ctx);
        const written = await source.write(await bindRequest(ctx, gateway), params.path, body.content, preconditions(ctx));
        ctx.status = written.created ? 201 : 200;
        ctx.set('ETag', etagHeader(written.etag));
        return written;
      },
    }),
    route({
      method: 'delete',
      path: '/v1/source/{path}',
      koaPath: '/v1/source/*path',
      tag: TAG,
      summary: 'Delete a source file',
      description: 'Removes the file (a folder left empty goes too); If-Match answers 412 on a stale tag. Needs X-Service-Source-Token. The module is invalidated before the answer.',
      params: SourcePathParams,
      response: null,
      errors: [401, 403, 404, 409, 412, 415],
      handler: async (ctx, { params }) => {
        authorize(ctx);
        await source.remove(await bindRequest(ctx, gateway), params.path, preconditions(ctx));
      },
    }),
  ];
}

/** Same paths and methods, each answering 404 before reading anything. */
function disabledRoutes(source: SourceService) {
  const refuse = async (): Promise<never> => {
    source.ensureEnabled();
    throw new Error('unreachable: the source API is disabled');
  };
  // Answered with a 404 that says how to enable them, and left out of the docs of this gateway.
  const disabled = { description: 'Disabled on this gateway (start it with --enable-source-api): answers 404 not_found.', undocumented: true } as const;
  return [
    route({ method: 'get', path: '/v1/source', tag: TAG, summary: 'List source files', ...disabled, response: null, errors: [404], handler: refuse }),
    route({ method: 'post', path: '/v1/source/move', tag: TAG, summary: 'Move a source file', ...disabled, response: null, errors: [404], handler: refuse }),
    ...(['get', 'put', 'delete'] as const).map((method) =>
      route({ method, path: '/v1/source/{path}', koaPath: '/v1/source/*path', tag: TAG, summary: 'Source file', ...disabled, response: null, errors: [404], handler: refuse }),
    ),
  ];
}
