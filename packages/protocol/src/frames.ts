/**
 * WebSocket frames of /v1/interfaces/ws (packages/server/src/contract/frames.ts), as the types a
 * client sends (before the gateway's defaults) and receives. Every frame is a JSON text frame with
 * a `type`; `id` is chosen by the client and echoed on the frames that answer it. Widget frames
 * with `binary_buffers: n` are followed at once by n binary frames, their buffers.
 */
import type { DisplayBundle, DisplayMetadata, InterfaceInfo, JsonObject, Version } from './common.js';
import type { ExecutionInfo } from './rest.js';

/** Correlation id: a string of at most 256 characters, or a number JSON carries exactly. */
export type FrameId = string | number;
/** Where a buffer goes in the state or changes: keys and list indices, e.g. `["layers", 0, "data"]`. */
export type BufferPath = Array<string | number>;

/** Client → server frames, by type. */
export interface ClientFrames {
  connect: {
    type: 'connect';
    id?: FrameId;
    /** Module path to instantiate, or an existing uuid. */
    target: string;
    version?: Version;
    /** Client-supplied id for create-by-id. */
    uuid?: string | null;
    label?: string | null;
    project?: string | null;
    meta?: JsonObject;
    /** How widget buffers reach this socket: base64 strings in the payload (default), or binary frames. */
    buffers?: 'base64' | 'binary';
  };
  call: { type: 'call'; id?: FrameId; method: string; args?: unknown[]; kwargs?: JsonObject };
  /** An upload (mode write, the default, or append; with path) or a read (mode read, with params). */
  chunk_start: { type: 'chunk_start'; id: FrameId; mode?: 'write' | 'append' | 'read'; path?: string; params?: JsonObject };
  chunk_end: { type: 'chunk_end'; id?: FrameId };
  widget_get: { type: 'widget_get'; id?: FrameId };
  widget_set: { type: 'widget_set'; id?: FrameId; changes: JsonObject; buffer_paths?: BufferPath[]; buffers?: string[]; binary_buffers?: number };
  widget_msg: { type: 'widget_msg'; id?: FrameId; content?: unknown; buffers?: string[]; binary_buffers?: number };
  release: { type: 'release'; id?: FrameId };
  ping: { type: 'ping'; id?: FrameId };
  close: { type: 'close'; id?: FrameId };
}
export type ClientFrameType = keyof ClientFrames;
export type ClientFrame = ClientFrames[ClientFrameType];

/**
 * The MIME bundle a `result`, `stream` or `event` frame carries beside its `payload` when IPython
 * could display the value: `display` by MIME type, `metadata` only when there is some; on a socket
 * connected with `buffers: binary`, binary data is null in `display` and follows as binary frames,
 * placed by `buffer_paths` (`[["image/png"]]`).
 */
export interface DisplayFields {
  display?: DisplayBundle;
  metadata?: DisplayMetadata;
  buffer_paths?: string[][];
  binary_buffers?: number;
}

/** What `chunk_done` carries: an upload's outcome. */
export interface UploadResult {
  /** The path relative to the interface folder, as the gateway normalized it. */
  path: string;
  /** Bytes of this upload now on disk. */
  bytes_written: number;
  mode: 'write' | 'append';
}

/**
 * What `instance_restarted` carries: the live instance died with its Python worker
 * (`worker_crashed`: it exited or was killed; `worker_wedged`: it stopped answering and was
 * killed; `allocation_ended`: `--workers slurm`, and Slurm ended the job it ran in;
 * `source_changed`: `portico serve --reload` restarted it on changed source).
 */
export interface InstanceRestart {
  uuid: string;
  reason: 'worker_crashed' | 'worker_wedged' | 'allocation_ended' | 'source_changed' | 'owner_lost';
  message: string;
}

/**
 * What `waiting` carries: where the Slurm job of the worker a request waits for stands, sent when
 * the wait starts and whenever Slurm's state or reason changes.
 */
