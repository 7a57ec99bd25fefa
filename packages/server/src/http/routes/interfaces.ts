/** /v1/interfaces: create or attach, list, get, delete, and remote calls over REST. */
import type { Socket } from 'node:net';
import { InterfaceInfo } from '../../contract/common.js';
import { FindRequest, SearchItemsResponse } from '../../contract/search.js';
import {
  ArchiveQuery,
  CallStreamLine,
  CreateInterfaceRequest,
  InterfaceCallRequest,
  InterfaceCallResponse,
  InterfaceList,
  ListQuery,
  ResolveRequest,
  ReleaseResponse,
  ResolveResponse,
  SetLabelRequest,
  UuidParams,
} from '../../contract/rest.js';
import { displayFields } from '../../service/display.js';
import type { InterfaceInfo as ServiceInfo, WaitListener } from '../../service/interfaces.js';
import type { Gateway } from '../../service/gateway.js';
import { bindRequest } from '../bind.js';
import { streamCall, streamFormat } from '../call-stream.js';
import { atOwner } from '../owner-relay.js';
import { route } from '../route.js';

const closeSignals = new WeakMap<Socket, AbortSignal>();

/**
 * Aborted when the client's connection closes: the calls it is still waiting for are cancelled.
 * One per connection, not per request: a keep-alive client makes many calls on one connection,
 * and an AbortController, a close listener and the worker's abort listener per call were a
 * visible share of a REST call's gateway time in its CPU profile. A call that already ended is no
 * longer under the signal, so closing after it changes nothing.
 */
function closeSignal(socket: Socket): AbortSignal {
  let signal = closeSignals.get(socket);
  if (!signal) {
    const controller = new AbortController();
    socket.once('close', () => controller.abort());
    closeSignals.set(socket, (signal = controller.signal));
  }
  return signal;
}

