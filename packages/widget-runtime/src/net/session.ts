/**
 * One WebSocket session with the gateway for one interface, and the model it keeps in sync.
 *
 * Handshake: open the socket (subprotocols `['bearer', token]` when a token is given) →
 * `connect` → `connected` → `widget_get` → `widget_state` → the model is resynced, the session
 * is `open`, and what was queued offline is sent. A first handshake whose socket cannot open,
 * closes or times out (the gateway is not listening yet, or starting) is tried again with the
 * reconnect backoff, `firstConnectAttempts` tries in all (each announced by a `retrying` event;
 * the status stays `connecting`), then `open()` rejects; one the gateway refuses rejects at once.
 * After it succeeded, a dropped socket is reopened with the same capped, jittered exponential
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
 * `waiting` (`--workers slurm`: a request of this session waits for a worker whose Slurm job is
 * pending) goes to the page as the `waiting` event, whichever request it names: the connect, the
 * widget_get after it, a call; the request's own answer follows. During the handshake it stops
 * the handshake timeout: the gateway answers, and bounds that wait itself (`--worker-wait`).
 *
 * Without a widget (`widget: false`, for `connect()`), the handshake ends at `connected`: there is
 * no `widget_get` and no model. Calls and transfers (`request()`, used by transfers.ts) wait for
 * the session to be open, get the frames that answer their id, and fail with `connection_lost`
 * when the socket goes; binary frames go to the one transfer that receives them, except the
 * buffers of a widget frame (`binary_buffers: n`: the n binary frames right after it), which go
 * with that frame. The socket asks for buffers that way (connect `buffers: binary`); base64
 * buffers in the payload, from older gateways, are read too.
 *
 * The WebSocket constructor is injectable, so this runs without a browser. Its parts sit beside it:
 * socket.ts (the socket and how a frame goes out), inbox.ts (a frame in, with its buffers),
 * exchanges.ts (requests in flight), widget-sync.ts (the model and its reads), heartbeat.ts.
 */
import type { ClientFrame, ErrorPayload, FrameId, InstanceRestart, InterfaceInfo, JsonObject, ServerFrame, Version, WaitNotice } from '@portico/protocol';
import { valueOfFrame } from '../display.js';
import { WidgetRuntimeError, abortError, toRuntimeError } from '../errors.js';
import { withDefaults, type Limits } from '../limits.js';
import { TypedEvents } from '../model/events.js';
import type { ModelOutbox, WidgetManager, WidgetModel } from '../model/model.js';
import { backoffDelay } from './backoff.js';
import { Exchanges, channel, type Channel, type Exchange } from './exchanges.js';
import { Heartbeat } from './heartbeat.js';
import { Inbox } from './inbox.js';
import { CLOSING, OPEN, openSocket, sendFrame, type WebSocketConstructor, type WebSocketLike } from './socket.js';
import { gatewayUrls } from './urls.js';
import { Waits } from './waits.js';
import { WidgetSync } from './widget-sync.js';

export type ConnectionStatus = 'connecting' | 'open' | 'reconnecting' | 'closed';

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
  /**
   * Explains why a first connect failed (net/diagnose.ts); an origin the gateway refuses
   * (`origin_refused`) ends it with that reason rather than being tried again.
   */
  explain?: (error: WidgetRuntimeError) => Promise<WidgetRuntimeError>;
}

export type SessionEvents = {
  status: [status: ConnectionStatus, error: WidgetRuntimeError | undefined];
  /** What the interface passed to emit(): its JSON payload, or a `Display` when it has a MIME bundle (a figure). */
  event: [payload: unknown];
  /** The widget's module or stylesheet changed on the gateway. */
  reload: [asset: 'esm' | 'css'];
  /** A reconnect completed and the model was resynced (pushes may have been missed meanwhile). */
  resynced: [];
  /** The first connect failed (`error`) and is tried again in `delayMs`: try `attempt` of `attempts`. */
  retrying: [retry: FirstConnectRetry];
  /** A request waits for a worker whose Slurm job is pending: Slurm's state and reason (`notice.message`: `Slurm job 123: PENDING (Priority)`), on every change. */
  waiting: [notice: WaitNotice];
  /** No request of this session waits for a pending Slurm job any more (each got its answer). */
  waited: [];
  /**
   * The live instance died with its Python worker and is made again on next use (with its saved
   * widget state). A widget session has already asked for the state again when this fires; the
   * model applies it as it arrives, with change events for the keys that differ.
   */
  instance_restarted: [restart: InstanceRestart];
  error: [error: WidgetRuntimeError];
};

