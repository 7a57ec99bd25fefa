/**
 * The requests a session has in flight (calls and transfers), by the id their frame went out
 * with: the frames that answer an id go to its exchange until it finishes, binary frames to the
 * one exchange that receives them (the active read), and all of them fail when the socket goes.
 */
import type { FrameId, ServerFrame } from '@portico/protocol';
import { WidgetRuntimeError } from '../errors.js';
import { frameText, type WebSocketLike } from './socket.js';

/** What answers one request (a call or a transfer), until it is finished or the socket goes. */
export interface Exchange {
  /** A text frame carrying this request's id (result, stream, chunk_done or error), with the binary frames that followed it (`binary_buffers`). */
  frame(frame: ServerFrame, views: DataView[]): void;
  /** A binary frame (only for a request made with `binary: true`). */
  binary?(data: ArrayBuffer | Blob): void;
  /** The socket went away (or the session closed) before the exchange finished. */
  lost(error: WidgetRuntimeError): void;
}

/** One request's hold on the socket it went out on. */
export interface Channel {
  readonly id: FrameId;
  /** Sends a text frame on the request's socket; false once that socket is gone. */
  send(frame: Record<string, unknown> & { type: string }): boolean;
  /** Sends a binary frame on the request's socket; false once that socket is gone. */
  sendBinary(data: ArrayBuffer | ArrayBufferView): boolean;
  /** Bytes handed to the socket and not yet sent (0 once it is gone). */
  readonly bufferedAmount: number;
  /** Stops routing frames to the exchange (call once it settled). */
  finish(): void;
  /** Closes the socket, which is the only way to cancel a transfer; the session reconnects. */
  abort(error: WidgetRuntimeError): void;
}

export class Exchanges {
  readonly #byId = new Map<FrameId, Exchange>();
  /** The exchange that binary frames belong to (the active read). */
  #receiver: Exchange | undefined;

  add(id: FrameId, exchange: Exchange, binary: boolean): void {
    this.#byId.set(id, exchange);
    if (binary) this.#receiver = exchange;
  }

  /** Stops routing frames to `exchange`. */
  finish(id: FrameId, exchange: Exchange): void {
    if (this.#byId.get(id) === exchange) this.#byId.delete(id);
    if (this.#receiver === exchange) this.#receiver = undefined;
  }

  /** Hands a frame to the exchange its id belongs to; false when none does. */
  route(frame: ServerFrame, views: DataView[]): boolean {
    const exchange = 'id' in frame && frame.id !== undefined ? this.#byId.get(frame.id) : undefined;
    if (!exchange) return false;
    exchange.frame(frame, views);
    return true;
  }

  /** A binary frame that is no widget frame's buffer: the active read's. */
  binary(data: ArrayBuffer | Blob): void {
    this.#receiver?.binary?.(data);
  }

  /** The socket is gone: every exchange fails (`closed` for a deliberate close, else `connection_lost`). */
  lose(cause: WidgetRuntimeError | undefined): void {
    const exchanges = [...this.#byId.values()];
    this.#byId.clear();
    this.#receiver = undefined;
    if (exchanges.length === 0) return;
    const lost = cause
      ? new WidgetRuntimeError('connection_lost', `The connection was lost before the answer came (${cause.message})`, { cause })
      : new WidgetRuntimeError('closed', 'The connection was closed before the answer came');
    for (const exchange of exchanges) exchange.lost(lost);
  }
}

/** What a channel asks of its session. */
interface ChannelHooks {
  /** Whether `socket` is still the session's open socket. */
  current(): boolean;
  /** Binary bytes were handed to the socket (the heartbeat counts them). */
  handed(bytes: number): void;
  finish(): void;
  abort(error: WidgetRuntimeError): void;
}

/** The channel of the request sent with `id` on `socket`. */
export function channel(id: FrameId, socket: WebSocketLike, hooks: ChannelHooks): Channel {
  return {
    id,
    send: (next) => hooks.current() && (socket.send(frameText({ ...next, id })), true),
    sendBinary: (data) => {
      if (!hooks.current()) return false;
      socket.send(data);
      hooks.handed(data.byteLength);
      return true;
    },
    get bufferedAmount() {
      return hooks.current() ? (socket.bufferedAmount ?? 0) : 0;
    },
    finish: hooks.finish,
    abort: hooks.abort,
  };
}
