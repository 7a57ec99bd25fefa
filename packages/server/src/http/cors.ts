/**
 * Cross-origin access for browsers on the allowlist (`--allow-origins`, empty by default). The
 * gateway's own origin needs none of this. Preflights are answered here, before authentication:
 * a browser never sends credentials with a preflight, so it must not be refused for lacking them.
 * Origins off the list were already refused by the origin check that runs first.
 */
import type Koa from 'koa';

const ALLOW_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS';
const ALLOW_HEADERS = [
  'Authorization',
  'Content-Type',
  'If-Match',
  'If-None-Match',
  'Range',
  'X-Service-Project',
  'X-Service-User',
  'X-Service-Python',
  'X-Service-Source-Token',
].join(', ');
/** Response headers a cross-origin page may read (ETags and the stylesheet link of a widget among them). */
const EXPOSE_HEADERS = 'ETag, Link, WWW-Authenticate, Content-Range, Accept-Ranges, Content-Disposition';
const PREFLIGHT_MAX_AGE_S = 600;

export function corsMiddleware(allowlist: readonly string[]): Koa.Middleware {
  return function cors(ctx, next) {
    const origin = ctx.get('origin');
    if (!origin || !(allowlist.includes(origin) || allowlist.includes('*'))) return next();
    ctx.vary('Origin');
    ctx.set('Access-Control-Allow-Origin', origin);
    ctx.set('Access-Control-Expose-Headers', EXPOSE_HEADERS);
    if (ctx.method === 'OPTIONS' && ctx.get('access-control-request-method')) {
      ctx.set('Access-Control-Allow-Methods', ALLOW_METHODS);
      ctx.set('Access-Control-Allow-Headers', ALLOW_HEADERS);
      ctx.set('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_S));
      ctx.status = 204;
      return Promise.resolve();
    }
    return next();
  };
}
