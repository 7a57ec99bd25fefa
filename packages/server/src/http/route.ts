/**
 * One declaration per REST route: the same zod schemas validate the request (422 on failure),
 * type the handler's input and describe the route in /openapi.json.
 */
import type Router from '@koa/router';
import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type Koa from 'koa';
import { BadRequestResponse, ErrorResponse, HTTPValidationError } from '../contract/common.js';
import { LIMITS } from '../config/constants.js';
import type { z } from '../contract/zod.js';
import { PorticoError } from '../errors.js';
import { readJson } from './body.js';
import { structuredDetail, ValidationFailure } from './errors.js';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type AnyObject = z.ZodObject<z.ZodRawShape>;

export interface RouteSpec<B extends z.ZodType | undefined, Q extends AnyObject | undefined, P extends AnyObject | undefined> {
  method: Method;
  /** OpenAPI-style path: `/v1/interfaces/{uuid}`. */
  path: string;
  /** The router's path when it differs (a parameter spanning several segments: `*path`). */
  koaPath?: string;
  tag: string;
  summary: string;
  description?: string;
  body?: B;
  /** The body may be left out entirely (no Content-Length, or 0): it is then validated as `{}`. */
  bodyOptional?: boolean;
  query?: Q;
  params?: P;
  /** The 200 body; null for 204 No Content. */
  response: z.ZodType | null;
  /** The 200 body's media types for the docs (default application/json). */
  responseType?: string | string[];
  /** Other media types the 200 may have instead, each with its own schema (a call's streamed lines), for the docs. */
  alsoResponds?: Record<string, z.ZodType>;
  /** Statuses besides 200/422 this route answers, for the docs. */
  errors?: number[];
  /** Answered but left out of /openapi.json and /docs (a feature this gateway has switched off, or a route only gateways use). */
  undocumented?: true;
  handler: (
    ctx: Koa.Context,
    input: {
      body: B extends z.ZodType ? z.infer<B> : undefined;
      query: Q extends AnyObject ? z.infer<Q> : undefined;
      params: P extends AnyObject ? z.infer<P> : undefined;
    },
  ) => Promise<unknown>;
}

/** Declares a route (an identity function that keeps the input types). */
export function route<B extends z.ZodType | undefined = undefined, Q extends AnyObject | undefined = undefined, P extends AnyObject | undefined = undefined>(
  spec: RouteSpec<B, Q, P>,
): RouteSpec<B, Q, P> {
  return spec;
}

type AnyRoute = RouteSpec<z.ZodType | undefined, AnyObject | undefined, AnyObject | undefined>;

function parse(schema: z.ZodType, value: unknown, where: 'body' | 'query' | 'path'): unknown {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new ValidationFailure(
    result.error.issues.map((issue) => ({
      type: issue.code,
      loc: [where, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))],
      msg: issue.message,
      input: issue.path.reduce<unknown>((v, key) => (v && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[key] : undefined), value),
    })),
  );
}

/**
 * Dispatches requests for routes without path parameters straight to their handler, from a map of
 * `METHOD path`, before `router.routes()`. The router tests every route's regular expression in
 * turn, reads `ctx.host` and composes a middleware chain per request, which in the gateway's CPU
 * profile of REST calls cost more than Koa's own code.
 * A route is taken here only where the router would run the very same handler first for that
 * exact path (nothing registered before it matches too), so answers are the router's; every
 * other request (parameters, another spelling of a path such as a trailing slash or other case,
 * a method the path lacks) goes on to the router unchanged. Built once every route is mounted.
 */
export function exactRoutes(router: Router): Koa.Middleware {
  const handlers = new Map<string, Koa.Middleware>();
  for (const layer of router.stack) {
    const [handler, ...more] = layer.stack;
    if (typeof layer.path !== 'string' || layer.paramNames.length > 0 || !handler || more.length > 0 || !layer.match(layer.path)) continue;
    for (const method of layer.methods) {
      const key = `${method} ${layer.path}`;
      if (!handlers.has(key) && router.match(layer.path, method).pathAndMethod[0] === layer) handlers.set(key, handler as Koa.Middleware);
    }
  }
  return function exactRoute(ctx, next) {
    const handler = handlers.get(`${ctx.method} ${ctx.path}`);
    if (!handler) return next();
    ctx.params = {};
    return handler(ctx, next);
  };
}

/**
 * After the routes, for a request none of them took: a path that exists answers a method it lacks
 * (PATCH, TRACE, PROPFIND, any method Node's parser lets through) with 405 `method_not_allowed`
 * and `Allow` listing the methods it has (RFC 9110 §15.5.6), and OPTIONS with 200 and that
 * `Allow`. A path that does not exist goes on to the 404 (http/errors.ts), whatever the method.
 */