/** A first connect that failed and is tried again. */
export interface FirstConnectRetry {
  /** The try that comes next (2 is the first retry). */
  attempt: number;
  /** Tries in all (limits.firstConnectAttempts). */
  attempts: number;
  delayMs: number;
  /** Why the previous try failed. */
  error: WidgetRuntimeError;
}

/** First time: the caller's target (and uuid/version); after that: the uuid it resolved to. */
function connectFrame(options: ConnectOptions, info: InterfaceInfo | undefined): Omit<Extract<ClientFrame, { type: 'connect' }>, 'id'> {
  const { target, uuid, version, project } = options;
  const binding = { ...(project ? { project } : {}), buffers: 'binary' as const };
  if (info) return { type: 'connect', target: info.uuid, ...binding };
  return {
    type: 'connect',
    target: (target ?? uuid)!,
    ...(target && uuid ? { uuid } : {}),
    ...(version ? { version } : {}),
    ...binding,
  };
}

/** Resolves at the next `open` status; rejects at `closed`, or when `signal` aborts. */
function nextOpen(events: TypedEvents<SessionEvents>, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const settle = (error?: WidgetRuntimeError) => {
      unsubscribe();
      signal?.removeEventListener('abort', onAbort);
      if (error) reject(error);
      else resolve();
    };
    const onAbort = () => settle(abortError(signal!));
    const unsubscribe = events.on('status', (status, error) => {
      if (status === 'open') settle();
      else if (status === 'closed') settle(new WidgetRuntimeError('closed', `The connection is closed${error ? `: ${error.message}` : ''}`, { cause: error }));
    });
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Handshake refusals that retrying cannot fix. */
const FATAL_CODES = new Set(['unauthorized', 'forbidden', 'not_found', 'unknown_module']);

export class Session {
  readonly events = new TypedEvents<SessionEvents>();
  readonly #options: ConnectOptions;
  readonly #deps: SessionDeps;
  readonly #limits: Limits;
  readonly #socketUrl: string;
  #socket: WebSocketLike | undefined;
  #status: ConnectionStatus = 'connecting';
  #info: InterfaceInfo | undefined;
  #nextId = 1;
  #connectId: FrameId | undefined;
  #ready = false;
  #everReady = false;
  #closed = false;
  #attempt = 0;
  readonly #exchanges = new Exchanges();
  readonly #waits = new Waits((notice) => this.events.emit('waiting', notice), () => this.events.emit('waited'));
  readonly #inbox = new Inbox((frame, views) => this.#deliver(frame, views), (error) => this.#report(error));
  readonly #heartbeat: Heartbeat;
  readonly #sync: WidgetSync;
  #handshakeTimer: ReturnType<typeof setTimeout> | undefined;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #opening: { resolve: () => void; reject: (error: WidgetRuntimeError) => void } | undefined;

  constructor(options: ConnectOptions, deps: SessionDeps) {
    if (!options.target && !options.uuid) throw new WidgetRuntimeError('invalid_argument', 'Give a target (module name or uuid) or a uuid');
    if (deps.widget !== false && !deps.widgetManager) throw new Error('A widget session needs a widgetManager');
    this.#options = options;
    this.#deps = deps;
    this.#limits = withDefaults(deps.limits);
    this.#socketUrl = gatewayUrls(options.url, options.project).socket;
    this.#heartbeat = new Heartbeat(this.#limits.pingIntervalMs, {
      socket: () => this.#socket,
      ping: () => this.#sendNow({ type: 'ping' }),
      dead: (socket) => this.#drop(socket, new WidgetRuntimeError('connection_failed', 'The gateway stopped answering pings')),
    });
    const outbox: ModelOutbox = { send: ({ buffers, ...frame }) => (this.#ready ? this.#sendNow(frame, buffers) : undefined) };
    const { offlineQueueMessages } = this.#limits;
    this.#sync = new WidgetSync({ outbox, widgetManager: deps.widgetManager as WidgetManager, offlineQueueMessages, send: (frame) => this.#sendNow(frame), report: (error) => this.#report(error) });
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
    const model = this.#sync.model;
    if (!model) {
      throw new WidgetRuntimeError('connection_failed', this.#deps.widget === false ? 'This connection syncs no widget' : 'The session is not connected yet');
    }
    return model;
  }

  /** Resolves once the session is open (now, or after the reconnect under way); rejects once closed. */
  whenOpen(signal?: AbortSignal): Promise<void> {
    if (this.#closed) return Promise.reject(new WidgetRuntimeError('closed', 'The connection is closed'));
    if (this.#ready && this.#socket?.readyState === OPEN) return Promise.resolve();
    return nextOpen(this.events, signal);
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
      this.#exchanges.add(id, exchange, options.binary === true);
      return channel(id, socket, {
        current: () => socket === this.#socket && socket.readyState === OPEN,
        handed: (bytes) => this.#heartbeat.handed(bytes),
        finish: () => this.#exchanges.finish(id, exchange),
        abort: (error) => this.#drop(socket, error),
      });
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
    let socket: WebSocketLike;
    try {
      socket = openSocket(this.#deps.WebSocket, this.#socketUrl, this.#options.token);
    } catch (error) {
      // A token with characters a subprotocol cannot carry makes the constructor throw.
      this.#end(toRuntimeError(error, 'connection_failed'));
      return;
    }
    this.#socket = socket;
    this.#heartbeat.newSocket();
    this.#handshakeTimer = setTimeout(
      () => this.#drop(socket, new WidgetRuntimeError('handshake_timeout', `No answer from ${this.#socketUrl} within ${this.#limits.handshakeTimeoutMs} ms`)),
      this.#limits.handshakeTimeoutMs,
    );
    socket.onopen = () => {
      this.#connectId = this.#sendNow(connectFrame(this.#options, this.#info));
    };
    socket.onmessage = (event) => {
      if (socket !== this.#socket) return;
      this.#heartbeat.activity();
      const { data } = event;
      if (typeof data === 'string') this.#inbox.text(data);
      else if (this.#inbox.buffer(data)) return;
      else if (data instanceof ArrayBuffer || (typeof Blob !== 'undefined' && data instanceof Blob)) this.#exchanges.binary(data);
    };
    socket.onclose = (event) => {
      const reason = event.reason ? `: ${event.reason}` : '';
      this.#drop(socket, new WidgetRuntimeError('connection_failed', `The connection to ${this.#socketUrl} closed (${event.code}${reason})`));
    };
    // The browser gives no detail on errors and always follows with close.
    socket.onerror = () => undefined;
  }

  /** Sends a frame with a fresh id; `buffers` go as binary frames right after it, in the same step. */
  #sendNow(frame: Record<string, unknown> & { type: string }, buffers?: Uint8Array[]): FrameId | undefined {
    const socket = this.#socket;
    if (!socket || socket.readyState !== OPEN) return undefined;
    const id = this.#nextId++;
    sendFrame(socket, { ...frame, id }, buffers);
    return id;
  }

  /** Routes one frame; `views` are the buffers that came as binary frames after it. */
  #deliver(frame: ServerFrame, views: DataView[]): void {
    // Not its request's answer, but the gateway's: a handshake waiting for an allocation is bounded by --worker-wait, not handshakeTimeoutMs.
    if (this.#waits.take(frame)) return void clearTimeout(this.#handshakeTimer);
    if (this.#exchanges.route(frame, views)) return;
    switch (frame.type) {
      case 'connected':
        if (frame.id === this.#connectId) this.#onConnected(frame.payload);
        return;
      case 'widget_state':
      case 'widget_change':
      case 'widget_msg': {
        const state = this.#sync.receive(frame, views);
        if (!state) return;
        if (this.#ready) this.#sync.apply(state); // the re-read after instance_restarted
        else this.#onState(state);
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
        this.#heartbeat.pong();
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
    if (this.#deps.widget === false) this.#onState(undefined);
    else this.#sync.connected(info.uuid);
  }

  /** The instance died with its worker: its state is read again (widget_get), the page is told. */
  #onRestarted(restart: InstanceRestart): void {
    if (this.#info && restart.uuid !== this.#info.uuid) return;
    this.#sync.restarted(this.#ready);
    this.events.emit('instance_restarted', restart);
  }

  #onState(state: JsonObject | undefined): void {
    clearTimeout(this.#handshakeTimer);
    if (state) this.#sync.apply(state);
    this.#ready = true;
    this.#attempt = 0;
    const first = !this.#everReady;
    this.#everReady = true;
    this.#heartbeat.start();
    this.#setStatus('open', undefined);
    this.#sync.model?.flush();
    if (first) {
      this.#opening?.resolve();
      this.#opening = undefined;
    } else {
      this.events.emit('resynced');
    }
  }

  #onError(id: FrameId | undefined, payload: ErrorPayload): void {
    const error = new WidgetRuntimeError(payload.code, payload.message);
    // Binary frames of an upload the gateway already refused: that refusal reached its caller.
    if (id === undefined && payload.code === 'no_active_upload') return;
    if (id !== undefined && (id === this.#connectId || this.#sync.isRead(id))) {
      if (!this.#everReady || FATAL_CODES.has(payload.code)) this.#end(error);
      else if (this.#socket) this.#drop(this.#socket, error);
      return;
    }
    // A rejected widget_set (e.g. read_only) has already been rolled back by the model.
    if (id !== undefined) this.#sync.model?.reject(id);
    this.#report(error);
  }

  #report(error: WidgetRuntimeError): void {
    console.warn(`[portico-widget] ${error.code}: ${error.message}`);
    this.events.emit('error', error);
  }

  /** The socket is gone (closed, timed out, refused): reconnect with backoff; a first connect only for `firstConnectAttempts` tries. */
  #drop(socket: WebSocketLike, error: WidgetRuntimeError): void {
    if (socket !== this.#socket) return;
    this.#release(error);
    if (this.#closed) return;
    const attempts = this.#limits.firstConnectAttempts;
    if (!this.#everReady && this.#attempt + 1 >= attempts) return this.#end(error);
    const delay = backoffDelay(this.#attempt++, this.#limits, this.#deps.random);
    if (this.#everReady) this.#setStatus('reconnecting', error);
    else this.events.emit('retrying', { attempt: this.#attempt + 1, attempts, delayMs: delay, error });
    this.#retryTimer = setTimeout(() => this.#dial(), delay);
    // A browser hides why a socket failed: an origin refused now is refused on every try.
    if (!this.#everReady) this.#deps.explain?.(error).then((why) => void (why.code === 'origin_refused' && !this.#everReady && this.#end(why)), () => undefined);
  }

  /**
   * Detaches and closes the current socket; unacknowledged sets go back to the model's queue,
   * and requests waiting for an answer fail (`closed` for a deliberate close, else `connection_lost`).
   */
  #release(cause: WidgetRuntimeError | undefined): void {
    const socket = this.#socket;
    this.#socket = undefined;
    this.#inbox.reset();
    this.#exchanges.lose(cause);
    clearTimeout(this.#handshakeTimer);
    this.#heartbeat.stop();
    this.#ready = false;
    this.#connectId = undefined;
    this.#sync.disconnected();
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
