/**
 * The part of the browser WebSocket a session uses (injectable, so sessions run without a
 * browser), and how a frame the page sends becomes text.
 */

/** The part of the browser WebSocket the session uses. */
export interface WebSocketLike {
  readonly readyState: number;
  /** Bytes queued by send() and not yet on the network (absent: treated as 0). */
  readonly bufferedAmount?: number;
  /** Set to 'arraybuffer' so binary frames arrive as ArrayBuffers (Blobs are accepted too). */
  binaryType?: string;
  send(data: string | ArrayBuffer | ArrayBufferView | Blob): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: any) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: any) => void) | null;
}

export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocketLike;

/**
 * Opens a socket to `url` (subprotocols `['bearer', token]` when a token is given), binary frames
 * as ArrayBuffers. Throws when the environment has no WebSocket, or when the token has characters
 * a subprotocol cannot carry.
 */
export function openSocket(WebSocketImpl: WebSocketConstructor | undefined, url: string, token: string | undefined): WebSocketLike {
  const Impl = WebSocketImpl ?? (globalThis.WebSocket as unknown as WebSocketConstructor | undefined);
  if (!Impl) throw new Error('this environment has no WebSocket');
  const socket = token ? new Impl(url, ['bearer', token]) : new Impl(url);
  if ('binaryType' in socket) socket.binaryType = 'arraybuffer';
  return socket;
}

/** WebSocket readyState values. */
export const OPEN = 1;
export const CLOSING = 2;

/**
 * The JSON text of a frame the page sends. NaN and ±Infinity, which JSON.stringify writes as null,
 * go as the strings Python's worker writes them as and reads back where a float is declared
 * ("NaN", "Infinity", "-Infinity": docs/writing/values.md). Only a text with a null in it can have lost
 * one, so only that is written again with the replacer.
 */
export function frameText(frame: object): string {
  const text = JSON.stringify(frame);
  return text.includes('null') ? JSON.stringify(frame, (_key, value: unknown) => (typeof value === 'number' && !Number.isFinite(value) ? String(value) : value)) : text;
}

/** Sends a text frame; `buffers` go as binary frames right after it, in the same step (`binary_buffers` counts them). */
export function sendFrame(socket: WebSocketLike, frame: object, buffers?: Uint8Array[]): void {
  if (!buffers?.length) {
    socket.send(frameText(frame));
    return;
  }
  socket.send(frameText({ ...frame, binary_buffers: buffers.length }));
  for (const buffer of buffers) socket.send(buffer);
}