export function allowedMethods(router: Router): Koa.Middleware {
  return async function answerAllowedMethods(ctx, next) {
    await next();
    if (ctx.body !== undefined || ctx.status !== 404) return;
    // The resource is the most literal path that matches, as /openapi.json has it: /v1/interfaces/call
    // is POST only, though GET /v1/interfaces/{uuid} would take it too.
    const layers = router.match(ctx.path, ctx.method).path.filter((layer) => layer.methods.length > 0);
    const fewest = Math.min(...layers.map((layer) => layer.paramNames.length));
    const methods = new Set<string>();
    for (const layer of layers) if (layer.paramNames.length === fewest) for (const method of layer.methods) methods.add(method);
    if (methods.size === 0 || methods.has(ctx.method)) return;
    methods.add('OPTIONS');
    ctx.set('Allow', [...methods].join(', '));
    if (ctx.method === 'OPTIONS') {
      ctx.status = 200;
      ctx.body = '';
      return;
    }
    throw new PorticoError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; it allows ${[...methods].join(', ')}`);
  };
}

/** The Content-Type Koa gives an object body (`ctx.type = 'json'`). */
const JSON_TYPE = 'application/json; charset=utf-8';

/** An answer Koa would send as JSON: a plain object or an array (not a Buffer, a stream or a Blob). */
function isPlainJson(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null || Array.isArray(value);
}

/** Mounts routes on the router and registers them in the OpenAPI registry. */
export function mountRoutes(router: Router, registry: OpenAPIRegistry, routes: AnyRoute[]): void {
  for (const spec of routes) {
    const koaPath = spec.koaPath ?? spec.path.replace(/\{(\w+)\}/g, ':$1');
    router[spec.method](koaPath, async function handleRoute(ctx: Koa.Context) {
      const params = spec.params ? parse(spec.params, ctx.params, 'path') : undefined;
      const query = spec.query ? parse(spec.query, ctx.query, 'query') : undefined;
      const absent = spec.bodyOptional && !ctx.get('transfer-encoding') && !Number(ctx.get('content-length') || 0);
      const body = spec.body ? parse(spec.body, absent ? {} : await readJson(ctx), 'body') : undefined;
      const result = await spec.handler(ctx, { body, query, params } as never);
      // A handler that set the response itself (a stream, an owner's answer relayed) keeps it.
      if (ctx.body !== undefined) return;
      if (spec.response === null) {
        ctx.status = 204;
        ctx.body = null;
      } else {
        // A plain JSON answer: its text and type set once, here, as Koa and serializeJson (http/app.ts)
        // would set them after two passes through Koa's body setter and a media-type lookup per request.
        // A value JSON cannot carry throws here, inside the error middleware, as it would there.
        if (isPlainJson(result) && !ctx.response.get('Content-Type')) {
          ctx.response.set('Content-Type', JSON_TYPE);
          ctx.body = JSON.stringify(result);
        } else {
          ctx.body = result;
        }
      }
    });

    if (spec.undocumented) continue;
    const responses: Record<number, { description: string; content?: Record<string, { schema: z.ZodType }> }> = {};
    responses[spec.response === null ? 204 : 200] =
      spec.response === null
        ? { description: 'No content' }
        : {
            description: 'Success',
            content: {
              ...Object.fromEntries([spec.responseType ?? 'application/json'].flat().map((type) => [type, { schema: spec.response! }])),
              ...Object.fromEntries(Object.entries(spec.alsoResponds ?? {}).map(([type, schema]) => [type, { schema }])),
            },
          };
    // The body of each error status: the structured detail on a 400, and on every status of a path that always has it.
    const errorSchema = (status: number) => (status === 400 || structuredDetail(spec.path) ? BadRequestResponse : ErrorResponse);
    for (const status of spec.errors ?? []) {
      responses[status] = { description: STATUS_TEXT[status] ?? 'Error', content: { 'application/json': { schema: errorSchema(status) } } };
    }
    if (spec.body || spec.query || spec.params) {
      responses[422] = { description: 'Validation error', content: { 'application/json': { schema: HTTPValidationError } } };
    }
    if (spec.body) {
      // What reading any JSON body may answer (http/body.ts), before the schema sees it.
      responses[400] ??= { description: `JSON nested deeper than ${LIMITS.jsonDepthMax} levels (invalid_argument)`, content: { 'application/json': { schema: BadRequestResponse } } };
      responses[413] ??= { description: `Body over ${LIMITS.maxBodyBytes} bytes (payload_too_large)`, content: { 'application/json': { schema: errorSchema(413) } } };
    }
    // Answered before any route (http/refusals.ts), for a request line or headers over Node's limit.
    responses[431] = { description: 'Request line or header fields too large (over 16 KiB); the connection closes', content: { 'application/json': { schema: ErrorResponse } } };
    registry.registerPath({
      method: spec.method,
      path: spec.path,
      tags: [spec.tag],
      summary: spec.summary,
      ...(spec.description ? { description: spec.description } : {}),
      request: {
        ...(spec.params ? { params: spec.params } : {}),
        ...(spec.query ? { query: spec.query } : {}),
        ...(spec.body ? { body: { required: !spec.bodyOptional, content: { 'application/json': { schema: spec.body } } } } : {}),
      },
      responses,
    });
  }
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request (structured detail)',
  401: 'Missing or invalid bearer credential',
  403: 'Forbidden',
  404: 'Not found',
  406: 'No JSON answer for this file: ask for its bytes (file_needs_raw)',
  409: 'Conflict',
  412: 'Precondition failed',
  413: 'Payload too large',
  502: 'Worker crashed (worker_crashed), or the gateway owning the live instance went away (owner_lost)',
  503: 'Unavailable: the Python worker (worker_unavailable) or the index database (store_unavailable)',
  504: 'Call timed out',
};
