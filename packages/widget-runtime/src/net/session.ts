/**
 * One WebSocket session with the gateway for one interface, and the model it keeps in sync.
 *
 * Handshake: open the socket (subprotocols `['bearer', token]` when a token is given) →
 * `connect` → `connected` → `widget_get` → `widget_state` → the model is resynced, the session
 * is `open`, and what was queued offline is sent. The first handshake must succeed (`open()`
 * rejects otherwise); after that a dropped socket is reopened with capped, jittered exponential
 * backoff and the handshake is repeated by uuid (`connect {target: uuid}`). A handshake refused
 * with `unauthorized`, `forbidden`, `not_found` or `unknown_module` (a uuid whose record is gone
 * reads as no module) ends the session (`closed`); other refusals are retried. A ping every
 * pingIntervalMs detects sockets that died silently.
 *
 * `instance_restarted` (the live instance died with its Python worker; the gateway makes it again on
 * its next use, with its saved widget state) is answered the way a reconnect is: a `widget_get`
 * whose `widget_state` resyncs the model (change events for the keys that differ, pushes that came
 * meanwhile win), on the same socket; the event goes to the page. A refused read drops the socket,
 * so the reconnect retries it with backoff (e.g. `worker_unavailable` while the worker backs off).
 *
 * Without a widget (`widget: false`, for `connect()`), the handshake ends at `connected`: there is
 * no `widget_get` and no model. Calls and transfers (`request()`, used by transfers.ts) wait for
 * the session to be open, get the frames that answer their id, and fail with `connection_lost`
 * when the socket goes; binary frames go to the one transfer that receives them, except the
 * buffers of a widget frame (`binary_buffers: n`: the n binary frames right after it), which go
 * with that frame. The socket asks for buffers that way (connect `buffers: binary`); base64
 * buffers in the payload, from older gateways, are read too.
 *
 * The WebSocket constructor is injectable, so this runs without a browser.
 */
import { decodeBuffers } from '../base64.js';
import { valueOfFrame } from '../display.js';
import { WidgetRuntimeError, abortError, toRuntimeError } from '../errors.js';
import { withDefaults, type Limits } from '../limits.js';
import { TypedEvents } from '../model/events.js';
import { putBuffers } from '../model/buffers.js';
import { WidgetModel, type ModelOutbox, type WidgetManager } from '../model/model.js';
import {
  parseServerFrame,
  type ClientFrame,
  type ErrorPayload,
  type FrameId,
  type InstanceRestart,
  type InterfaceInfo,
  type JsonObject,
  type ServerFrame,
  type Version,
} from '../protocol.js';
import { backoffDelay } from './backoff.js';
import { gatewayUrls } from './urls.js';

export type ConnectionStatus = 'connecting' | 'open' | 'reconnecting' | 'closed';

/**
 * The JSON text of a frame the page sends. NaN and ±Infinity, which JSON.stringify writes as null,
 * go as the strings Python's worker writes them as and reads back where a float is declared
 * ("NaN", "Infinity", "-Infinity": README "Values"). Only a text with a null in it can have lost
 * one, so only that is written again with the replacer.
 */
function frameText(frame: object): string {
  const text = JSON.stringify(frame);
  return text.includes('null') ? JSON.stringify(frame, (_key, value: unknown) => (typeof value === 'number' && !Number.isFinite(value) ? String(value) : value)) : text;
}

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

/** Which interface to connect to, and how. */
export interface ConnectOptions {
  /** Gateway base URL, e.g. `https://gw.example.org` (a path prefix is kept). */
  url: string;
  /** Bearer token: sent as the WebSocket subprotocol and as the Authorization header on assets. */
  token?: string;
  /** Module name to instantiate (e.g. `counter`), or an existing interface uuid. */
  target?: string;
  /** Existing interface uuid; with `target`, the uuid to create the instance under. */
  uuid?: string;
  /** Version list for the interface's Config (only used when creating). */
  version?: Version;
  /** Project directory to bind (`?project=` on every URL and in `connect`). */
  project?: string;
}