export function interfaceRoutes(gateway: Gateway) {
  const { interfaces, executions } = gateway;
  /** An InterfaceInfo answer: the record with `cached`, computed now (its runs change, the record does not). */
  const answer = async (ctx: Awaited<ReturnType<typeof bindRequest>>, info: Promise<ServiceInfo>) => (await executions.withCached(ctx, [await info]))[0];
  return [
    route({
      method: 'get',
      path: '/v1/interfaces',
      tag: 'interfaces',
      summary: 'List interfaces',
      description: 'The non-archived interfaces of the project, newest first.',
      query: ListQuery,
      response: InterfaceList,
      errors: [401, 403, 503],
      handler: async (ctx, { query }) => {
        const bound = await bindRequest(ctx, gateway);
        return executions.withCached(bound, await interfaces.list(bound, query.limit));
      },
    }),
    route({
      method: 'post',
      path: '/v1/interfaces',
      tag: 'interfaces',
      summary: 'Create or attach to an interface',
      description:
        'Materializes an interface. The uuid is the content hash of module, resolved config and predicate unless the client supplies one; an existing uuid returns that instance unchanged.',
      body: CreateInterfaceRequest,
      response: InterfaceInfo,
      errors: [400, 401, 403, 404, 503],
      handler: async (ctx, { body }) => {
        const bound = await bindRequest(ctx, gateway);
        return answer(bound, interfaces.create(bound, body));
      },
    }),
    route({
      method: 'post',
      path: '/v1/interfaces/call',
      tag: 'interfaces',
      summary: 'Call a method',
      description:
        'Invokes a public method and answers {payload}; a result IPython could display (a figure, an image, a DataFrame) also carries display, its MIME bundle (binary data as base64), and metadata when it has any. Failures carry a structured detail (code, message, exception). ' +
        'With Accept: application/x-ndjson (or text/event-stream) the call is answered as it happens, one CallStreamLine per line (or per server-sent event): where a pending Slurm job stands while the call waits for its worker, each item of a generator, each event it emits, what it prints, then one line that ends it (the final stream line, the result, or the error); a generator needs one of these (or the WebSocket), plain JSON answers it 400 streaming_unsupported.',
      body: InterfaceCallRequest,
      response: InterfaceCallResponse,
      alsoResponds: { 'application/x-ndjson': CallStreamLine, 'text/event-stream': CallStreamLine },
      errors: [400, 401, 403, 404, 502, 503, 504],
      handler: async (ctx, { body }) => {
        const bound = await bindRequest(ctx, gateway);
        const instance = (onWaiting?: WaitListener) => interfaces.create(bound, { target: body.target, version: body.version, meta: body.meta }, onWaiting);
        // Accept: application/x-ndjson or text/event-stream: items, events and the end as they happen,
        // from the first wait for a pending Slurm job on (one gateway: no owner to hand the call to).
        const format = streamFormat(ctx.get('accept') || undefined);
        if (format && !gateway.ownership.shared) return streamCall(ctx, gateway, bound, instance, body, format, closeSignal(ctx.req.socket));
        const record = await instance();
        // Several gateways: the call goes where its live instance is (the owner answers it).
        if (gateway.ownership.shared && !(await atOwner(ctx, gateway, bound, record.uuid, { ...body, target: record.uuid, version: [] })).local) return undefined;
        // A client that goes away cancels its call.
        const signal = closeSignal(ctx.req.socket);
        if (format) return streamCall(ctx, gateway, bound, async () => record, body, format, signal);
        // Widget hooks by name too (`widget_state`, …): the service routes them, as for a WebSocket call.
        const { payload, display } = await interfaces.callForResult(bound, record, body, signal);
        return display ? { payload, ...displayFields(display).fields } : { payload };
      },
    }),
    route({
      method: 'post',
      path: '/v1/interfaces/search',
      tag: 'interfaces',
      summary: 'Search interfaces',
      description:
        'Filters on module, kind ("Interface" for every interface record), class_name, created_by, label and config paths (eq, ne, lt, lte, gt, gte, in, nin, contains, exists), sorts by several keys with a uuid tiebreaker, pages by limit/offset or by cursor. Archived records are hidden unless include_archived. Items carry cached (with status, run_count and execution_uuid) only with include_status, which reads each one\'s runs.',
      body: FindRequest,
      response: SearchItemsResponse,
      errors: [401, 403, 503],
      handler: async (ctx, { body }) => {
        return executions.search(await bindRequest(ctx, gateway), body);
      },
    }),
    route({
      method: 'post',
      path: '/v1/interfaces/resolve',
      tag: 'interfaces',
      summary: 'Resolve a version (dry run)',
      description:
        'The resolved config, the uuid it would get and the `portico get` line that creates it; nothing is materialized. Problems answer 400 with issues attached to config paths.',
      body: ResolveRequest,
      response: ResolveResponse,
      errors: [400, 401, 403, 404, 503],
      handler: async (ctx, { body }) => interfaces.resolve(await bindRequest(ctx, gateway), body.target, body.version),
    }),
    route({
      method: 'get',
      path: '/v1/interfaces/{uuid}',
      tag: 'interfaces',
      summary: 'Get an interface',
      params: UuidParams,
      response: InterfaceInfo,
      errors: [401, 403, 404, 503],
      handler: async (ctx, { params }) => {
        const bound = await bindRequest(ctx, gateway);
        return answer(bound, interfaces.get(bound, params.uuid));
      },
    }),
    route({
      method: 'delete',
      path: '/v1/interfaces/{uuid}',
      tag: 'interfaces',
      summary: 'Delete an interface',
      description: 'Removes the record from the index and drops its live instance.',
      params: UuidParams,
      response: null,
      errors: [401, 403, 404, 502, 503],
      handler: async (ctx, { params }) => {
        const bound = await bindRequest(ctx, gateway);
        // Several gateways: deleted by the owner of its live instance, which drops it too.
        if ((await atOwner(ctx, gateway, bound, params.uuid, undefined, { claim: false })).local) await interfaces.delete(bound, params.uuid);
      },
    }),
    route({
      method: 'patch',
      path: '/v1/interfaces/{uuid}/label',
      tag: 'interfaces',
      summary: 'Set or clear the label',
      description: 'The label is the only mutable field; last write wins; null clears it.',
      params: UuidParams,
      body: SetLabelRequest,
      response: InterfaceInfo,
      errors: [401, 403, 404, 503],
      handler: async (ctx, { params, body }) => {
        const bound = await bindRequest(ctx, gateway);
        return answer(bound, interfaces.setLabel(bound, params.uuid, body.label));
      },
    }),
    route({
      method: 'post',
      path: '/v1/interfaces/{uuid}/release',
      tag: 'interfaces',
      summary: 'Release the live instance',
      description:
        'Drops the live Python instance (its state in memory goes); the record and the saved widget state stay, and the next call, read or widget operation makes the instance again from them. Clients attached to it stay attached.',
      params: UuidParams,
      response: ReleaseResponse,
      errors: [401, 403, 404, 502, 503],
      handler: async (ctx, { params }) => {
        const bound = await bindRequest(ctx, gateway);
        if (!(await atOwner(ctx, gateway, bound, params.uuid, undefined, { claim: false })).local) return undefined;
        return interfaces.release(bound, params.uuid);
      },
    }),
    route({
      method: 'post',
      path: '/v1/interfaces/{uuid}/archive',
      tag: 'interfaces',
      summary: 'Archive or restore',
      description: 'Archived interfaces are hidden from search unless asked for; restore=true brings one back.',
      params: UuidParams,
      query: ArchiveQuery,
      response: InterfaceInfo,
      errors: [401, 403, 404, 503],
      handler: async (ctx, { params, query }) => {
        const bound = await bindRequest(ctx, gateway);
        return answer(bound, interfaces.archive(bound, params.uuid, query.restore));
      },
    }),
  ];
}
