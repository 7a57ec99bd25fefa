/**
 * REST shapes clients read and send (packages/server/src/contract: search.ts, rest.ts,
 * executions.ts), and the events.jsonl line of a run. The zod schemas are the source of truth and
 * /openapi.json publishes them; test/protocol-types.test.ts fails when these types drift.
 */
import type { DisplayBundle, DisplayMetadata, InterfaceInfo, JsonObject } from './common.js';

/** Search filter operators (`FILTER_OPS` in contract/search.ts). */
export const FILTER_OPS = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in', 'nin', 'contains', 'exists'] as const;
export type FilterOp = (typeof FILTER_OPS)[number];

/** A filter on a config path (`ConfigFilter`) or a record path (`Filter`), as a caller may send it. */
export interface Filter {
  path: string;
  /** Default eq. */
  op?: FilterOp;
  value?: unknown;
}

/** One sort key (`SortSpec`), as a caller may send it. */
export interface SortSpec {
  by: string;
  config_layer?: 'resolved' | null;
  /** "asc" or "desc", in any case (default desc). */
  direction?: string;
}

/** `POST /v1/interfaces/search` as a caller may send it (`FindRequest`, before defaults). */
export interface FindRequest {
  module?: string | null;
  /** The record kind: "Interface" for every interface record. */
  kind?: string | null;
  /** The interface class name. */
  class_name?: string | null;
  created_by?: string | null;
  label?: string | null;
  config?: { layer?: 'resolved'; filters?: Filter[] } | null;
  filters?: Filter[];
  sort?: SortSpec[];
  include_archived?: boolean;
  include_hidden?: boolean;
  exact_total?: boolean;
  include_status?: boolean;
  limit?: number;
  offset?: number;
  cursor?: string | null;
}

/** One record of a search page (`SearchItem`). */
export interface SearchItem extends Omit<InterfaceInfo, 'cached'> {
  /** The uuid again, under the name reference clients read. */
  id: string;
  /** created_at as epoch nanoseconds (rounded in JavaScript). */
  created_at_ns: number;
  /** With include_status (left out otherwise: it reads each item's runs). */
  cached?: boolean;
  /** With include_status. */
  status?: 'draft' | 'running' | 'cached' | 'failed';
  run_count?: number;
  execution_uuid?: string | null;
}

/** `POST /v1/interfaces/search`'s answer (`SearchResponse`). */
export interface SearchResponse {
  items: SearchItem[];
  /** Every match when total_exact; else more than this many match. */
  total: number;
  total_exact: boolean;
  next_cursor: string | null;
}

/** One module of `GET /v1/project` (`ProjectModule`). */
export interface ProjectModule {
  module: string;
  kind: string | null;
  doc: string | null;
  /** Whether the module ships a widget. */
  widget: boolean;
  /** Why the module cannot be used, else null. */
  error: string | null;
}

/** `GET /v1/project` (`ProjectIndex`). */
export interface ProjectIndex {
  project: string;
  modules: ProjectModule[];
}

/** A run's status (`RunStatus`): pending → running → finished | failed | interrupted. */
export const RUN_STATUSES = ['pending', 'running', 'finished', 'failed', 'interrupted'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
/** The statuses a run ends in. */
export const ENDED_STATUSES: readonly RunStatus[] = ['finished', 'failed', 'interrupted'];

/** An execution (`ExecutionInfo`). */
export interface ExecutionInfo {
  uuid: string;
  status: RunStatus;
  /** Running now: its process is alive (or, elsewhere, its heartbeat is fresh). */
  is_active: boolean;
  is_started: boolean;
  is_finished: boolean;
  is_incomplete: boolean;
  is_live: boolean;
  /** A cancel marker is present. */
  cancelled: boolean;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  heartbeat_at: string | null;
  /** The uuids of the interfaces it runs, in order. */
  interfaces: string[];
  parent: string | null;
  created_by: string;
  pid: number | null;
  error: { exception: string; message: string; interface?: string | null } | null;
  /** The batch job of a run dispatched to Slurm; null for a local run. */
  job: { id: string; state: string | null; reason: string | null } | null;
  module: 'portico.run';
  config: JsonObject;
  version: unknown[];
  resources: JsonObject | null;
  parent_uuid: string;
  is_resumed: boolean;
  resumed_at: string | null;
  label: string | null;
}

/** A window of a run's output.log (`OutputChunk`). */
export interface OutputChunk {
  output: string;
  /** The byte offset the window starts at. */
  offset: number;
  /** The log size in bytes now: the offset of the next poll. */
  size: number;
  limit: number;
}

/**
 * One event a run passed to emit(): a line of its events.jsonl, the payload of an `event` frame
 * of /v1/executions/ws (GET /v1/protocol `runs`; no zod schema). A displayable value (a figure)
 * carries its MIME bundle as a result does, binary data as base64 text; `payload` is then the
 * value's JSON or null. A payload `{progress: 0..1, message?}` is a progress event.
 */
export interface RunEvent {
  at: string;
  /** The uuid of the interface that emitted it (null for the run itself). */
  interface: string | null;
  payload: unknown;
  display?: DisplayBundle;
  metadata?: DisplayMetadata;
}
