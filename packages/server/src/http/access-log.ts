/**
 * One access line and the HTTP metrics per request: method, path (never the query string, which
 * may carry a project path), status, error code, duration, user and request id, recorded once the
 * response went out. The request id is the client's `X-Request-Id` when it is a plain token, else a
 * new one; the answer carries it.
 */
import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import type { Principal } from '../auth/credentials.js';
import { batchingChild, type Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

interface Access {
  line: { method: string; status: number } & Record<string, unknown>;
  seconds: number;
}

export function accessLog(logger: Logger, metrics: Metrics): Koa.Middleware {
  // The access line's keys are the fixed ones below, none of them a redacted path (ops/logger.ts)
  // nor an object a wildcard path could reach, so redaction can only cost here: it was the
  // largest allocation of a REST call in the gateway's heap profile. Same destination and level.
  // The lines of the requests that ended in one turn of the event loop go out in one write: a
  // synchronous write per line was 2.6% of a REST call's busy time with 16 clients.
  const access = batchingChild(logger, { redact: { paths: [] } });
  const ended: Access[] = [];
  // Koa sends the response once the middleware returns: the metrics and the log write wait until
  // it went out rather than delay it. The line's fields are read when the request ended.
  const record = () => {
    // Taken first: a write that throws must not leave the lines in place, or none would be scheduled again.
    for (const { line, seconds } of ended.splice(0)) {
      metrics.httpRequests.inc({ method: line.method, status: String(line.status) });
      metrics.httpDuration.observe({ method: line.method }, seconds);
      access.logger.info(line, 'http');
    }
    access.flush();
  };
  return async function logAccess(ctx, next) {
    const started = performance.now();
    const given = ctx.get('x-request-id');
    const id = REQUEST_ID.test(given) ? given : randomUUID();
    ctx.set('X-Request-Id', id);
    try {
      await next();
    } finally {
      const seconds = (performance.now() - started) / 1000;
      const body = ctx.body as { detail?: { code?: unknown } | unknown[] } | undefined;
      const detail = body && typeof body === 'object' && 'detail' in body ? body.detail : undefined;
      const code = Array.isArray(detail) ? 'validation_error' : typeof detail === 'object' && detail && 'code' in detail ? String(detail.code) : undefined;
      const principal = ctx.state.principal as Principal | undefined;
      const line = {
        req_id: id,
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        ...(code ? { code } : {}),
        duration_ms: Math.round(seconds * 1e5) / 100,
        user: principal?.subject ?? (ctx.get('x-service-user') || undefined),
        auth: principal?.kind,
      };
      if (ended.push({ line, seconds }) === 1) setImmediate(record);
    }
  };
}
