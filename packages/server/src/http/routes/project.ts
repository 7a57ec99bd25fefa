/** /v1/project: the project's interface modules, one module's schema, and its remotes. */
import { ModuleParams, ModuleSchema, ProjectIndex, RemotesResponse } from '../../contract/rest.js';
import type { Gateway } from '../../service/gateway.js';
import { bindRequest } from '../bind.js';
import { route } from '../route.js';

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
      path: '/v1/project/{module}',
      tag: 'project',
      summary: 'Module schema',
      description: 'The Config as JSON Schema with defaults and descriptions, the version methods and the public methods with their signatures.',
      params: ModuleParams,
      response: ModuleSchema,
      errors: [400, 401, 403, 404],
      handler: async (ctx, { params }) => gateway.project.schema(await bindRequest(ctx, gateway), params.module),
    }),
  ];
}
