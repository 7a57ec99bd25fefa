/**
 * One access line and the HTTP metrics per answer: method, path (never the query string, which
 * may carry a project path), status, error code, duration, user, request id and the client's
 * address (behind a trusted proxy, the one it forwarded for: http/forwarded.ts). The line is
 * written once the answer went out, with the status the client got: a request answered outside
 * the routes has its line too (one still in flight at the drain deadline, a request Node's HTTP
 * parser refused, CONNECT), and a client that closed the connection before any answer is 499. The
 * request id is the client's `X-Request-Id` when it is a plain token, else a new one; the answer
 * carries it.
 */
import { randomUUID } from 'node:crypto';
import { METHODS, type IncomingMessage, type ServerResponse } from 'node:http';
import type Koa from 'koa';
import type { Principal } from '../auth/credentials.js';
import type { PorticoError } from '../errors.js';
import { batchingChild, type Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';
import { structuredDetail } from './errors.js';
import { clientView, trustedProxies } from './forwarded.js';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;
const KNOWN_METHODS = new Set(METHODS);
/** The status of a request whose client closed the connection before any answer (nginx's). */
const CLIENT_CLOSED = 499;

interface Access {
  line: { method: string; status: number } & Record<string, unknown>;
  seconds: number;
}

/** A request the routes are handling. */
interface Entry {
  ctx: Koa.Context;
  id: string;
  started: number;
  /** Read when the request came: a closed socket no longer knows its peer. */
  client: string | undefined;
  /** The status and error code of the answer the routes made (or cutOff gave). */
  status?: number;
  code?: string | undefined;
  /** Answered by cutOff: what the route does later is neither sent nor logged. */
  cut?: true;
}

export interface AccessLog {
  /** The Koa middleware: request id, and the line once the answer went out. */
  middleware: Koa.Middleware;
  /**
   * Answers `error` (a JSON error body, `Connection: close`, `headers` besides) to a request the
   * routes have not answered yet, and logs that as its answer: what the route answers later is
   * neither sent nor logged. False, and nothing done, when its answer has begun already.
   */
  cutOff(res: ServerResponse, error: PorticoError, headers?: Record<string, string>): boolean;
  /** Logs an answer written straight to a connection, never a Koa request (see http/refusals.ts); returns its request id. */
  refused(request: { method?: string | undefined; path?: string | undefined; headers?: IncomingMessage['headers']; client?: string | undefined }, error: PorticoError): string;
}

/** The code of an error body (every one carries it at its top level, http/errors.ts). */
function codeOf(body: unknown): string | undefined {
  if (!body || typeof body !== 'object' || !('detail' in body)) return undefined;
  const { code } = body as { code?: unknown };
  return typeof code === 'string' ? code : undefined;
}

function requestId(given: string | string[] | undefined): string {
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** `trusted`: the reverse proxies whose X-Forwarded-For names the client (GatewayOptions.trustedProxies). */
export function accessLog(logger: Logger, metrics: Metrics, trusted: readonly string[] = [], lines = true): AccessLog {
  const proxies = trustedProxies(trusted);
  // The access line's keys are the fixed ones below, none of them a redacted path (ops/logger.ts)
  // nor an object a wildcard path could reach, so redaction can only cost here: it was the
  // largest allocation of a REST call in the gateway's heap profile. Same destination and level.
  // The lines of the requests that ended in one turn of the event loop go out in one write: a
  // synchronous write per line showed in a REST call's CPU profile with 16 clients.
  const access = batchingChild(logger, { redact: { paths: [] } });
  const ended: Access[] = [];
  const entries = new WeakMap<ServerResponse, Entry>();
  // The metrics and the log write wait until the answer went out rather than delay it.
  const record = () => {
    // Taken first: a write that throws must not leave the lines in place, or none would be scheduled again.
    for (const { line, seconds } of ended.splice(0)) {
      // A method HTTP does not know (a refused request's) is one label, not one each.
      const method = KNOWN_METHODS.has(line.method) ? line.method : '(unknown)';
      metrics.httpRequests.inc({ method, status: String(line.status) });
      metrics.httpDuration.observe({ method }, seconds);
      if (lines) access.logger.info(line, 'http');
    }
    access.flush();
  };
  const push = (entry: Access) => {
    if (ended.push(entry) === 1) setImmediate(record);
  };

  /** The request's line, once its response closed: the status is the one that went out. */
  const finished = (entry: Entry) => {
    const { ctx } = entry;
    const seconds = (performance.now() - entry.started) / 1000;
    const sent = ctx.res.headersSent;
    const status = sent ? ctx.res.statusCode : CLIENT_CLOSED;
    const code = !sent ? 'cancelled' : status === entry.status ? entry.code : undefined;
    const principal = ctx.state.principal as Principal | undefined;
    const line = {
      req_id: entry.id,
      client: entry.client,
      method: ctx.method,
      path: ctx.path,
      status,
      ...(code ? { code } : {}),
      duration_ms: Math.round(seconds * 1e5) / 100,
      user: principal?.subject ?? (ctx.get('x-service-user') || undefined),
      auth: principal?.kind,
    };
    push({ line, seconds });
  };

  const refused: AccessLog['refused'] = (request, error) => {
    const user = request.headers?.['x-service-user'];
    const line = {
      req_id: requestId(request.headers?.['x-request-id']),
      ...(request.client ? { client: request.client } : {}),
      method: request.method ?? '(unknown)',
      ...(request.path ? { path: request.path } : {}),
      status: error.status,
      code: error.code,
      duration_ms: 0,
      user: typeof user === 'string' && user ? user : undefined,
    };
    push({ line, seconds: 0 });
    return line.req_id;
  };

  return {
    refused,
    middleware: async function logAccess(ctx, next) {
      const id = requestId(ctx.get('x-request-id'));
      ctx.set('X-Request-Id', id);
      const entry: Entry = { ctx, id, started: performance.now(), client: clientView(ctx.req, proxies).client };
      entries.set(ctx.res, entry);
      ctx.res.once('close', () => finished(entry));
      try {
        await next();
      } finally {
        if (!entry.cut) {
          entry.status = ctx.status;
          entry.code = codeOf(ctx.body);
        }
      }
    },
    cutOff(res, error, headers = {}) {
      if (res.headersSent || res.writableEnded || res.destroyed) return false;
      const entry = entries.get(res);
      if (entry) Object.assign(entry, { cut: true, status: error.status, code: error.code });
      else refused({ method: res.req.method, path: res.req.url?.split('?')[0], headers: res.req.headers, client: clientView(res.req, proxies).client }, error);
      const body = JSON.stringify(error.toBody(structuredDetail(res.req.url?.split('?')[0])));
      res.writeHead(error.status, { ...headers, 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)), connection: 'close' });
      res.end(body);
      // What the client still sends is read and dropped, so that it reads this answer, not a reset.
      res.req.resume();
      return true;
    },
  };
}
