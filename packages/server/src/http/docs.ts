/** /openapi.json and /docs (Swagger UI served from the installed package: no CDN, works offline). */
import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { OpenApiGeneratorV31, type OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type Router from '@koa/router';
import { API_VERSION } from '../config/constants.js';

const SWAGGER_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const SWAGGER_FILES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
};

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Portico API</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui' });</script>
</body>
</html>`;

/** Paths served without a credential (spec: Authentication 1). */
export function isPublicPath(p: string): boolean {
  return p === '/openapi.json' || p === '/docs' || p.startsWith('/docs/') || p === '/v1/origin';
}

export function openApiDocument(registry: OpenAPIRegistry): object {
  registry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
  const usedTags = new Set(registry.definitions.flatMap((d) => (d.type === 'route' ? (d.route.tags ?? []) : [])));
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Portico API',
      version: API_VERSION,
      description: "Remote calls, storage and search over a project's Python interface classes.",
      license: { name: 'MIT' },
    },
    security: [{ bearer: [] }],
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
