/** /v1 (the API's index), /v1/health, /v1/protocol, /v1/origin and /metrics. */
import { originAllowed, originRefusal } from '../../auth/origin.js';
import { API_VERSION, PROTOCOL_VERSION, VERSION } from '../../config/constants.js';
import { protocolDoc } from '../../contract/protocol.js';
import { HealthResponse, OriginResponse } from '../../contract/rest.js';
import { z } from '../../contract/zod.js';
import type { Gateway } from '../../service/gateway.js';
import { clientView, trustedProxies } from '../forwarded.js';
import { route } from '../route.js';

const ProtocolDoc = z
  .object({
    protocol_version: z.string(),
    transport: z.record(z.string(), z.string()),
    ws_endpoints: z.record(z.string(), z.string()),
    headers: z.array(z.unknown()),
    ws_frames: z.array(z.unknown()),
    execution_frames: z.array(z.unknown()),
    chunk_flows: z.array(z.unknown()),
    interface_hooks: z.array(z.unknown()),
    capabilities: z.array(z.unknown()),
    errors: z.array(z.unknown()),
    limits: z.record(z.string(), z.number()),
  })
  .openapi('ProtocolDoc');

const ApiIndex = z
  .object({
    name: z.literal('Portico'),
    version: z.string().describe("Portico's own version: the gateway's (as in GET /v1/health)."),
    api_version: z.string().describe('The version of this REST API (info.version of /openapi.json), not of Portico.'),
    protocol_version: z.string().describe('The version of the WebSocket protocol (GET /v1/protocol).'),
    links: z
      .record(z.string(), z.string())
      .describe('Where to go next, as paths on this gateway: every top-level resource of /v1 (project, interfaces, executions, source, python, …), the sockets, the docs, the OpenAPI document and the metrics.'),
  })
  .openapi('ApiIndex');

/** The index's links: the pages and entry points of the API, as paths on the gateway. */
const API_LINKS = {
  docs: '/docs',
  openapi: '/openapi.json',
  health: '/v1/health',
  protocol: '/v1/protocol',
  project: '/v1/project',
  projects: '/v1/projects',
  interfaces: '/v1/interfaces',
  search: '/v1/interfaces/search',
  executions: '/v1/executions',
  python: '/v1/python',
  auth_token: '/v1/auth/token',
  origin: '/v1/origin',
  websocket: '/v1/interfaces/ws',
  executions_websocket: '/v1/executions/ws',
  metrics: '/metrics',
};

export const ORIGIN_PATH = '/v1/origin';

export function metaRoutes(gateway: Gateway) {
  const doc = protocolDoc();
  // The source API is a resource of this gateway only when it is on (--enable-source-api).
  const links = gateway.options.enableSourceApi ? { ...API_LINKS, source: '/v1/source' } : API_LINKS;
  return [
    route({
      method: 'get',
      path: '/v1',
      tag: 'meta',
      summary: 'API index',
      description: "What this API is and where to go: Portico's version beside the REST API's and the WebSocket protocol's, and links to the docs, the OpenAPI document and the main endpoints.",
      response: ApiIndex,
      errors: [401],
      handler: async () => ({ name: 'Portico' as const, version: VERSION, api_version: API_VERSION, protocol_version: PROTOCOL_VERSION, links }),
    }),
    route({
      method: 'get',
      path: '/v1/health',
      tag: 'meta',
      summary: 'Health',
      description: 'Server status, version, active execution count.',
      response: HealthResponse,
      errors: [401],
      handler: async () => gateway.health(),
    }),
    route({
      method: 'get',
      path: '/v1/protocol',
      tag: 'meta',
      summary: 'WebSocket protocol',
      description: 'Frames with their fields, binary sequences, interface hooks, headers, capabilities, error codes and limits.',
      response: ProtocolDoc,
      errors: [401],
      handler: async () => doc,
    }),
    route({
      method: 'get',
      path: '/metrics',
      tag: 'meta',
      summary: 'Metrics (Prometheus)',
      description:
        'The Prometheus text format: calls and their latency by method and outcome, HTTP requests, sockets, workers and their restarts, executions by state, index operations and their latency, upload and read bytes, and the process (CPU, memory, event loop). Authenticated like every other endpoint.',
      response: z.string(),
      responseType: 'text/plain',
      errors: [401],
      handler: async (ctx) => {
        ctx.type = gateway.metrics.registry.contentType;
        ctx.set('Cache-Control', 'no-store');
        return gateway.metrics.registry.metrics();
      },
    }),
    route({
      method: 'get',
      path: ORIGIN_PATH,
      tag: 'meta',
      summary: 'May this page use the gateway?',
      description:
        "Public, and readable from any origin (Access-Control-Allow-Origin: *, no credentials): whether the calling page's Origin is allowed, and if not, how to allow it. " +
        'A browser hides why a refused request failed; the widget runtime asks here to show an actionable message instead of a blank widget.',
      response: OriginResponse,
      handler: async (ctx) => {
        const origin = ctx.get('origin') || null;
        ctx.set('Access-Control-Allow-Origin', '*');
        ctx.set('Cache-Control', 'no-store');
        const { host, proto } = clientView(ctx.req, trustedProxies(gateway.options.trustedProxies));
        const allowed = originAllowed(origin ?? undefined, host, gateway.options.allowOrigins, proto);
        return { origin, allowed, message: allowed ? null : originRefusal(origin ?? undefined) };
      },
    }),
  ];
}
