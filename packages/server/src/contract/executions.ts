/** Request and response bodies of /v1/executions and the lifecycle endpoints. */
import { QueryBoolean, Version } from './common.js';
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

export const DispatchRequest = z
  .object({
    interfaces: z.array(DispatchInterface).min(1).max(64).describe('The interfaces to run, in order, in one run process.'),
    parent: z.string().min(1).max(128).nullable().optional().describe('The execution that dispatched this one, if any.'),
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
  })
  .openapi('ExecutionInfo');

export const ExecutionListQuery = z.object({
  active: QueryBoolean.optional().describe('Only runs that are (not) running now.'),
  incomplete: QueryBoolean.optional().describe('Only runs that did (not) end without finishing.'),
  pending: QueryBoolean.optional().describe('Only runs that have (not) started yet.'),
  parent: z.string().min(1).max(128).optional().describe('Only runs dispatched by this execution.'),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

export const InterfaceExecutionsQuery = ExecutionListQuery.pick({ active: true, limit: true });

export const OutputQuery = z.object({
  offset: z.coerce.number().int().min(0).optional().describe('Read forward from this byte; poll with the returned size to get only new bytes.'),
  tail: z.coerce.number().int().min(0).optional().describe('Read the last N bytes (capped by limit).'),
  limit: z.coerce.number().int().min(1).optional().describe('At most this many bytes (default 65536, capped at 262144).'),
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
export type ExecutionInfo = z.infer<typeof ExecutionInfo>;
export type OutputQuery = z.infer<typeof OutputQuery>;
export type RunStatus = z.infer<typeof RunStatus>;
