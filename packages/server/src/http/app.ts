/**
 * The Koa application: error mapping, origin policy, CORS (preflights before authentication),
 * authentication, then the routes. Every
 * route is declared once (http/route.ts), so /openapi.json is generated from the same schemas
 * that validate requests.
 */
import { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import Router from '@koa/router';
import Koa from 'koa';
import { bearerFromHeader, type Authenticator } from '../auth/credentials.js';
import { originAllowed, originRefusal } from '../auth/origin.js';
import { PorticoError } from '../errors.js';
import type { Gateway } from '../service/gateway.js';
import { accessLog } from './access-log.js';
import { corsMiddleware } from './cors.js';
import { isPublicPath, mountDocs, openApiDocument } from './docs.js';
import { errorMiddleware } from './errors.js';
import { exactRoutes, mountRoutes } from './route.js';
import { interfaceRoutes } from './routes/interfaces.js';
import { dataRoutes } from './routes/data.js';
import { executionRoutes } from './routes/executions.js';
import { metaRoutes, ORIGIN_PATH } from './routes/meta.js';
import { projectRoutes } from './routes/project.js';
import { sourceRoutes } from './routes/source.js';
import { authRoutes } from './routes/auth.js';
import { projectsRoutes } from './routes/projects.js';
import { isAnyOriginPath, isStaticPath, mountStatic } from './static.js';

export function createApp(gateway: Gateway, auth: Authenticator, log: (line: string) => void): Koa {
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
      ...authRoutes(auth),
    ] as never,
  );
  mountDocs(router, openApiDocument(registry));

  mountStatic(router);

  app.use(accessLog(gateway.logger, gateway.metrics));
  app.use(errorMiddleware(log));
  app.use(async function checkOrigin(ctx, next) {
    // /v1/origin and the runtime bundle answer every page: a refused page loads the runtime, which asks /v1/origin why.
    const anyOrigin = ctx.path === ORIGIN_PATH || isAnyOriginPath(ctx.path);
    if (!anyOrigin && !originAllowed(ctx.get('origin') || undefined, ctx.get('host') || undefined, gateway.options.allowOrigins)) {
      throw new PorticoError('forbidden', originRefusal(ctx.get('origin')));
    }
    await next();
  });
  app.use(corsMiddleware(gateway.options.allowOrigins));
  app.use(async function authenticate(ctx, next) {
    if (!isPublicPath(ctx.path) && !isStaticPath(ctx.path)) ctx.state.principal = await auth.authenticate(bearerFromHeader(ctx.get('authorization') || undefined));
    await next();
  });
  app.use(exactRoutes(router));
  app.use(router.routes());
  // A method no route knows (TRACE, …) is a 405 like any other method a path lacks, never a 501.
  const notAllowed = () => new PorticoError('method_not_allowed', 'This method is not allowed here');
  app.use(router.allowedMethods({ throw: true, notImplemented: notAllowed, methodNotAllowed: notAllowed }));
  return app;
}
