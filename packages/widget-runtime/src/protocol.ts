/**
 * The frames this runtime speaks on the gateway's /v1/interfaces/ws, as TypeScript types, and
 * the one place that turns an incoming text frame into a typed ServerFrame. Every frame is a JSON
 * text frame with a `type`; `id` is chosen by the client and echoed on the frames that answer it.
 * Transfers (chunk_start … chunk_done) also carry raw binary frames, which have no id: one transfer
 * per socket at a time (see net/transfers.ts). Widget frames with `binary_buffers: n` are followed
 * at once by n binary frames, their buffers (the socket asks for that with connect `buffers: binary`).
 */

import type { BufferPath } from './model/buffers.js';

export type FrameId = number | string;
export type JsonObject = Record<string, unknown>;
/** Version list applied to the interface's Config (dicts, '~name', 'a.b=value'). */
export type Version = Array<string | JsonObject>;

/** What `connected` carries: the gateway's InterfaceInfo. */
export interface InterfaceInfo {
  uuid: string;
  module: string;
  config: JsonObject;
  label?: string | null;
  [key: string]: unknown;
}

export type ClientFrame =
  | { type: 'connect'; id: FrameId; target: string; version?: Version; uuid?: string; project?: string; buffers?: 'binary' }
  | { type: 'widget_get'; id: FrameId }
  | { type: 'widget_set'; id: FrameId; changes: JsonObject; buffer_paths?: BufferPath[]; binary_buffers?: number }
  | { type: 'widget_msg'; id: FrameId; content: unknown; binary_buffers?: number }
  | { type: 'ping'; id: FrameId }
  | { type: 'call'; id: FrameId; method: string; args?: unknown[]; kwargs?: JsonObject }
  | { type: 'chunk_start'; id: FrameId; mode: 'write' | 'append'; path: string }
  | { type: 'chunk_start'; id: FrameId; mode: 'read'; params: JsonObject }
  | { type: 'chunk_end'; id: FrameId };

/** What `chunk_done` carries: an upload's outcome, or how many bytes a read sent. */
export interface UploadResult {
  /** The path relative to the interface folder, as the gateway normalized it. */
  path: string;
  /** Bytes of this upload now on disk. */
  bytes_written: number;
  mode: 'write' | 'append';
}
export type ChunkDonePayload = UploadResult | { bytes_sent: number };

/**
 * The widget frames a model emits; the session gives them an id and sends `buffers` as binary
 * frames right after the frame.
 */
export type ModelFrame =
  | { type: 'widget_set'; changes: JsonObject; buffer_paths?: BufferPath[]; buffers?: Uint8Array[] }
  | { type: 'widget_msg'; content: unknown; buffers?: Uint8Array[] };

/** Buffers of a server frame: base64 strings in the payload (older gateways), or binary frames after it. */
interface Buffered {
  binary_buffers?: number;
}

/**
 * A value's MIME bundle beside its `payload` (gateway README "Rich results"; contract/common.ts
 * DisplayBundle and DisplayMetadata), on `result`, `stream` and `event` frames: `display` maps a
 * MIME type to its data (text types strings, JSON types JSON values, binary types base64 text, or
 * null with the bytes in the binary frames right after the frame, placed by `buffer_paths`
 * (`[["image/png"]]`) in order); `metadata` by MIME type, only when there is some.
 */
export interface DisplayFields extends Buffered {
  display?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  buffer_paths?: BufferPath[];
}

/**
 * What `instance_restarted` carries: the live instance died with its Python worker
 * (`worker_crashed`: it exited or was killed; `worker_wedged`: it stopped answering and was
 * killed; `source_changed`: `portico serve --reload` restarted it on changed source). The gateway
 * restarts the worker at once and makes the instance again on its next use, with its saved widget
 * state.
 */
export interface InstanceRestart {
  uuid: string;
  reason: 'worker_crashed' | 'worker_wedged' | 'source_changed' | (string & {});
  message: string;
}

export interface ErrorPayload {
  code: string;
  message: string;
  [key: string]: unknown;
}

export type ServerFrame =
  | { type: 'connected'; id?: FrameId; payload: InterfaceInfo }
  | ({ type: 'widget_state'; id?: FrameId; payload: { state: JsonObject; buffer_paths?: BufferPath[]; buffers?: string[] } } & Buffered)
  | ({ type: 'widget_change'; id?: FrameId; payload: { changes: JsonObject; buffer_paths?: BufferPath[]; buffers?: string[] } } & Buffered)
  | ({ type: 'widget_msg'; id?: FrameId; payload: { content: unknown; buffers?: string[] } } & Buffered)
  | { type: 'widget_reload'; payload: { asset: 'esm' | 'css' } }
  | { type: 'instance_restarted'; payload: InstanceRestart }
  | ({ type: 'event'; payload: unknown } & DisplayFields)
  | ({ type: 'result'; id?: FrameId; payload: unknown } & DisplayFields)
  | ({ type: 'stream'; id?: FrameId; payload: unknown; final: boolean } & DisplayFields)
  | { type: 'chunk_done'; id?: FrameId; payload: ChunkDonePayload }
  | { type: 'error'; id?: FrameId; payload: ErrorPayload }
  | { type: 'pong'; id?: FrameId };

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Parses one text frame. Returns undefined for frames this runtime does not know or that miss
 * the fields it relies on (a newer gateway may send more types; they are ignored, not fatal).
 */
export function parseServerFrame(text: string): ServerFrame | undefined {
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(frame) || typeof frame.type !== 'string') return undefined;
  const payload = frame.payload;
  switch (frame.type) {
    case 'connected':
      return isObject(payload) && typeof payload.uuid === 'string' ? (frame as ServerFrame) : undefined;
    case 'widget_state':
      return isObject(payload) && isObject(payload.state) ? (frame as ServerFrame) : undefined;
    case 'widget_change':
      return isObject(payload) && isObject(payload.changes) ? (frame as ServerFrame) : undefined;
    case 'widget_msg':
      return isObject(payload) && (payload.buffers === undefined || Array.isArray(payload.buffers)) ? (frame as ServerFrame) : undefined;
    case 'widget_reload':
      return isObject(payload) && (payload.asset === 'esm' || payload.asset === 'css') ? (frame as ServerFrame) : undefined;
    case 'instance_restarted':
      return isObject(payload) && typeof payload.uuid === 'string' && typeof payload.reason === 'string'
        ? ({ type: 'instance_restarted', payload: { uuid: payload.uuid, reason: payload.reason, message: typeof payload.message === 'string' ? payload.message : '' } } as ServerFrame)
        : undefined;
    case 'error':
      return isObject(payload) && typeof payload.code === 'string' ? (frame as ServerFrame) : undefined;
    case 'chunk_done':
      return isObject(payload) && (typeof payload.bytes_sent === 'number' || (typeof payload.path === 'string' && typeof payload.bytes_written === 'number'))
        ? (frame as ServerFrame)
        : undefined;
    case 'stream':
      return typeof frame.final === 'boolean' ? (frame as ServerFrame) : undefined;
    // Their display fields are checked where the value is made (display.ts), so a malformed one
    // fails its call rather than leaving it unanswered.
    case 'result':
    case 'event':
    case 'pong':
      return frame as ServerFrame;
    default:
      return undefined;
  }
}