export interface SessionDeps {
  /** What the model's `widget_manager` is (required unless `widget` is false). */
  widgetManager?: WidgetManager;
  WebSocket?: WebSocketConstructor;
  limits?: Partial<Limits>;
  /** Source of reconnect jitter (tests fix it). */
  random?: () => number;
  /** false: the interface has no widget to sync; the handshake ends at `connected` (default true). */
  widget?: boolean;
}

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

export type SessionEvents = {
  status: [status: ConnectionStatus, error: WidgetRuntimeError | undefined];
  /** What the interface passed to emit(): its JSON payload, or a `Display` when it has a MIME bundle (a figure). */
  event: [payload: unknown];
  /** The widget's module or stylesheet changed on the gateway. */
  reload: [asset: 'esm' | 'css'];
  /** A reconnect completed and the model was resynced (pushes may have been missed meanwhile). */
  resynced: [];
  /**
   * The live instance died with its Python worker and is made again on next use (with its saved
   * widget state). A widget session has already asked for the state again when this fires; the
   * model applies it as it arrives, with change events for the keys that differ.
   */
  instance_restarted: [restart: InstanceRestart];
  error: [error: WidgetRuntimeError];
};

/** A widget frame and the buffers of it received so far. */
interface Awaiting {
  frame: ServerFrame;
  count: number;
  views: DataView[];
}

/** Handshake refusals that retrying cannot fix. */
const FATAL_CODES = new Set(['unauthorized', 'forbidden', 'not_found', 'unknown_module']);
const OPEN = 1;
const CLOSING = 2;

export class Session {
  readonly events = new TypedEvents<SessionEvents>();
  readonly #options: ConnectOptions;
  readonly #deps: SessionDeps;
  readonly #limits: Limits;
  readonly #socketUrl: string;
  #socket: WebSocketLike | undefined;
  #status: ConnectionStatus = 'connecting';
  #info: InterfaceInfo | undefined;
  #model: WidgetModel | undefined;
  #nextId = 1;
  #connectId: FrameId | undefined;
  #getId: FrameId | undefined;
  /**
   * Changes pushed while our `widget_get` is answered: the worker may take its snapshot before a
   * concurrent call changes the state and pushes it, so the snapshot can arrive after (and be
   * older than) the push. Those keys keep the pushed value.
   */
  #pushedDuringGet: JsonObject | undefined;
  #ready = false;
  #everReady = false;
  #closed = false;
  #attempt = 0;
  #awaitingPong = false;
  /** Something arrived, or upload bytes left, since the last heartbeat tick. */
  #activity = false;
  /** Binary bytes handed to the current socket, and the most of them seen gone (for the heartbeat). */
  #binaryHanded = 0;
  #binaryGone = 0;
  readonly #exchanges = new Map<FrameId, Exchange>();
  /** The exchange that binary frames belong to (the active read). */
  #receiver: Exchange | undefined;
  /** A widget frame whose buffers (the binary frames right after it) are still coming. */
  #awaiting: Awaiting | undefined;
  #handshakeTimer: ReturnType<typeof setTimeout> | undefined;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #pingTimer: ReturnType<typeof setInterval> | undefined;
  #opening: { resolve: () => void; reject: (error: WidgetRuntimeError) => void } | undefined;

  readonly #outbox: ModelOutbox = {
    send: ({ buffers, ...frame }) => (this.#ready ? this.#sendNow(frame, buffers) : undefined),
  };

  constructor(options: ConnectOptions, deps: SessionDeps) {
    if (!options.target && !options.uuid) throw new WidgetRuntimeError('invalid_argument', 'Give a target (module name or uuid) or a uuid');
    if (deps.widget !== false && !deps.widgetManager) throw new Error('A widget session needs a widgetManager');
    this.#options = options;
    this.#deps = deps;
    this.#limits = withDefaults(deps.limits);
    this.#socketUrl = gatewayUrls(options.url, options.project).socket;
  }

  get status(): ConnectionStatus {
    return this.#status;
  }

