/**
 * What gateways of a group ask each other (docs/operating/several-gateways.md): whether one still serves
 * a live instance whose lease ran out (service/ownership.ts). Gateways only; left out of
 * /openapi.json, which describes the client API.
 */
import { UuidParams } from '../../contract/rest.js';
import { PeerInstanceResponse } from '../../contract/projects.js';
import { PorticoError } from '../../errors.js';
import type { Gateway } from '../../service/gateway.js';
import { PEER_INSTANCES_PATH } from '../../service/ownership.js';
import { bindRequest } from '../bind.js';
import { route } from '../route.js';

export function peerRoutes(gateway: Gateway) {
  return [
    route({
      method: 'get',
      path: `${PEER_INSTANCES_PATH}/{uuid}`,
      tag: 'gateways',
      summary: 'Whether this gateway still serves a live instance (asked by another gateway of the group)',
      params: UuidParams,
      response: PeerInstanceResponse,
      undocumented: true,
      handler: async (ctx, { params }) => {
        const bound = await bindRequest(ctx, gateway);
        if (!bound.forwarded) throw new PorticoError('forbidden', 'Only another gateway of the group may ask this (docs/operating/several-gateways.md)');
        return { uuid: params.uuid, serving: gateway.ownership.serving(bound.project.dir, params.uuid) };
      },
    }),
  ];
}
