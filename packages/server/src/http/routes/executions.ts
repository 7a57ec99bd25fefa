/** /v1/executions and the run-related interface endpoints (executions of an interface, lifecycle). */
import {
  DispatchRequest,
  ExecutionInfo,
  ExecutionListQuery,
  InterfaceExecutionsQuery,
  OutputChunk,
  OutputQuery,
} from '../../contract/executions.js';
import { LifecycleRequest, LifecycleResponse, UuidParams } from '../../contract/rest.js';
import { z } from '../../contract/zod.js';
import type { Gateway } from '../../service/gateway.js';
import { bindRequest } from '../bind.js';
import { route } from '../route.js';

export function executionRoutes(gateway: Gateway) {
  const { executions, interfaces } = gateway;
  return [
    route({
      method: 'post',
      path: '/v1/executions',
      tag: 'executions',
      summary: 'Dispatch a run',
      description:
        "Materializes each interface with its context interfaces folded into its predicate, then runs their __call__ in order in one process of its own (python -m portico.run): a local process, or a Slurm batch job with --executor slurm (resources become sbatch options; job_refused 400 when Slurm refuses it, scheduler_unavailable 503 when it cannot be reached). stdout and stderr go to the run's output.log.",
      body: DispatchRequest,
      response: ExecutionInfo,
      errors: [400, 401, 403, 404, 503],
      handler: async (ctx, { body }) => executions.dispatch(await bindRequest(ctx, gateway), body),
    }),
    route({
      method: 'get',
      path: '/v1/executions',
      tag: 'executions',
      summary: 'List runs',
      description: 'Newest first. is_active is the truth: a run whose process died is not active, whatever it last wrote.',
      query: ExecutionListQuery,
      response: z.array(ExecutionInfo),
      errors: [401, 403],
      handler: async (ctx, { query }) => executions.list(await bindRequest(ctx, gateway), query),
    }),
    route({
      method: 'get',
      path: '/v1/executions/{uuid}',
      tag: 'executions',
      summary: 'Get a run',
      params: UuidParams,
      response: ExecutionInfo,
      errors: [401, 403, 404],
      handler: async (ctx, { params }) => executions.info(await bindRequest(ctx, gateway), params.uuid),
    }),
    route({
      method: 'get',
      path: '/v1/executions/{uuid}/output',
      tag: 'executions',
      summary: "A window of a run's output",
      description:
        'Always a bounded window, never the whole file: offset reads forward from a byte (poll with offset = the returned size to fetch only new bytes), tail reads the last N bytes, neither returns the last limit bytes. limit defaults to 65536 and is capped at 262144.',
      params: UuidParams,
      query: OutputQuery,
      response: OutputChunk,
      errors: [401, 403, 404],
      handler: async (ctx, { params, query }) => executions.output(await bindRequest(ctx, gateway), params.uuid, query),
    }),
    route({
      method: 'post',
      path: '/v1/executions/{uuid}/cancel',
      tag: 'executions',
      summary: 'Cancel a run',
      description:
        'Writes the cancel marker in the run directory; the run process raises ExecutionInterrupted inside the run within a second. A queued Slurm job is scancelled at once, a running one that has not ended after a grace period too. Best effort: for a run that has ended it only leaves the marker.',
      params: UuidParams,
      response: null,
      errors: [401, 403, 404],
      handler: async (ctx, { params }) => executions.cancel(await bindRequest(ctx, gateway), params.uuid),
    }),
    route({
      method: 'get',
      path: '/v1/interfaces/{uuid}/executions',
      tag: 'interfaces',
      summary: 'Runs of an interface',
      params: UuidParams,
      query: InterfaceExecutionsQuery,
      response: z.array(ExecutionInfo),
      errors: [401, 403, 404],
      handler: async (ctx, { params, query }) => {
        const bound = await bindRequest(ctx, gateway);
        await interfaces.get(bound, params.uuid);
        return executions.list(bound, { ...query, interface: params.uuid });
      },
    }),
    route({
      method: 'post',
      path: '/v1/interfaces/lifecycle',
      tag: 'interfaces',
      summary: 'Lifecycle of a config',
      description:
        'draft (never run or no usable run), running, cached (a run finished) or failed (the latest run did not finish), with the uuid and the latest execution. A config that cannot be constructed answers 400 with the same issues as resolve.',
      body: LifecycleRequest,
      response: LifecycleResponse,
      errors: [400, 401, 403, 404],
      handler: async (ctx, { body }) => {
        return executions.ofConfig(await bindRequest(ctx, gateway), body);
      },
    }),
  ];
}
