/** /v1/health and /v1/protocol. */
import { protocolDoc } from '../../contract/protocol.js';
import { HealthResponse } from '../../contract/rest.js';
import { z } from '../../contract/zod.js';
import type { Gateway } from '../../service/gateway.js';
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

export function metaRoutes(gateway: Gateway) {
  const doc = protocolDoc();
  return [
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
  ];
}
