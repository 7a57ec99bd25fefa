/** An interface's data folder and lineage: data status, files, one file, provenance, related. */
import {
  DataStatusResponse,
  FileList,
  FileParams,
  FileQuery,
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
        "As the reference server answers it, by default: a .json file's parsed value as the JSON body, any other file's UTF-8 text as a JSON string (application/json). " +
        'A file that is not UTF-8, or a .json file that does not parse, answers 406 file_needs_raw. ' +
        'The raw bytes (binary-safe, the content type of the name, X-Content-Type-Options: nosniff) with ?raw=true or with Accept: application/octet-stream preferred over application/json; only they honour a Range header (bytes=start-end, answered 206). ' +
        'Confined to the interface folder. Either answer is bounded by 16 MiB (413 beyond: read the bytes in parts with Range; a range is bounded the same way).',
      params: FileParams,
      query: FileQuery,
      response: z.unknown().describe('The JSON answer: the parsed .json file, or the text as a JSON string; with raw, the bytes as they are on disk.'),
      // Every type TYPES can give, for the document: the raw bytes are the file's, whatever its type.
      responseType: [...new Set(['application/json', ...Object.values(TYPES), 'application/octet-stream'])],
      errors: [401, 403, 404, 406, 413, 416],
      handler: async (ctx, { params, query }) => {
        const bound = await bindRequest(ctx, gateway);
        // The answer depends on Accept: caches keep the two apart.
        ctx.vary('Accept');
        const raw = query.raw || ctx.accepts('application/json', 'application/octet-stream') === 'application/octet-stream';
        if (!raw) {
          // Serialized here: Koa would send a string as text/plain and a JSON null as 204.
          const value = await data.read(bound, params.uuid, params.path);
          ctx.type = 'application/json';
          ctx.body = JSON.stringify(value);
          return;
        }
        const file = await data.open(bound, params.uuid, params.path, ctx.get('range') || undefined);
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
