/**
 * The one mapping of errors to HTTP: a PorticoError becomes its status with its body
 * (`PorticoError.toBody`: `{"detail": "<message>", "code", "message", …}`, or for a 400 and for
 * every failure of the call endpoint the structured `{"detail": {code, message, issues?,
 * exception?}, "code", "message"}`); a validation
 * failure (of the schema, or a `validation_error` from the service) becomes 422 with an
 * HTTPValidationError body; anything else is a generic 500 whose details (the stack) go to the
 * log only, at error level.
 */
import type Koa from 'koa';
import { PorticoError, toPorticoError } from '../errors.js';
import type { LogLine } from '../ops/logger.js';

/**
 * The paths whose every failure carries the structured detail, whatever its status: the call
 * endpoint, for which the spec promises "a structured detail, never a bare 500" (clients read
 * `detail.message`). Other paths keep it for a 400 only.
 */
const STRUCTURED_DETAIL_PATHS: ReadonlySet<string> = new Set(['/v1/interfaces/call']);

/** Whether every failure of `path` carries the structured detail (see STRUCTURED_DETAIL_PATHS). */
export function structuredDetail(path: string | undefined): boolean {
  return path !== undefined && STRUCTURED_DETAIL_PATHS.has(path);
}

/** A request that fails schema validation (rendered as 422 HTTPValidationError). */
export class ValidationFailure extends Error {
  constructor(readonly detail: Array<{ type: string; loc: Array<string | number>; msg: string; input?: unknown }>) {
    super('validation failed');
  }
}

/** A 422 body: the HTTPValidationError list, its code, and one readable line of it as `message`. */
function validationBody(detail: ValidationFailure['detail']): { detail: ValidationFailure['detail']; code: 'validation_error'; message: string } {
  const problems = detail.map((d) => `${d.loc.join('.')}: ${d.msg}`);
  return { detail, code: 'validation_error', message: `Invalid request: ${problems.join('; ')}` };
}

export function errorMiddleware(log: LogLine): Koa.Middleware {
  return async function handleErrors(ctx, next) {
    try {
      await next();
      if (ctx.body === undefined && ctx.status === 404) {
        throw new PorticoError('not_found', `No route for ${ctx.method} ${ctx.path}`);
      }
      if (ctx.body === undefined && ctx.status === 405) {
        throw new PorticoError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}`);
      }
    } catch (err) {
      if (err instanceof ValidationFailure) {
        ctx.status = 422;
        ctx.body = validationBody(err.detail);
        return;
      }
      if (!(err instanceof PorticoError)) {
        // The client gets a generic `internal`; the log gets what happened, with the request id the answer carries.
        const id = ctx.response.get('X-Request-Id');
        log(`${ctx.method} ${ctx.path} failed${id ? ` (request ${id})` : ''}: ${(err as Error)?.stack ?? String(err)}`, 'error');
      }
      const error = toPorticoError(err);
      // The client reads the message; the operator's version (hosts, paths) goes to the log only.
      if (error.internal) log(`${ctx.method} ${ctx.path}: ${error.code}: ${error.internal}`, 'warn');
      if (error.code === 'validation_error') {
        // A request the service found invalid (a malformed cursor, a bad filter path): every 422
        // has one shape, the HTTPValidationError the schema validation answers with.
        ctx.status = 422;
        const issues = error.issues?.length ? error.issues : [{ path: null, message: error.message }];
        ctx.body = validationBody(issues.map((i) => ({ type: 'value_error', loc: ['body', ...(i.path ? i.path.split('.') : [])], msg: i.message })));
        return;
      }
      ctx.status = error.status;
      ctx.body = error.toBody(structuredDetail(ctx.path));
      if (error.code === 'unauthorized') ctx.set('WWW-Authenticate', 'Bearer');
    }
  };
}
