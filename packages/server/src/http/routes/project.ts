/** /v1/project: the project's interface modules, one module's schema, and its remotes. */
import { ModuleParams, ModuleSchema, ProjectIndex, RemotesResponse, WidgetAssetParams } from '../../contract/rest.js';
import { z } from '../../contract/zod.js';
import { PorticoError } from '../../errors.js';
import type { Gateway } from '../../service/gateway.js';
import { bindRequest } from '../bind.js';
import { route } from '../route.js';

/** If-None-Match: `*` or a list of (possibly weak) tags, one of which is `etag`. */
function ifNoneMatch(header: string, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/**
 * A module named by the path is a resource: one the project lacks answers 404 `unknown_module`,
 * with the message and issues (nearest and existing modules) of the 400 a body naming it gets.
 */
async function moduleOfPath<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    throw err instanceof PorticoError && err.code === 'unknown_module' ? err.withStatus(404) : err;
  }
}

export function projectRoutes(gateway: Gateway) {
  return [
    route({
      method: 'get',
      path: '/v1/project',
      tag: 'project',
      summary: 'List interface modules',
      description: 'Every interface module of the project with its docstring and whether it has a widget; a module that cannot be used is listed with its error.',
      response: ProjectIndex,
      errors: [401, 403],
      handler: async (ctx) => gateway.project.index(await bindRequest(ctx, gateway)),
    }),
    route({
      method: 'get',
      path: '/v1/project/remotes',
      tag: 'project',
      summary: 'Remote modules',
      description: 'Shareable interfaces the project resolves by URL or path (portico.json), with their pins and fetch state.',
      response: RemotesResponse,
      errors: [401, 403],
      handler: async (ctx) => gateway.project.listRemotes(await bindRequest(ctx, gateway)),
    }),
    route({
      method: 'get',
      path: '/v1/project/{module}/widget/{asset}',
      tag: 'project',
      summary: 'Widget asset',
      description:
        "The module's widget front end: `esm` (an anywidget ES module, text/javascript) or `css`. From the class's `_esm`/`_css` (inline source or a file beside the module) or the sibling `<module>.widget.js` / `.widget.css`. Strong ETag; If-None-Match answers 304. Clients revalidate (no-cache), so an edit shows at once.",
      params: WidgetAssetParams,
      response: z.string().describe('The asset source.'),
      responseType: ['text/javascript', 'text/css'],
      errors: [400, 401, 403, 404],
      handler: async (ctx, { params }) => {
        const asset = await moduleOfPath(gateway.widgets.asset(await bindRequest(ctx, gateway), params.module, params.asset));
        ctx.set('ETag', asset.etag);
        if (params.asset === 'esm' && asset.hasStylesheet) {
          // Tells the runtime a stylesheet exists, so a widget without one costs no 404.
          const project = typeof ctx.query.project === 'string' ? `?project=${encodeURIComponent(ctx.query.project)}` : '';
          ctx.set('Link', `</v1/project/${encodeURIComponent(params.module)}/widget/css${project}>; rel="stylesheet"`);
        }
        ctx.set('Cache-Control', 'no-cache');
        ctx.type = asset.contentType;
        if (ifNoneMatch(ctx.get('if-none-match'), asset.etag)) {
          ctx.status = 304;
          ctx.body = null;
          return;
        }
        ctx.body = asset.body;
      },
    }),
    route({
      method: 'get',
      path: '/v1/project/{module}',
      tag: 'project',
      summary: 'Module schema',
      description: 'The Config as JSON Schema with defaults and descriptions, the version methods and the public methods with their signatures.',
      params: ModuleParams,
      response: ModuleSchema,
      errors: [400, 401, 403, 404],
      handler: async (ctx, { params }) => moduleOfPath(gateway.project.schema(await bindRequest(ctx, gateway), params.module)),
    }),
  ];
}