  /** The connected interface (after `open()` resolved). */
  get info(): InterfaceInfo {
    if (!this.#info) throw new WidgetRuntimeError('connection_failed', 'The session is not connected yet');
    return this.#info;
  }

  /** The synced model (after `open()` resolved; sessions with `widget: false` have none). */
  get model(): WidgetModel {
    if (!this.#model) {
      throw new WidgetRuntimeError('connection_failed', this.#deps.widget === false ? 'This connection syncs no widget' : 'The session is not connected yet');
    }
    return this.#model;
  }

  /** Resolves once the session is open (now, or after the reconnect under way); rejects once closed. */
  whenOpen(signal?: AbortSignal): Promise<void> {
    if (this.#closed) return Promise.reject(new WidgetRuntimeError('closed', 'The connection is closed'));
    if (this.#ready && this.#socket?.readyState === OPEN) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const settle = (error?: WidgetRuntimeError) => {
        unsubscribe();
        signal?.removeEventListener('abort', onAbort);
        if (error) reject(error);
        else resolve();
      };
      const onAbort = () => settle(abortError(signal!));
      const unsubscribe = this.events.on('status', (status, error) => {
        if (status === 'open') settle();
        else if (status === 'closed') settle(new WidgetRuntimeError('closed', `The connection is closed${error ? `: ${error.message}` : ''}`, { cause: error }));
      });
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Sends a request frame with a fresh id once the session is open, and routes the frames that
   * answer it to `exchange` until `channel.finish()`. With `binary`, binary frames go to it too
   * (one such request at a time; transfers.ts queues them).
   */
  async request(frame: Record<string, unknown> & { type: string }, exchange: Exchange, options: { signal?: AbortSignal; binary?: boolean } = {}): Promise<Channel> {
    for (;;) {
      await this.whenOpen(options.signal);
      const socket = this.#socket!;
      const id = this.#sendNow(frame);
      // The socket closed between the open status and now: wait for the next one.
      if (id === undefined) continue;
      this.#exchanges.set(id, exchange);
      if (options.binary) this.#receiver = exchange;
      const current = () => socket === this.#socket && socket.readyState === OPEN;
      return {
        id,
        send: (next) => current() && (socket.send(frameText({ ...next, id })), true),
        sendBinary: (data) => {
          if (!current()) return false;
          socket.send(data);
          this.#binaryHanded += data.byteLength;
          return true;
        },
        get bufferedAmount() {
          return current() ? (socket.bufferedAmount ?? 0) : 0;
        },
        finish: () => {
          if (this.#exchanges.get(id) === exchange) this.#exchanges.delete(id);
          if (this.#receiver === exchange) this.#receiver = undefined;
        },
        abort: (error) => this.#drop(socket, error),
      };
    }
  }

  /** Runs the first handshake; resolves once the model holds the server's state. */
  open(): Promise<void> {
    if (this.#opening || this.#everReady || this.#closed) throw new Error('Session.open() may be called once');
    const opened = new Promise<void>((resolve, reject) => (this.#opening = { resolve, reject }));
    this.#dial();
    return opened;
  }

  /** Closes for good: no reconnect. Idempotent. */
  close(): void {
    this.#end(undefined);
  }

  #dial(): void {
    this.#retryTimer = undefined;
    const { token } = this.#options;
    const WebSocketImpl = this.#deps.WebSocket ?? (globalThis.WebSocket as unknown as WebSocketConstructor | undefined);
    let socket: WebSocketLike;
    try {
      if (!WebSocketImpl) throw new Error('this environment has no WebSocket');
      socket = token ? new WebSocketImpl(this.#socketUrl, ['bearer', token]) : new WebSocketImpl(this.#socketUrl);
    } catch (error) {
      // A token with characters a subprotocol cannot carry makes the constructor throw.
      this.#end(toRuntimeError(error, 'connection_failed'));
      return;
    }
    this.#socket = socket;
    this.#binaryHanded = this.#binaryGone = 0;
    if ('binaryType' in socket) socket.binaryType = 'arraybuffer';
    this.#handshakeTimer = setTimeout(
      () => this.#drop(socket, new WidgetRuntimeError('handshake_timeout', `No answer from ${this.#socketUrl} within ${this.#limits.handshakeTimeoutMs} ms`)),
      this.#limits.handshakeTimeoutMs,
    );
    socket.onopen = () => {
      this.#connectId = this.#sendNow(this.#connectFrame());
    };
    socket.onmessage = (event) => {
      if (socket !== this.#socket) return;
      this.#activity = true;
      const { data } = event;
      if (typeof data === 'string') this.#receive(data);
      else if (this.#awaiting && data instanceof ArrayBuffer) this.#collect(this.#awaiting, data);
      else if (data instanceof ArrayBuffer || (typeof Blob !== 'undefined' && data instanceof Blob)) this.#receiver?.binary?.(data);
    };
    socket.onclose = (event) => {
      const reason = event.reason ? `: ${event.reason}` : '';
      this.#drop(socket, new WidgetRuntimeError('connection_failed', `The connection to ${this.#socketUrl} closed (${event.code}${reason})`));
    };
    // The browser gives no detail on errors and always follows with close.
    socket.onerror = () => undefined;
  }

  /** First time: the caller's target (and uuid/version); after that: the uuid it resolved to. */
  #connectFrame(): Omit<Extract<ClientFrame, { type: 'connect' }>, 'id'> {
    const { target, uuid, version, project } = this.#options;
    const binding = { ...(project ? { project } : {}), buffers: 'binary' as const };
    if (this.#info) return { type: 'connect', target: this.#info.uuid, ...binding };
    return {
      type: 'connect',
      target: (target ?? uuid)!,
      ...(target && uuid ? { uuid } : {}),
      ...(version ? { version } : {}),
      ...binding,
    };
  }

  /** Sends a frame with a fresh id; `buffers` go as binary frames right after it, in the same step. */
  #sendNow(frame: Record<string, unknown> & { type: string }, buffers?: Uint8Array[]): FrameId | undefined {
    const socket = this.#socket;
    if (!socket || socket.readyState !== OPEN) return undefined;
    const id = this.#nextId++;
    if (!buffers?.length) {
      socket.send(frameText({ ...frame, id }));
      return id;
    }
    socket.send(frameText({ ...frame, id, binary_buffers: buffers.length }));
    for (const buffer of buffers) socket.send(buffer);
    return id;
  }

  #receive(text: string): void {
    if (this.#awaiting) {
      const { frame, count, views } = this.#awaiting;
      this.#awaiting = undefined;
      this.#report(new WidgetRuntimeError('invalid_frame', `A ${frame.type} frame announced ${count} buffers but the next frame came after ${views.length}`));
    }
    const frame = parseServerFrame(text);
    if (!frame) return;
    const count = 'binary_buffers' in frame ? frame.binary_buffers : undefined;
    if (typeof count === 'number' && count > 0) {
      this.#awaiting = { frame, count, views: [] };
      return;
    }
    this.#deliver(frame, []);
  }

  #collect(awaiting: Awaiting, data: ArrayBuffer): void {
    awaiting.views.push(new DataView(data));
    if (awaiting.views.length < awaiting.count) return;
    this.#awaiting = undefined;
    this.#deliver(awaiting.frame, awaiting.views);
  }

  /** Routes one frame; `views` are the buffers that came as binary frames after it. */
  #deliver(frame: ServerFrame, views: DataView[]): void {
    const exchange = 'id' in frame && frame.id !== undefined ? this.#exchanges.get(frame.id) : undefined;
    if (exchange) {
      exchange.frame(frame, views);
      return;
    }
    switch (frame.type) {
      case 'connected':
        if (frame.id === this.#connectId) this.#onConnected(frame.payload);
        return;
      case 'widget_state': {
        const state = this.#withBuffers(frame, frame.payload.state, views);
        if (!state || frame.id === undefined || frame.id !== this.#getId) return;
        if (this.#ready) this.#applyState(state); // the re-read after instance_restarted
        else this.#onState(state);
        return;
      }
      case 'widget_change': {
        const changes = this.#withBuffers(frame, frame.payload.changes, views);
        if (!changes) return;
        if (this.#pushedDuringGet) Object.assign(this.#pushedDuringGet, changes);
        this.#model?.applyChanges(changes, frame.id);
        return;
      }
      case 'widget_msg': {
        const buffers = this.#buffersOf(frame, views);
        if (buffers) this.#model?.receiveMessage(frame.payload.content, buffers);
        return;
      }
      case 'widget_reload':
        this.events.emit('reload', frame.payload.asset);
        return;
      case 'instance_restarted':
        this.#onRestarted(frame.payload);
        return;
      case 'event': {
        let value: unknown;
        try {
          value = valueOfFrame(frame, views);
        } catch (error) {
          this.#report(error as WidgetRuntimeError);
          return;
        }
        this.events.emit('event', value);
        return;
      }
      case 'pong':
        this.#awaitingPong = false;
        return;
      case 'error':
        this.#onError(frame.id, frame.payload);
        return;
      default:
        // result, stream, chunk_done of a request already settled (e.g. a stream after call() refused it).
        return;
    }
  }

  #onConnected(info: InterfaceInfo): void {
    this.#info = info;
    if (this.#deps.widget === false) {
      this.#onState(undefined);
      return;
    }
    this.#model ??= new WidgetModel(info.uuid, {
      outbox: this.#outbox,
      widgetManager: this.#deps.widgetManager!,
      offlineQueueMessages: this.#limits.offlineQueueMessages,
    });
    this.#readState();
  }

  /** Asks for the widget's full state (`widget_get`); its `widget_state` resyncs the model. */
  #readState(): void {
    this.#pushedDuringGet = {};
    this.#getId = this.#sendNow({ type: 'widget_get' });
  }

  /**
   * The full state answering our `widget_get` into the model: keys that differ change (with their
   * events), keys with a local write keep it, and changes pushed while the read was answered win.
   */
  #applyState(state: JsonObject): void {
    this.#model?.resync({ ...state, ...this.#pushedDuringGet });
    this.#pushedDuringGet = undefined;
  }

  /**
   * The instance died with its worker. Its state is read again as after a reconnect (during a
   * handshake, the read replaces the one in flight, which the death may have cut short).
   */
  #onRestarted(restart: InstanceRestart): void {
    if (this.#info && restart.uuid !== this.#info.uuid) return;
    if (this.#model && (this.#ready || this.#getId !== undefined)) this.#readState();
    this.events.emit('instance_restarted', restart);
  }

  #onState(state: JsonObject | undefined): void {
    clearTimeout(this.#handshakeTimer);
    const model = this.#model;
    if (state) this.#applyState(state);
    this.#ready = true;
    this.#attempt = 0;
    const first = !this.#everReady;
    this.#everReady = true;
    this.#startHeartbeat();
    this.#setStatus('open', undefined);
    model?.flush();
    if (first) {
      this.#opening?.resolve();
      this.#opening = undefined;
    } else {
      this.events.emit('resynced');
    }
  }

  /** A frame's buffers: the binary frames that followed it, else its base64 ones; undefined (reported) when malformed. */
  #buffersOf(frame: ServerFrame & { payload: { buffers?: string[] } }, views: DataView[]): DataView[] | undefined {
    if (views.length > 0) return views;
    try {
      return decodeBuffers(frame.payload.buffers);
    } catch (error) {
      this.#report(new WidgetRuntimeError('invalid_frame', `A ${frame.type} frame carried buffers that are not base64`, { cause: error }));
      return undefined;
    }
  }

  /** State or changes with their binary values back in place (DataViews at `buffer_paths`). */
  #withBuffers(frame: ServerFrame & { payload: { buffers?: string[]; buffer_paths?: unknown } }, values: JsonObject, views: DataView[]): JsonObject | undefined {
    const buffers = this.#buffersOf(frame, views);
    if (!buffers) return undefined;
    try {
      return putBuffers(values, frame.payload.buffer_paths, buffers);
    } catch (error) {
      this.#report(new WidgetRuntimeError('invalid_frame', `A ${frame.type} frame's buffer_paths do not fit its buffers: ${(error as Error).message}`, { cause: error }));
      return undefined;
    }
  }

  #onError(id: FrameId | undefined, payload: ErrorPayload): void {
    const error = new WidgetRuntimeError(payload.code, payload.message);
    // Binary frames of an upload the gateway already refused: that refusal reached its caller.
    if (id === undefined && payload.code === 'no_active_upload') return;
    if (id !== undefined && (id === this.#connectId || id === this.#getId)) {
      if (!this.#everReady || FATAL_CODES.has(payload.code)) this.#end(error);
      else if (this.#socket) this.#drop(this.#socket, error);
      return;
    }
    // A rejected widget_set (e.g. read_only) has already been rolled back by the model.
    if (id !== undefined) this.#model?.reject(id);
    this.#report(error);
  }

  #report(error: WidgetRuntimeError): void {
    console.warn(`[portico-widget] ${error.code}: ${error.message}`);
    this.events.emit('error', error);
  }

  #startHeartbeat(): void {
    clearInterval(this.#pingTimer);
    this.#awaitingPong = false;
    this.#activity = false;
    this.#pingTimer = setInterval(() => {
      const socket = this.#socket;
      if (!socket) return;
      // A ping can wait behind megabytes of a transfer on a slow link: bytes still moving in
      // either direction prove the socket alive as well as a pong does.
      const gone = this.#binaryHanded - (socket.bufferedAmount ?? 0);
      if (gone > this.#binaryGone) {
        this.#binaryGone = gone;
        this.#activity = true;
      }
      if (this.#awaitingPong && !this.#activity) {
        this.#drop(socket, new WidgetRuntimeError('connection_failed', 'The gateway stopped answering pings'));
        return;
      }
      this.#activity = false;
      if (this.#awaitingPong) return;
      this.#awaitingPong = true;
      this.#sendNow({ type: 'ping' });
    }, this.#limits.pingIntervalMs);
  }

  /** The socket is gone (closed, timed out, or refused): reconnect later, or end if it never worked. */
  #drop(socket: WebSocketLike, error: WidgetRuntimeError): void {
    if (socket !== this.#socket) return;
    this.#release(error);
    if (this.#closed) return;
    if (!this.#everReady) {
      this.#end(error);
      return;
    }
    const delay = backoffDelay(this.#attempt++, this.#limits, this.#deps.random);
    this.#setStatus('reconnecting', error);
    this.#retryTimer = setTimeout(() => this.#dial(), delay);
  }

  /**
   * Detaches and closes the current socket; unacknowledged sets go back to the model's queue,
   * and requests waiting for an answer fail (`closed` for a deliberate close, else `connection_lost`).
   */
  #release(cause: WidgetRuntimeError | undefined): void {
    const socket = this.#socket;
    this.#socket = undefined;
    const exchanges = [...this.#exchanges.values()];
    this.#exchanges.clear();
    this.#receiver = undefined;
    this.#awaiting = undefined;
    if (exchanges.length > 0) {
      const lost = cause
        ? new WidgetRuntimeError('connection_lost', `The connection was lost before the answer came (${cause.message})`, { cause })
        : new WidgetRuntimeError('closed', 'The connection was closed before the answer came');
      for (const exchange of exchanges) exchange.lost(lost);
    }
    clearTimeout(this.#handshakeTimer);
    clearInterval(this.#pingTimer);
    this.#ready = false;
    this.#connectId = this.#getId = this.#pushedDuringGet = undefined;
    this.#model?.disconnected();
    if (!socket) return;
    socket.onopen = socket.onmessage = socket.onclose = socket.onerror = null;
    try {
      if (socket.readyState < CLOSING) socket.close(1000);
    } catch {
      // Closing a socket that is still connecting can throw in some engines; it is dropped anyway.
    }
  }

  /** Ends the session for good; `error` says why (none for a deliberate close). */
  #end(error: WidgetRuntimeError | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    this.#release(error);
    this.#setStatus('closed', error);
    // Not logged here: mount() logs a failed first connect, and the handle a later fatal close.
    if (error) this.events.emit('error', error);
    this.#opening?.reject(error ?? new WidgetRuntimeError('closed', 'The widget was closed before it connected'));
    this.#opening = undefined;
  }

  #setStatus(status: ConnectionStatus, error: WidgetRuntimeError | undefined): void {
    if (status === this.#status && !error) return;
    this.#status = status;
    this.events.emit('status', status, error);
  }
}