export interface WaitNotice {
  job: string | null;
  /** Slurm's state: `PENDING` while the job waits for its allocation. */
  state: string;
  /** Slurm's reason while pending (`Priority`, `Resources`); null when it gives none. */
  reason: string | null;
  /** All of it as one line: `Slurm job 123: PENDING (Priority)`. */
  message: string;
}

/** Widget state or changes: binary values are null here and travel as buffers placed by `buffer_paths`. */
interface Buffered {
  buffer_paths?: BufferPath[];
  /** Base64 buffers (the compatible form; a socket connected with `buffers: binary` gets binary frames). */
  buffers?: string[];
}

/** Server → client frames of /v1/interfaces/ws, by type. */
export interface ServerFrames {
  /** Confirms the connection; the gateway sends the InterfaceInfo. */
  connected: { type: 'connected'; id?: FrameId; payload: InterfaceInfo };
  result: { type: 'result'; id?: FrameId; payload: unknown } & DisplayFields;
  stream: { type: 'stream'; id?: FrameId; payload: unknown; final: boolean } & DisplayFields;
  event: { type: 'event'; payload: unknown } & DisplayFields;
  /** What the call's own code printed or logged, as it happened, in order with its items and events. */
  output: { type: 'output'; id?: FrameId; payload: { stream: 'stdout' | 'stderr'; text: string } };
  error: { type: 'error'; id?: FrameId; payload: { message: string; code: string; issues?: unknown[]; exception?: string } };
  chunk_done: { type: 'chunk_done'; id?: FrameId; payload: UploadResult | { bytes_sent: number } };
  widget_state: { type: 'widget_state'; id?: FrameId; payload: { state: JsonObject } & Buffered; binary_buffers?: number };
  widget_change: { type: 'widget_change'; id?: FrameId; payload: { changes: JsonObject } & Buffered; binary_buffers?: number };
  widget_msg: { type: 'widget_msg'; id?: FrameId; payload: { content: unknown; buffers?: string[] }; binary_buffers?: number };
  widget_msg_done: { type: 'widget_msg_done'; id?: FrameId };
  widget_reload: { type: 'widget_reload'; payload: { asset: 'esm' | 'css'; etag: string } };
  released: { type: 'released'; id?: FrameId; payload: { uuid: string; released: boolean } };
  instance_restarted: { type: 'instance_restarted'; payload: InstanceRestart };
  pong: { type: 'pong'; id?: FrameId };
  /** The connect or call with this id waits for a worker whose Slurm job is pending (`--workers slurm`); its answer follows. */
  waiting: { type: 'waiting'; id?: FrameId; payload: WaitNotice };
}
export type ServerFrameType = keyof ServerFrames;
export type ServerFrame = ServerFrames[ServerFrameType];

/** The payload of an `error` frame. */
export type ErrorPayload = ServerFrames['error']['payload'];
/** What `chunk_done` carries: an upload's outcome, or how many bytes a read sent. */
export type ChunkDonePayload = ServerFrames['chunk_done']['payload'];


/** Client → server frames of /v1/executions/ws (attach to one run), by type. */
export interface ExecutionClientFrames {
  /** Attach to a run: `offset` is the byte of output.log to follow from (default: the last 64 KiB). */
  connect: { type: 'connect'; id?: FrameId; target: string; project?: string | null; offset?: number };
  call: { type: 'call'; id?: FrameId; method: 'status' | 'output' | 'cancel'; args?: unknown[]; kwargs?: JsonObject };
  ping: { type: 'ping'; id?: FrameId };
  close: { type: 'close'; id?: FrameId };
}

/**
 * Server → client frames of /v1/executions/ws besides `connected` (its payload the ExecutionInfo),
 * `result`, `event` (its payload a RunEvent), `error` and `pong`, by type.
 */
export interface ExecutionServerFrames {
  /** Bytes appended to output.log, in order (a bounded window each). */
  output: { type: 'output'; payload: { output: string; offset: number; size: number } };
  /** The ExecutionInfo, whenever its status or activity changes. */
  status: { type: 'status'; payload: ExecutionInfo };
}
