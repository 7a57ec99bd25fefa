/**
 * @portico/protocol: the gateway's wire contract as TypeScript types, for clients (the widget
 * runtime, the lab extension). Written once from the zod contract in packages/server/src/contract,
 * which validates frames and bodies and feeds /openapi.json and /v1/protocol; a test
 * (test/protocol-types.test.ts) fails when the two drift. No zod here: import it with `import type`
 * (the two enumerations, FILTER_OPS and RUN_STATUSES, are the only values).
 */
export type { DisplayBundle, DisplayMetadata, ErrorDetail, InterfaceInfo, Issue, JsonObject, Version, VersionItem } from './common.js';
export type {
  BufferPath,
  ChunkDonePayload,
  ClientFrame,
  ClientFrames,
  ClientFrameType,
  DisplayFields,
  ErrorPayload,
  ExecutionClientFrames,
  ExecutionServerFrames,
  FrameId,
  InstanceRestart,
  ServerFrame,
  ServerFrames,
  ServerFrameType,
  UploadResult,
  WaitNotice,
} from './frames.js';
export { ENDED_STATUSES, FILTER_OPS, RUN_STATUSES } from './rest.js';
export type { ExecutionInfo, Filter, FilterOp, FindRequest, OutputChunk, ProjectIndex, ProjectModule, RunEvent, RunStatus, SearchItem, SearchResponse, SortSpec } from './rest.js';
