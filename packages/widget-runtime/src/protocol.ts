/**
 * The one place that turns an incoming text frame of the gateway's /v1/interfaces/ws into a typed
 * ServerFrame, and the frames a model emits. The wire types are @portico/protocol's (the zod
 * contract written once for clients): every frame is a JSON text frame with a `type`; `id` is
 * chosen by the client and echoed on the frames that answer it. Transfers (chunk_start …
 * chunk_done) also carry raw binary frames, which have no id: one transfer per socket at a time
 * (see net/transfers.ts). Widget frames with `binary_buffers: n` are followed at once by n binary
 * frames, their buffers (the socket asks for that with connect `buffers: binary`).
 */
import type { BufferPath, JsonObject, ServerFrame } from '@portico/protocol';

/**
 * The widget frames a model emits; the session gives them an id and sends `buffers` as binary
 * frames right after the frame.
 */
export type ModelFrame =
  | { type: 'widget_set'; changes: JsonObject; buffer_paths?: BufferPath[]; buffers?: Uint8Array[] }
  | { type: 'widget_msg'; content: unknown; buffers?: Uint8Array[] };

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
    case 'waiting':
      return isObject(payload) && typeof payload.message === 'string' ? (frame as ServerFrame) : undefined;
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

