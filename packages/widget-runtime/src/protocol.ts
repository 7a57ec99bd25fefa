/**
 * The frames this runtime speaks on the gateway's /v1/interfaces/ws, as TypeScript types, and
 * the one place that turns an incoming text frame into a typed ServerFrame. Every frame is a JSON
 * text frame with a `type`; `id` is chosen by the client and echoed on the frames that answer it.
 */

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
  | { type: 'connect'; id: FrameId; target: string; version?: Version; uuid?: string; project?: string }
  | { type: 'widget_get'; id: FrameId }
  | { type: 'widget_set'; id: FrameId; changes: JsonObject }
  | { type: 'widget_msg'; id: FrameId; content: unknown; buffers?: string[] }
  | { type: 'ping'; id: FrameId };

/** The widget frames a model emits; the session gives them an id. */
export type ModelFrame =
  | { type: 'widget_set'; changes: JsonObject }
  | { type: 'widget_msg'; content: unknown; buffers?: string[] };

export interface ErrorPayload {
  code: string;
  message: string;
  [key: string]: unknown;
}

export type ServerFrame =
  | { type: 'connected'; id?: FrameId; payload: InterfaceInfo }
  | { type: 'widget_state'; id?: FrameId; payload: { state: JsonObject } }
  | { type: 'widget_change'; id?: FrameId; payload: { changes: JsonObject } }
  | { type: 'widget_msg'; id?: FrameId; payload: { content: unknown; buffers?: string[] } }
  | { type: 'widget_reload'; payload: { asset: 'esm' | 'css' } }
  | { type: 'event'; payload: unknown }
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
    case 'error':
      return isObject(payload) && typeof payload.code === 'string' ? (frame as ServerFrame) : undefined;
    case 'event':
    case 'pong':
      return frame as ServerFrame;
    default:
      return undefined;
  }
}
