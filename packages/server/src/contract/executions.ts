/** Request and response bodies of /v1/executions and the lifecycle endpoints. */
import { JsonObject, QueryBoolean, queryInteger, RunUuid, Version } from './common.js';
import { z } from './zod.js';

export const InterfaceRef = z
  .object({
    target: z.string().min(1).describe('Module path or an existing uuid.'),
    version: Version.default([]),
  })
  .openapi('InterfaceRef');

export const DispatchInterface = InterfaceRef.extend({
  context: z
    .array(InterfaceRef)
    .max(16)
    .default([])
    .describe('Context interfaces, entered in order and exited in reverse around the run; their uuids fold into the predicate.'),
}).openapi('DispatchInterface');

/** A Slurm name (partition, account, qos): letters, digits and `_.-`, never an option or a path. */
const SlurmName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'letters, digits, _ . - (at most 64, not starting with - . or _)');

/**
 * Per-dispatch resources. Only these keys, each validated here; the Slurm executor turns them into
 * sbatch options (executors/sbatch-options.ts), the local executor has no queue and ignores them.
 */
export const Resources = z
  .strictObject({
    partition: SlurmName.optional().describe('Slurm partition (--partition); default: the gateway’s --slurm-partition, else the cluster’s default.'),
    account: SlurmName.optional().describe('Slurm account charged (--account); default: the gateway’s --slurm-account.'),
    qos: SlurmName.optional().describe('Quality of service (--qos).'),
    time_limit: z.number().int().min(1).max(525_600).optional().describe('Wall-clock limit in minutes (--time); Slurm ends the job once it is reached.'),
    cpus: z.number().int().min(1).max(1024).optional().describe('CPUs for the run process (--cpus-per-task).'),
    memory: z
      .string()
      .regex(/^[1-9][0-9]{0,8}[KMGT]?$/, 'a positive integer with an optional K, M, G or T suffix (megabytes without one)')
      .optional()
      .describe('Memory of the node for the job (--mem), e.g. 512M, 16G.'),
    gpus: z.number().int().min(0).max(64).optional().describe('GPUs (--gpus).'),
  })
  .openapi('Resources');

export const DispatchRequest = z
  .object({
    interfaces: z.array(DispatchInterface).min(1).max(64).describe('The interfaces to run, in order, in one run process.'),
    parent: RunUuid.nullable().optional().describe('The execution that dispatched this one, if any.'),
    resources: Resources.optional().describe('What the run needs from a cluster scheduler; an unknown key or a bad value is refused (422).'),
  })
  .openapi('DispatchRequest');

export const RunStatus = z.enum(['pending', 'running', 'finished', 'failed', 'interrupted']);

export const ExecutionInfo = z
  .object({
    uuid: z.string(),
    status: RunStatus.describe('pending → running → finished | failed | interrupted.'),
    is_active: z.boolean().describe('Running now: its process is alive (or, elsewhere, its heartbeat is fresh).'),
    is_started: z.boolean(),
    is_finished: z.boolean().describe('Ended successfully.'),
    is_incomplete: z.boolean().describe('Started, not finished and not active: failed, interrupted or died.'),
    is_live: z.boolean().describe('Finished or active.'),
    cancelled: z.boolean().describe('A cancel marker is present.'),
    created_at: z.string(),
    started_at: z.string().nullable(),
    finished_at: z.string().nullable().describe('When the run ended, whatever its status.'),
    heartbeat_at: z.string().nullable(),
    interfaces: z.array(z.string()).describe('The uuids of the interfaces it runs, in order.'),
    parent: z.string().nullable(),
    created_by: z.string(),
    pid: z.number().int().nullable(),
    error: z.object({ exception: z.string(), message: z.string(), interface: z.string().nullable().optional() }).nullable(),
    job: z
      .object({
        id: z.string().describe('The Slurm job id.'),
        state: z.string().nullable().describe('The job state Slurm reports (PENDING, RUNNING, COMPLETED, TIMEOUT, …), while the run has not recorded its end.'),
        reason: z.string().nullable().describe('Why Slurm keeps it queued or ended it (Priority, Resources, TimeLimit, …).'),
      })
      .nullable()
      .describe('The batch job of a run dispatched to Slurm; null for a local run.'),
    module: z.literal('portico.run').describe('What runs it (the reference names its runner here).'),
    config: JsonObject.describe("The runner's config: {} (Portico's runner has none)."),
    version: z.array(z.unknown()).describe('[] (as config).'),
    resources: JsonObject.nullable().describe('The resources the dispatch asked for, or null.'),
    parent_uuid: z.string().describe('The (first) interface it runs, as the reference names it; "" when none.'),
    is_resumed: z.boolean().describe('Always false: a Portico run is never resumed, a new dispatch is a new run.'),
    resumed_at: z.string().nullable().describe('Always null (see is_resumed).'),
    label: z.string().nullable().describe('Always null: runs carry no label.'),
  })
  .openapi('ExecutionInfo');

export const ExecutionListQuery = z.object({
  active: QueryBoolean.optional().describe('Only runs that are (not) running now.'),
  incomplete: QueryBoolean.optional().describe('Only runs that did (not) end without finishing.'),
  pending: QueryBoolean.optional().describe('Only runs that have (not) started yet.'),
  parent: RunUuid.optional().describe('Only runs dispatched by this execution.'),
  limit: queryInteger(1, 1000).default(100).describe('At most this many runs (1..1000).'),
});

export const InterfaceExecutionsQuery = ExecutionListQuery.pick({ active: true, limit: true });

export const OutputQuery = z.object({
  offset: queryInteger(0).optional().describe('Read forward from this byte; poll with the returned size to get only new bytes.'),
  tail: queryInteger(0).optional().describe('Read the last N bytes (capped by limit).'),
  limit: queryInteger(1).optional().describe('At most this many bytes (default 65536, capped at 262144).'),
});

export const OutputChunk = z
  .object({
    output: z.string().describe('The window, decoded as UTF-8 (invalid bytes become U+FFFD).'),
    offset: z.number().int().describe('The byte offset the window starts at.'),
    size: z.number().int().describe('The log size in bytes now: the offset of the next poll.'),
    limit: z.number().int().describe('The window size that applied.'),
  })
  .openapi('OutputChunk');

export type DispatchRequest = z.infer<typeof DispatchRequest>;
export type Resources = z.infer<typeof Resources>;
export type ExecutionInfo = z.infer<typeof ExecutionInfo>;
export type OutputQuery = z.infer<typeof OutputQuery>;
export type RunStatus = z.infer<typeof RunStatus>;
