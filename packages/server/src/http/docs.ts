/** /openapi.json and /docs (Swagger UI served from the installed package: no CDN, works offline). */
import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { OpenApiGeneratorV31, type OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type Router from '@koa/router';
import { API_VERSION, PROTOCOL_VERSION, VERSION } from '../config/constants.js';
import { ErrorResponse } from '../contract/common.js';
import { ORIGIN_PATH } from './routes/meta.js';
import { isAnyOriginPath } from './static.js';

const SWAGGER_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const SWAGGER_FILES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
};

/** Which version is which: the badge by the title is the REST API's (info.version), not Portico's. */
const VERSIONS = `Portico ${VERSION} (the gateway) · REST API ${API_VERSION} · WebSocket protocol ${PROTOCOL_VERSION}`;

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Portico ${VERSION} · API ${API_VERSION}</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui' });</script>
</body>
</html>`;

/** Paths served without a credential (spec: Authentication 1), besides the static files (http/static.ts). */
const PUBLIC_PATHS: ReadonlySet<string> = new Set(['/openapi.json', '/docs', ORIGIN_PATH]);

/**
 * Whether `p` is served without a credential. The authentication middleware asks this of every
 * request, and /openapi.json declares its operations from the same answer.
 */
export function isPublicPath(p: string): boolean {
  return PUBLIC_PATHS.has(p) || p.startsWith('/docs/');
}

/**
 * Whether a page of any origin may use `p`: /v1/origin, and the runtime bundle (a refused page
 * loads the runtime, which asks /v1/origin why). The origin check asks this of every request.
 */
export function acceptsAnyOrigin(p: string): boolean {
  return p === ORIGIN_PATH || isAnyOriginPath(p);
}

/**
 * The OpenAPI document of the registered routes, with security as the gateway is configured:
 * without a credential to check (no api token, no OIDC issuer) no operation has a security
 * requirement or a 401 answer; with one, every operation needs the bearer credential and may
 * answer 401, except the public ones (isPublicPath), which declare `security: []`. Source writes
 * (every source operation but a GET: routes/source.ts authorizes each one) need the source token
 * besides, answering 403 `source_token_required` without it. Every operation also lists the
 * answers the middleware around the routes may give: 403 for a page whose origin is refused
 * (unless acceptsAnyOrigin), 503 once the gateway is stopping.
 */
export function openApiDocument(registry: OpenAPIRegistry, { authRequired }: { authRequired: boolean }): object {
  if (authRequired) {
    registry.registerComponent('securitySchemes', 'bearer', {
      type: 'http',
      scheme: 'bearer',
      description: 'The api token, a session token (POST /v1/auth/token) or an OIDC access token of the configured issuer. WebSockets take it as the subprotocol pair `bearer, <token>`.',
    });
  }
  const error = (description: string) => ({ description, content: { 'application/json': { schema: ErrorResponse } } });
  let sourceWrites = false;
  for (const definition of registry.definitions) {
    if (definition.type !== 'route') continue;
    const operation = definition.route;
    // No public path has parameters: the template is the path the middleware sees.
    const secured = authRequired && !isPublicPath(operation.path);
    if (!secured) delete operation.responses[401];
    else operation.responses[401] ??= error('Missing or invalid bearer credential (WWW-Authenticate: Bearer)');
    if (authRequired && !secured) operation.security = [];
    if (operation.tags?.includes('source') && operation.method !== 'get') {
      sourceWrites = true;
      operation.security = [{ ...(secured ? { bearer: [] } : {}), sourceToken: [] }];
    }
    if (!acceptsAnyOrigin(operation.path)) operation.responses[403] ??= error('Forbidden');
    operation.responses[503] ??= error('Unavailable (shutting_down: the gateway is stopping)');
  }
  if (sourceWrites) {
    registry.registerComponent('securitySchemes', 'sourceToken', {
      type: 'apiKey',
      in: 'header',
      name: 'X-Service-Source-Token',
      description: 'The source token (--source-token): source writes need it besides Authorization (403 source_token_required without it).',
    });
  }
  const usedTags = new Set(registry.definitions.flatMap((d) => (d.type === 'route' ? (d.route.tags ?? []) : [])));
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Portico API',
      version: API_VERSION,
      description:
        "Remote calls, storage and search over a project's Python interface classes.\n\n" +
        `**Versions:** ${VERSIONS}. The badge beside the title is the REST API's version; GET /v1 and GET /v1/health give Portico's.`,
      license: { name: 'MIT' },
    },
    ...(authRequired ? { security: [{ bearer: [] }] } : {}),
    // Only tags with a documented route (source editing switched off leaves 'source' out).
    tags: ['interfaces', 'executions', 'project', 'projects', 'source', 'meta', 'auth'].filter((name) => usedTags.has(name)).map((name) => ({ name })),
  });
}

export function mountDocs(router: Router, document: object): void {
  router.get('/openapi.json', (ctx) => {
    ctx.body = document;
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = DOCS_PAGE;
  });
  router.get('/docs/:file', (ctx) => {
    const type = SWAGGER_FILES[ctx.params.file ?? ''];
    if (!type) return;
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = createReadStream(path.join(SWAGGER_DIR, ctx.params.file!));
  });
}
