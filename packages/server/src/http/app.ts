/**
 * The Koa application: error mapping, origin policy, CORS (preflights before authentication),
 * authentication, then the routes. Every
 * route is declared once (http/route.ts), so /openapi.json is generated from the same schemas
 * that validate requests.
 */
import { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import Router from '@koa/router';
import Koa from 'koa';
import { bearerFromHeader, peerOf, type Authenticator } from '../auth/credentials.js';
import { originAllowed, originRefusal } from '../auth/origin.js';
import { PorticoError } from '../errors.js';
import type { LogLine } from '../ops/logger.js';
import type { Gateway } from '../service/gateway.js';
import type { AccessLog } from './access-log.js';
import { corsMiddleware } from './cors.js';
import { acceptsAnyOrigin, isPublicPath, mountDocs, openApiDocument } from './docs.js';
import { errorMiddleware } from './errors.js';
import { clientView, trustedProxies } from './forwarded.js';
import { allowedMethods, exactRoutes, mountRoutes } from './route.js';
import { interfaceRoutes } from './routes/interfaces.js';
import { dataRoutes } from './routes/data.js';
import { executionRoutes } from './routes/executions.js';
import { metaRoutes } from './routes/meta.js';
import { projectRoutes } from './routes/project.js';
import { sourceRoutes } from './routes/source.js';
import { authRoutes } from './routes/auth.js';
import { peerRoutes } from './routes/peers.js';
import { projectsRoutes } from './routes/projects.js';
import { pythonRoutes } from './routes/python.js';
import { isStaticPath, mountStatic } from './static.js';

/** What the server around the app hands it: the access log, and whether the gateway is stopping. */
export interface AppServer {
  access: AccessLog;
  stopping: () => boolean;
}

export function createApp(gateway: Gateway, auth: Authenticator, log: LogLine, server: AppServer): Koa {
  const app = new Koa();
  app.proxy = false;
  const router = new Router();
  const registry = new OpenAPIRegistry();
  mountRoutes(
    router,
    registry,
    [
      ...metaRoutes(gateway),
      ...interfaceRoutes(gateway),
      ...executionRoutes(gateway),
      ...dataRoutes(gateway),
      ...projectRoutes(gateway),
      ...sourceRoutes(gateway),
      ...projectsRoutes(gateway),
      ...pythonRoutes(gateway),
      ...peerRoutes(gateway),
      ...authRoutes(auth),
    ] as never,
  );
  mountDocs(router, openApiDocument(registry, { authRequired: auth.required }));

  mountStatic(router);

  app.use(server.access.middleware);
  app.use(errorMiddleware(log));
  app.use(async function serializeJson(ctx, next) {
    await next();
    // Written here rather than by Koa once the middleware returned: a body JSON cannot hold (a
    // result nested past the stack, say) is then a 500 `internal` with a JSON body, and logged as
    // one, not a text/plain 500 that follows an access line saying 200.
    const body: unknown = ctx.body;
    if (body === null || typeof body !== 'object' || Buffer.isBuffer(body) || typeof (body as { pipe?: unknown }).pipe === 'function') return;
    if (body instanceof Blob || body instanceof ReadableStream || body instanceof Response) return;
    ctx.body = JSON.stringify(body);
  });
  const trusted = trustedProxies(gateway.options.trustedProxies);
  // The middlewares below that only look before the routes return `next()` rather than await it:
  // an async function per middleware was one more promise per request (a throw is still a
  // rejection: koa-compose catches what a middleware throws).
  app.use(function checkOrigin(ctx, next) {
    const origin = ctx.get('origin') || undefined;
    if (origin && !acceptsAnyOrigin(ctx.path)) {
      const { host, proto } = clientView(ctx.req, trusted);
      if (!originAllowed(origin, host, gateway.options.allowOrigins, proto)) throw new PorticoError('forbidden', originRefusal(origin));
    }
    return next();
  });
  app.use(corsMiddleware(gateway.options.allowOrigins));
  app.use(function refuseWhileStopping(ctx, next) {
    // A request on a kept-alive connection after the shutdown began: said so, and the connection closes.
    if (server.stopping()) {
      ctx.set('Connection', 'close');
      ctx.set('Retry-After', '1');
      throw new PorticoError('shutting_down', 'The gateway is shutting down; retry against the next one');
    }
    return next();
  });
  app.use(function authenticate(ctx, next) {
    if (isPublicPath(ctx.path) || isStaticPath(ctx.path)) return next();
    const token = bearerFromHeader(ctx.get('authorization') || undefined);
    const peer = peerOf((name) => ctx.get(name) || undefined);
    // Asked on every request, never remembered per connection: a token revoked or a session
    // expired is refused on the next request of the same keep-alive connection. A gateway open to
    // every client admits without a promise.
    if (!peer && !auth.required) {
      ctx.state.principal = { kind: 'anonymous' };
      return next();
    }
    return auth.authenticate(token, peer).then((principal) => {
      ctx.state.principal = principal;
      return next();
    });
  });
  app.use(exactRoutes(router));
  app.use(router.routes());
  app.use(allowedMethods(router));
  return app;
}
