/**
 * The gateway's REST shapes the extension uses, as TypeScript types. They mirror the zod
 * contract in packages/server/src/contract (common.ts, search.ts, executions.ts), which is the
 * source of truth and is published at /openapi.json; only the fields read here are listed.
 */

export type JsonObject = Record<string, unknown>;

/** `InterfaceInfo` (contract/common.ts). */
export interface InterfaceInfo {
  uuid: string;
  module: string;
  kind: string;
  config: JsonObject;
  /** null when no context folded into the identity. */
  predicate: JsonObject | null;
  version: unknown[];
  label: string | null;
  meta: JsonObject;
  created_by: string;
  created_at: string;
  archived: boolean;
}

export const FILTER_OPS = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in', 'nin', 'contains', 'exists'] as const;
export type FilterOp = (typeof FILTER_OPS)[number];

/** A filter on a config path (`ConfigFilter`) or a record path (`Filter`). */
export interface Filter {
  path: string;
  op?: FilterOp;
  value?: unknown;
}

/** `FindRequest` as a caller may send it (contract/search.ts). */
export interface FindRequest {
  module?: string | null;
  kind?: string | null;
  created_by?: string | null;
  label?: string | null;
  config?: { layer?: 'resolved'; filters?: Filter[] } | null;
  filters?: Filter[];
  sort?: Array<{ by: string; config_layer?: 'resolved' | null; direction?: 'asc' | 'desc' }>;
  include_archived?: boolean;
  limit?: number;
  offset?: number;
  cursor?: string | null;
}

export interface SearchResponse {
  items: InterfaceInfo[];
  /** Every match when total_exact; else more than this many match (the gateway's total rule). */
  total: number;
  total_exact: boolean;
  next_cursor: string | null;
}

/** One module of `GET /v1/project` (`ProjectModule`, contract/rest.ts). */
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

export type RunStatus = 'pending' | 'running' | 'finished' | 'failed' | 'interrupted';

/** `ExecutionInfo` (contract/executions.ts). */
export interface ExecutionInfo {
  uuid: string;
  status: RunStatus;
  is_active: boolean;
  cancelled: boolean;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  interfaces: string[];
  created_by: string;
  error: { exception: string; message: string; interface?: string | null } | null;
}

/** `OutputChunk`: a window of a run's output.log. */
export interface OutputChunk {
  output: string;
  offset: number;
  size: number;
  limit: number;
}

export const ENDED_STATUSES: readonly RunStatus[] = ['finished', 'failed', 'interrupted'];

/**
 * One event a run passed to emit(): a line of its events.jsonl, the payload of an `event` frame
 * of /v1/executions/ws (contract/frames.ts `event`, run.py `_emit`). A displayable value (a figure)
 * carries its MIME bundle as a result does (`DisplayBundle`, `DisplayMetadata` in
 * contract/common.ts): `display` maps a MIME type to its data, binary data as base64 text;
 * `payload` is then the value's JSON or null. A payload `{progress: 0..1, message?}` is a
 * progress event.
 */
export interface RunEvent {
  at: string;
  /** The uuid of the interface that emitted it (null for the run itself). */
  interface: string | null;
  payload: unknown;
  display?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}
