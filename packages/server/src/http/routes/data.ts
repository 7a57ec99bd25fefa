/** An interface's data folder and lineage: data status, files, one file, provenance, related. */
import {
  DataStatusResponse,
  FileList,
  FileParams,
  ProvenanceGraph,
  ProvenanceQuery,
  RelatedResponse,
  UuidParams,
} from '../../contract/rest.js';
import { z } from '../../contract/zod.js';
import type { Gateway } from '../../service/gateway.js';
import { bindRequest } from '../bind.js';
import { route } from '../route.js';

const TYPES: Record<string, string> = {
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.log': 'text/plain; charset=utf-8',
  '.csv': 'text/csv; charset=utf-8',
  '.html': 'text/plain; charset=utf-8', // never rendered as a page of the gateway's origin
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.svg': 'text/plain; charset=utf-8',
};

export function dataRoutes(gateway: Gateway) {
  const { data, lineage } = gateway;
  return [
    route({
      method: 'get',
      path: '/v1/interfaces/{uuid}/data',
      tag: 'interfaces',
      summary: 'Where its data is',
      params: UuidParams,
      response: DataStatusResponse,
      errors: [401, 403, 404],
      handler: async (ctx, { params }) => data.status(await bindRequest(ctx, gateway), params.uuid),
    }),
    route({
      method: 'get',
      path: '/v1/interfaces/{uuid}/files',
      tag: 'interfaces',
      summary: "List the interface's files",
      params: UuidParams,
      response: FileList,
      errors: [401, 403, 404],
      handler: async (ctx, { params }) => data.list(await bindRequest(ctx, gateway), params.uuid),
    }),
    route({
      method: 'get',
      path: '/v1/interfaces/{uuid}/files/{path}',
      koaPath: '/v1/interfaces/:uuid/files/*path',
      tag: 'interfaces',
      summary: 'Read one file',
      description:
        'The raw bytes (binary-safe). Confined to the interface folder. A file over 16 MiB needs a Range header (bytes=start-end), answered 206; a range is bounded the same way.',
      params: FileParams,
      response: z.unknown().describe('The file content, as it is on disk.'),
      // Every type TYPES can give, for the document: the bytes are the file's, whatever its type.
      responseType: [...new Set([...Object.values(TYPES), 'application/octet-stream'])],
      errors: [401, 403, 404, 413, 416],
      handler: async (ctx, { params }) => {
        const file = await data.open(await bindRequest(ctx, gateway), params.uuid, params.path, ctx.get('range') || undefined);
        ctx.type = TYPES[/\.[^.]+$/.exec(file.name)?.[0]?.toLowerCase() ?? ''] ?? 'application/octet-stream';
        ctx.set('X-Content-Type-Options', 'nosniff');
        ctx.set('Accept-Ranges', 'bytes');
        ctx.length = file.size;
        if (file.range) {
          ctx.status = 206;
          ctx.set('Content-Range', `bytes ${file.range.start}-${file.range.end}/${file.range.total}`);
        }
        ctx.body = file.stream;
      },
    }),
    route({
      method: 'get',
      path: '/v1/interfaces/{uuid}/provenance',
      tag: 'interfaces',
      summary: 'Provenance graph',
      description:
        'A node-link DAG: recipe (config, context interfaces, derivation from meta.derived_from) and history (runs and the manifest each used). depth bounds the walk; rels picks the edge labels.',
      params: UuidParams,
      query: ProvenanceQuery,
      response: ProvenanceGraph,
      errors: [401, 403, 404],
      handler: async (ctx, { params, query }) =>
        lineage.provenance(await bindRequest(ctx, gateway), params.uuid, query.depth, query.rels.length ? query.rels : undefined),
    }),
    route({
      method: 'get',
      path: '/v1/interfaces/{uuid}/related',
      tag: 'interfaces',
      summary: 'Related records',
      description: 'The neighbours one hop away over every relation: ancestors, contexts, runs.',
      params: UuidParams,
      response: RelatedResponse,
      errors: [401, 403, 404],
      handler: async (ctx, { params }) => lineage.related(await bindRequest(ctx, gateway), params.uuid),
    }),
  ];
}
