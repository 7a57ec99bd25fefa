/**
 * One Python worker process (see README.md in this folder): spawns it, frames requests onto
 * fd 3, routes replies from fd 4 back to the calls waiting for them, and fails every call in
 * flight with `worker_crashed` when the process dies.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { LIMITS } from '../config/constants.js';
import type { LineLevel, LogLine } from '../ops/logger.js';
import { PorticoError, type ErrorCode, type Issue } from '../errors.js';
import { FrameDecoder, FrameQueue, splitBody, type BridgeFrame } from './frames.js';
import { displayOf, type Display } from './display.js';
import { openReplyChannel } from './reply-channel.js';
import { forwardOutput } from './worker-output.js';

/** The bundled Python package folder (`packages/server/python`), put on the worker's PYTHONPATH. */
export const PYTHON_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../python');

export interface WorkerOptions {
  project: string;
  python: string;
  /** Receives what the worker's instances push to their clients (`emit()`, widget changes and messages). */
  onPush?: (uuid: string, push: Push) => void;
  /** Receives the worker's stdout/stderr (user prints at info, each Python traceback as one entry at error) and bridge problems. */
  log?: LogLine;
}

/** A frame an instance pushes to every client attached to it. */
export interface Push {
  type: 'event' | 'widget_change' | 'widget_msg' | 'widget_reload' | 'instance_restarted';
  payload: unknown;
  /** Binary buffers of a widget push (the values at `payload.buffer_paths`, or a message's buffers). */
  buffers?: Buffer[];
  /** The display bundle of an `event` whose emitted value IPython could display (README "Rich results"). */
  display?: Display;
}

export interface Resolved {
  module: string;
  kind: string;
  config: Record<string, unknown>;
  version: unknown[];
}

/** The instance a call runs on. */
export interface CallTarget {
  uuid: string;
  module: string;
  config: Record<string, unknown>;
}

export interface CallRequest {
  /** Its JSON is kept per object (see `callHeader`): a target must not change once called. */
  target: CallTarget;
  method: string;
  args: unknown[];
  kwargs: Record<string, unknown>;
}

export interface ReadRequest {
  uuid: string;
  module: string;
  config: Record<string, unknown>;
  params: Record<string, unknown>;
  /** Largest chunk the worker may send. */
  block: number;
}

export interface WidgetRequest {
  uuid: string;
  module: string;
  config: Record<string, unknown>;
  changes?: Record<string, unknown>;
  /** Where in `changes` each buffer goes (widget_set). */
  buffer_paths?: unknown[];
  content?: unknown;
  /** Binary buffers: a message's, or the binary values of `changes`; sent raw in the frame body. */
  buffers?: Buffer[];
}

export type WidgetAsset = { inline: string } | { path: string };

/**
 * Where a streaming call delivers its items, synchronously and in order, each with its display
 * bundle when IPython could display it (README "Rich results"); the returned promise paces the
 * generator (the worker gets credit for the next item when it settles).
 */
export type ItemSink = (payload: unknown, display?: Display) => void | Promise<void>;

/** How a call ended: its result (with its display bundle when it has one, README "Rich results"), the end of its stream, or an error. */
export type CallOutcome = { ok: true; streamed: boolean; payload?: unknown; buffers?: Buffer[]; display?: Display } | { ok: false; error: PorticoError };

export type { Display };

export interface CallHandlers {
  /** Aborting it cancels the call in the worker (one listener per signal, however many calls). */
  signal?: AbortSignal | undefined;
  /** A call still running after this long is cancelled and fails with `timeout`. */
  timeoutMs?: number | undefined;
  onItem?: ItemSink | undefined;
  /**
   * Called synchronously when the worker's terminal frame arrives, before the returned promise
   * settles: a transport that sends the final frame here keeps it in order with `event` pushes.
   */
  onSettled?: ((outcome: CallOutcome) => void) | undefined;
}

/** A request waiting for its answer; no closures, so that a call allocates as little as it can. */
interface Pending {
  onItem: ItemSink | undefined;
  onSettled: ((outcome: CallOutcome) => void) | undefined;
  /** The promise `request` returned, if it made one. */
  resolve: ((outcome: CallOutcome) => void) | undefined;
  signal: AbortSignal | undefined;
  /** Chunks of a read the sink is done with and the worker has not been credited for yet. */
  owed: number;
  /** performance.now() after which the call times out. */
  deadline: number;
  timeoutMs: number;
}

/** Resolutions remembered per worker (oldest dropped first). */
const RESOLVE_CACHE_SIZE = 1024;

/** Frames queued in one turn of the event loop up to this many bytes are joined into one write; beyond, written as they are. */
const COALESCE_BYTES = 256 * 1024;

/** How often deadlines are checked: a timeout lands within this much of its limit. */
const DEADLINE_SWEEP_MS = 250;

/**
 * The gateway code of each code the worker refuses with (README.md "Errors"). Every refusal has
 * one; `internal` is kept for the worker failing on a request (a bug in it, logged with its
 * traceback), and any code missing here becomes `internal` too (frame-answers.test.ts holds this
 * table to the worker's sources and README).
 */
const FROM_WORKER: Record<string, ErrorCode> = {
  // Like every failure to resolve, a 400 with issues (service/project.ts names the modules that exist).
  module_not_found: 'unknown_module',
  module_error: 'module_error',
  invalid_config: 'invalid_config',
  method_not_found: 'not_found',
  method_forbidden: 'forbidden',
  invalid_argument: 'invalid_argument',
  call_failed: 'call_failed',
  unserializable_result: 'unserializable_result',
  streaming_unsupported: 'streaming_unsupported',
  cancelled: 'cancelled',
  not_found: 'not_found',
  read_unsupported: 'read_unsupported',
  read_only: 'read_only',
  forbidden: 'forbidden',
  payload_too_large: 'payload_too_large',
  // A request the worker could not take apart (a header it cannot decode, a missing field).
  bad_request: 'invalid_argument',
  internal: 'internal',
};

/**
 * The worker's `error` frame as the gateway's error, its texts without the absolute path of
 * `project` (the worker's folder), which is none of a client's business: a path inside it is
 * made relative to it (`.portico/interfaces/<uuid>/x`), the folder itself is "the project" (or
 * "the project folder"). The gateway log keeps the worker's tracebacks whole.
 */
export function errorFromWorker(header: Record<string, unknown>, project: string): PorticoError {
  const code = FROM_WORKER[String(header.code)] ?? 'internal';
  const message = withoutProjectPath(String(header.message ?? header.code), project);
  const extra: { issues?: Issue[]; exception?: string } = {};
  if (Array.isArray(header.issues)) extra.issues = (header.issues as Issue[]).map((issue) => ({ ...issue, message: withoutProjectPath(String(issue.message), project) }));
  else if (code === 'unknown_module') extra.issues = [{ path: null, message }];
  if (typeof header.exception === 'string') extra.exception = header.exception;
  return new PorticoError(code, message, extra);
}

/** Not followed by what continues a file name: `/srv/p` ends in "/srv/p." but not in "/srv/p2" or "/srv/p.bak". */
const NAME_ENDS = String.raw`(?![\w-]|\.\w)`;

/** `text` with the absolute path of `project` rewritten as errorFromWorker does (for other texts the worker reports to clients). */
export function withoutProjectPath(text: string, project: string): string {
  if (!project || !text.includes(project)) return text;
  const folder = project.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return text
    .replaceAll(project + path.sep, '')
    .replace(new RegExp(`\\bproject ${folder}${NAME_ENDS}`, 'g'), 'the project')
    .replace(new RegExp(`${folder}${NAME_ENDS}`, 'g'), 'the project folder');
}

export class Worker {
  readonly project: string;
  readonly python: string;
  pid: number | undefined;
  private child: ChildProcess | undefined;
  private toWorker: Writable | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  // Chunk bodies are reused once the sink is done with them; a read has at most a window of them out.
  private readonly decoder = new FrameDecoder(LIMITS.maxBridgeFrameBytes, LIMITS.readBlockBytes, LIMITS.streamWindow);
  private readonly outbox = new FrameQueue(COALESCE_BYTES);
  private exitError: PorticoError | undefined;
  private exited!: Promise<void>;
  private readonly exitListeners: Array<() => void> = [];
  private readonly options: WorkerOptions;
  /** Signals whose abort already cancels the calls under them. */
  private readonly listening = new WeakSet<AbortSignal>();
  private sweeper: NodeJS.Timeout | undefined;
  /** stop() was called: a start still opening its reply channel spawns nothing. */
  private stopRequested = false;
  private readonly resolved = new Map<string, Resolved>();
  /** Bumped by every `invalidate`: a resolution that was in flight meanwhile is not cached. */
  private generation = 0;
  /**
   * The live instances this worker holds, by uuid, with when each was last used
   * (performance.now()): every call, read and widget operation names its instance, and the
   * worker creates it on first use. The pool releases those idle too long, and a worker that
   * dies takes exactly these with it.
   */
  readonly live = new Map<string, number>();
  /** When the last request was sent (performance.now()). */
  lastActivity = performance.now();
  /** When the worker last answered a heartbeat, from its reading side (performance.now(); 0 until ready). */
  lastBeat = 0;
  /** When the worker reported ready (performance.now(); undefined before). */
  readyAt: number | undefined;
  /** Why the pool killed it, when it did (a wedge); the exit then reports this instead of a crash. */
  killedFor: string | undefined;

  constructor(options: WorkerOptions) {
    this.options = options;
    this.project = options.project;
    this.python = options.python;
  }

  /** Starts the process and waits for its `ready` frame. */
  async start(): Promise<void> {
    // Replies are decoded as they are read in place (reply-channel.ts); until the process is
    // spawned below there is nobody to hear them, and nothing arrives.
    let onFrames: (frames: BridgeFrame[]) => void = () => undefined;
    const channel = await openReplyChannel({
      target: () => this.decoder.readTarget(),
      onRead: (n) => {
        let frames: BridgeFrame[];
        try {
          frames = this.decoder.commitRead(n);
        } catch (err) {
          this.log(`bridge: ${(err as Error).message}; stopping worker`, 'error');
          channel.gatewayEnd.destroy();
          this.child?.kill('SIGKILL');
          return;
        }
        onFrames(frames);
      },
    }).catch((err: Error) => {
      throw new PorticoError('worker_unavailable', "Cannot open the worker's reply channel (the gateway's log says why)", { internal: `Cannot open the worker's reply channel: ${err.message}` });
    });
    channel.gatewayEnd.on('error', () => {}); // a reset after a crash: the exit handler reports it
    if (this.stopRequested) {
      channel.gatewayEnd.destroy();
      channel.workerEnd.destroy();
      throw new PorticoError('worker_unavailable', 'The Python worker was stopped before it started');
    }
    let child: ChildProcess;
    try {
      child = spawn(this.python, ['-m', 'portico.worker', this.project], {
        cwd: this.project,
        // PYTHONSAFEPATH: the project must not shadow modules the worker itself imports (json, ast…);
        // the worker puts the project on sys.path itself, after its own imports.
        env: { ...process.env, PYTHONPATH: joinPythonPath(PYTHON_DIR, process.env.PYTHONPATH), PYTHONUNBUFFERED: '1', PYTHONSAFEPATH: '1' },
        stdio: ['ignore', 'pipe', 'pipe', 'pipe', channel.workerEnd],
      });
    } finally {
      channel.workerEnd.destroy(); // the worker has its own copy; the gateway end sees EOF when it exits
    }
    this.child = child;
    this.toWorker = child.stdio[3] as Writable;
    this.sweeper = setInterval(() => {
      this.sweepDeadlines();
      this.decoder.trimPool();
    }, DEADLINE_SWEEP_MS);
    this.sweeper.unref();
    for (const stream of [child.stdout, child.stderr]) forwardOutput(stream!, (entry, level) => this.log(entry, level));
    this.toWorker.on('error', () => {}); // EPIPE after a crash: the exit handler reports it

    let onReady!: () => void;
    let onFail!: (err: PorticoError) => void;
    const ready = new Promise<void>((resolve, reject) => {
      onReady = resolve;
      onFail = reject;
    });
    this.exited = new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        const why = signal ? `signal ${signal}` : `exit code ${code}`;
        this.exitReason = why;
        const message = this.killedFor ? `The Python worker (pid ${child.pid}) ${this.killedFor} and was killed` : `The Python worker (pid ${child.pid}) stopped (${why})`;
        this.exitError = new PorticoError('worker_crashed', message);
        onFail(new PorticoError('worker_unavailable', `The Python worker failed to start (${why}); see the gateway log`));
        clearInterval(this.sweeper);
        this.failAll(this.exitError);
        for (const listener of this.exitListeners) listener();
        resolve();
      });
    });
    child.on('error', (err) => {
      // The interpreter's name is no secret (GET /v1/projects lists them); why it failed is the operator's.
      onFail(new PorticoError('worker_unavailable', `Cannot start Python interpreter '${this.python}' (the gateway's log says why)`, { internal: `Cannot start Python interpreter '${this.python}': ${err.message}` }));
    });

    onFrames = (frames) => {
      for (const frame of frames) {
        if (frame.header.op === 'ready') {
          this.pid = Number(frame.header.pid);
          this.readyAt = this.lastBeat = performance.now();
          onReady();
        } else {
          this.dispatch(frame.header, frame.body, frame.release);
        }
      }
    };

    const timer = setTimeout(() => {
      onFail(new PorticoError('worker_unavailable', `The Python worker did not start within ${LIMITS.workerStartTimeoutMs} ms`));
      child.kill('SIGKILL');
    }, LIMITS.workerStartTimeoutMs);
    return await ready.finally(() => clearTimeout(timer));
  }

  /** How the process ended (`exit code 1`, `signal SIGKILL`); undefined while it runs. */
  exitReason: string | undefined;

  /** stop() was called: its exit is no crash. */
  get stopping(): boolean {
    return this.stopRequested;
  }

  get alive(): boolean {
    return this.child !== undefined && this.exitError === undefined;
  }

  /** Number of requests waiting for an answer. */
  get busy(): number {
    return this.pending.size;
  }

  onExit(listener: () => void): void {
    this.exitListeners.push(listener);
  }

  /**
   * Resolves a version against a module's Config. Results are cached for the life of this
   * worker, until `invalidate` names the module (a source edit), so repeated REST calls on the
   * same target cost no round trip; an edit made outside the gateway is not seen meanwhile
   * (README "Resolutions in the gateway").
   */
  async resolve(module: string, version: unknown[]): Promise<Resolved> {
    const key = JSON.stringify([module, version]);
    const cached = this.resolved.get(key);
    if (cached) return cached;
    const generation = this.generation;
    const resolved = (await this.expect({ op: 'resolve', module, version })) as unknown as Resolved;
    if (generation !== this.generation) return resolved; // it may have used the code just invalidated
    if (this.resolved.size >= RESOLVE_CACHE_SIZE) this.resolved.delete(this.resolved.keys().next().value!);
    this.resolved.set(key, resolved);
    return resolved;
  }

  /**
   * Makes the worker forget `modules` and everything below them (`pkg` takes `pkg.sub` along)
   * after their source changed: sys.modules, its caches and the live instances of their classes
   * (README "invalidate"); resolutions cached here go too. Resolves with the evicted uuids; a
   * client attached to one keeps its socket, and its next call gets a fresh instance.
   */
  async invalidate(modules: string[], timeoutMs: number = LIMITS.callTimeoutMs): Promise<string[]> {
    const stale = (module: string) => modules.some((m) => module === m || module.startsWith(`${m}.`));
    const forget = () => {
      this.generation++;
      for (const key of [...this.resolved.keys()]) {
        if (stale((JSON.parse(key) as [string])[0])) this.resolved.delete(key);
      }
    };
    forget();
    const outcome = await this.request({ op: 'invalidate', modules }, { timeoutMs });
    // Again: a resolution answered while the worker was still invalidating may have used the old code.
    forget();
    if (!outcome.ok) throw outcome.error;
    const evicted = ((outcome.payload as { evicted?: unknown }).evicted ?? []) as string[];
    for (const uuid of evicted) this.live.delete(uuid);
    return evicted;
  }

  /** The project's interface modules (ProjectIndex entries). */
  async modules(): Promise<unknown[]> {
    return (await this.expect({ op: 'modules' })).modules as unknown[];
  }

  /** A module's reflected schema (ModuleSchema). */
  async schema(module: string): Promise<Record<string, unknown>> {
    const { op: _op, id: _id, ...schema } = await this.expect({ op: 'schema', module });
    return schema;
  }

  private async expect(header: Record<string, unknown>): Promise<Record<string, unknown>> {
    const outcome = await this.request(header);
    if (!outcome.ok) throw outcome.error;
    return outcome.payload as Record<string, unknown>;
  }

  /**
   * Runs a method. Without `onItem` the method must not stream (REST); with it, each yielded
   * item goes to the sink and the generator advances only as fast as the sink settles.
   * Aborting `signal` cancels the call in the worker. Never rejects: the outcome says how it ended.
   */
  call(req: CallRequest, handlers: CallHandlers = {}): Promise<CallOutcome> {
    return new Promise((resolve) => this.submit((id) => callHeader(id, req, handlers.onItem !== undefined), handlers, NO_BODY, resolve, req.target.uuid));
  }

  /**
   * `call` without its promise: the outcome goes to `handlers.onSettled` alone. The WebSocket
   * path sends its frame from there, and the promise (with the layers awaiting it) was work on
   * every call for nobody.
   */
  startCall(req: CallRequest, handlers: CallHandlers & { onSettled: (outcome: CallOutcome) => void }): void {
    const stream = handlers.onItem !== undefined;
    this.submit((id) => callHeader(id, req, stream), handlers, NO_BODY, undefined, req.target.uuid);
  }

  /**
   * Runs the interface's `read(params)` hook: each chunk (at most `block` bytes) goes to `onItem`
   * as a Buffer, paced like stream items; the outcome's payload is the number of bytes sent.
   * The Buffer is reused for a later chunk once `onItem` returns nothing or its promise resolves:
   * a sink that hands it to an asynchronous write resolves only when that write is done.
   */
  read(req: ReadRequest, handlers: Omit<CallHandlers, 'onItem'> & { onItem: (chunk: Buffer) => void | Promise<void> }): Promise<CallOutcome> {
    return new Promise((resolve) => this.submit({ op: 'read', ...req }, handlers as CallHandlers, NO_BODY, resolve, req.uuid));
  }

  /**
   * A widget operation on an instance: `widget_get` (its state), `widget_set` (its
   * widget_update with `changes`; the payload holds the normalized changes) or `widget_msg`
   * (its widget_message with `content` and `buffers`). Buffers go raw in the frame body, and
   * come back in the outcome's `buffers`. Never rejects.
   */
  widget(op: 'widget_get' | 'widget_set' | 'widget_msg', req: WidgetRequest, signal?: AbortSignal): Promise<CallOutcome> {
    const { buffers = [], ...fields } = req;
    const header = buffers.length ? { op, ...fields, buffer_lengths: buffers.map((b) => b.length) } : { op, ...fields };
    return new Promise((resolve) => this.submit(header, { signal, timeoutMs: LIMITS.callTimeoutMs }, buffers, resolve, req.uuid));
  }

  /** Where a module's widget front end comes from: inline source, a file, or nothing. */
  async widgetAssets(module: string): Promise<Record<'esm' | 'css', WidgetAsset | null>> {
    const { esm, css } = await this.expect({ op: 'widget_assets', module });
    return { esm: (esm ?? null) as WidgetAsset | null, css: (css ?? null) as WidgetAsset | null };
  }

  /** Drops the live instance `uuid` (its record and saved widget state stay); false when it held none. */
  release(uuid: string): boolean {
    const held = this.live.delete(uuid);
    if (this.alive) this.send({ op: 'release', uuid });
    return held;
  }

  /**
   * Asks the worker's reading side for a sign of life (README "heartbeat"): its answer sets
   * `lastBeat`. Not a request: nothing waits for it, so a wedged worker piles up nothing.
   */
  heartbeat(): void {
    if (this.readyAt !== undefined) this.send({ op: 'heartbeat', id: 0 });
  }

  /** Asks the worker to exit; kills it if it has not after the grace period. */
  async stop(): Promise<void> {
    this.stopRequested = true;
    if (!this.child || this.exitError) return;
    this.send({ op: 'shutdown' });
    const timer = setTimeout(() => this.child?.kill('SIGKILL'), LIMITS.workerStopGraceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** Kills the process at once (tests use it to simulate a crash). */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.child?.kill(signal);
  }

  private request(header: Record<string, unknown> | ((id: number) => string), handlers: CallHandlers = {}, body: Buffer[] = []): Promise<CallOutcome> {
    return new Promise((resolve) => this.submit(header, handlers, body, resolve));
  }

  /**
   * Sends a request and registers its handlers; the outcome goes to `onSettled`, then to
   * `resolve`. `header` is an object without `id`, or a function of the id giving its JSON.
   */
  private submit(
    header: Record<string, unknown> | ((id: number) => string),
    handlers: CallHandlers,
    body: Buffer[],
    resolve: ((outcome: CallOutcome) => void) | undefined,
    /** The live instance the request uses (it is created on first use). */
    instance?: string,
  ): void {
    const { signal, onSettled } = handlers;
    const early = this.exitError ?? (signal?.aborted ? new PorticoError('cancelled', 'The call was cancelled') : undefined);
    if (early) {
      const outcome: CallOutcome = { ok: false, error: early };
      onSettled?.(outcome);
      resolve?.(outcome);
      return;
    }
    const id = this.nextId++;
    if (signal) this.cancelOnAbort(signal);
    // Nothing in flight: the worker is waiting in its read, so this request is a lone one.
    const lone = this.pending.size === 0;
    // Sent before it is registered: a request whose header cannot be encoded (JSON.stringify
    // throws to the caller) leaves no pending entry behind to time out and settle it later. Its
    // answer cannot come before this returns: replies are read in a later I/O callback.
    if (typeof header === 'function') this.send(header(id), body, lone);
    else {
      header.id = id; // every caller hands over a fresh header
      this.send(header, body, lone);
    }
    const timeoutMs = handlers.timeoutMs ?? Infinity;
    const now = (this.lastActivity = performance.now());
    if (instance !== undefined) this.live.set(instance, now);
    this.pending.set(id, { onItem: handlers.onItem, onSettled, resolve, signal, owed: 0, deadline: now + timeoutMs, timeoutMs });
  }

  private settle(id: number, entry: Pending, outcome: CallOutcome): void {
    this.pending.delete(id);
    entry.onSettled?.(outcome);
    entry.resolve?.(outcome);
  }

  /**
   * Aborting `signal` cancels every call in flight under it. One listener per signal however
   * many calls (a socket's signal carries all of its calls); the calls are found among those in
   * flight when it fires, so a call costs no bookkeeping per signal.
   */
  private cancelOnAbort(signal: AbortSignal): void {
    if (this.listening.has(signal)) return;
    this.listening.add(signal);
    signal.addEventListener(
      'abort',
      () => {
        for (const [id, entry] of this.pending) if (entry.signal === signal) this.send({ op: 'cancel', id });
      },
      { once: true },
    );
  }

  /** Cancels calls past their deadline; they fail with `timeout` at once. */
  private sweepDeadlines(): void {
    const now = performance.now();
    for (const [id, entry] of this.pending) {
      if (entry.deadline > now) continue;
      this.send({ op: 'cancel', id });
      this.settle(id, entry, {
        ok: false,
        error: new PorticoError('timeout', `The call exceeded its time limit of ${entry.timeoutMs} ms and was cancelled`),
      });
    }
  }

  private dispatch(header: BridgeFrame['header'], body: Buffer, release?: () => void): void {
    const push = this.pushOf(header, body);
    if (push) {
      this.options.onPush?.(String(header.uuid), push);
      return;
    }
    const id = Number(header.id);
    const entry = this.pending.get(id);
    if (!entry) {
      if (header.op === 'heartbeat') this.lastBeat = performance.now();
      return release?.(); // a late reply to a call that already ended
    }
    switch (header.op) {
      case 'item':
      case 'chunk': {
        if (!entry.onItem) return;
        // Delivered synchronously (in order with events); credit goes back once the sink is ready.
        // A chunk's body goes back to the decoder once the sink settles (it no longer refers to
        // it then); a sink that failed may still hold it, so that body is left to the collector.
        const chunk = header.op === 'chunk';
        let ready;
        if (!chunk && header.display !== undefined) {
          const display = this.itemDisplay(id, entry, header, body);
          if (!display) return;
          ready = entry.onItem(header.payload, display);
        } else {
          ready = entry.onItem(chunk ? body : header.payload);
        }
        if (ready) {
          ready.then(
            () => {
              release?.();
              this.grantCredit(id, chunk);
            },
            () => this.send({ op: 'cancel', id }),
          );
        } else {
          release?.();
          this.grantCredit(id, chunk);
        }
        return;
      }
      case 'end':
        return this.settle(id, entry, { ok: true, streamed: true, payload: header.bytes });
      case 'result': {
        // Nearly every result: no buffers, no display bundle, nothing to cut.
        if (body.length === 0 && header.buffer_lengths === undefined && header.display === undefined) return this.settle(id, entry, { ok: true, streamed: false, payload: header.payload });
        const buffers = this.buffersOf(header, body);
        if (!buffers) return this.settle(id, entry, { ok: false, error: new PorticoError('internal', 'The worker sent buffers that do not match their lengths') });
        if (header.display !== undefined) {
          let display: Display;
          try {
            display = displayOf(header, buffers);
          } catch (err) {
            return this.settle(id, entry, { ok: false, error: err as PorticoError });
          }
          return this.settle(id, entry, { ok: true, streamed: false, payload: header.payload, display });
        }
        return this.settle(id, entry, { ok: true, streamed: false, payload: header.payload, ...(buffers.length ? { buffers } : {}) });
      }
      case 'resolved':
      case 'modules':
      case 'schema':
      case 'widget_assets':
      case 'invalidated':
        return this.settle(id, entry, { ok: true, streamed: false, payload: header });
      case 'error':
        return this.settle(id, entry, { ok: false, error: errorFromWorker(header, this.project) });
      default:
        this.log(`bridge: unexpected op '${header.op}' from worker`, 'error');
    }
  }

  /**
   * Credits the worker for an item or chunk its sink is done with. A read's chunks are credited
   * LIMITS.readCreditBatch at a time: every credit wakes the worker (a context switch on a
   * loaded machine), and in the gateway's profile of a 1 GiB read those wake-ups, one per
   * 1 MiB chunk, took more wall time than anything else. Holding back fewer than the window
   * never stalls a read: a worker out of credit has its whole window in the gateway, and every
   * chunk of it is released in time.
   */
  private grantCredit(id: number, chunk: boolean): void {
    const entry = this.pending.get(id);
    if (!entry) return;
    entry.owed += 1;
    if (chunk && entry.owed < LIMITS.readCreditBatch) return;
    this.send({ op: 'credit', id, n: entry.owed });
    entry.owed = 0;
  }

  /** The display bundle of a stream item; undefined when it does not fit (the call is cancelled and fails). */
  private itemDisplay(id: number, entry: Pending, header: BridgeFrame['header'], body: Buffer): Display | undefined {
    const buffers = this.buffersOf(header, body);
    let error = new PorticoError('internal', 'The worker sent buffers that do not match their lengths');
    if (buffers) {
      try {
        return displayOf(header, buffers, 'A stream item');
      } catch (err) {
        error = err as PorticoError;
      }
    }
    this.send({ op: 'cancel', id });
    this.settle(id, entry, { ok: false, error });
    return undefined;
  }

  /** The buffers of a frame's body (`buffer_lengths`); undefined, and logged, when they do not fit. */
  private buffersOf(header: BridgeFrame['header'], body: Buffer): Buffer[] | undefined {
    try {
      return splitBody(header.buffer_lengths, body);
    } catch (err) {
      this.log(`bridge: ${header.op} frame: ${(err as Error).message}`, 'error');
      return undefined;
    }
  }

  /** The client frame an unsolicited worker frame becomes, if it is one. */
  private pushOf(header: BridgeFrame['header'], body: Buffer): Push | undefined {
    switch (header.op) {
      case 'event': {
        if (header.display === undefined) return { type: 'event', payload: header.payload };
        // The worker bounds bundles first: one that does not fit here is logged, the event sent without it.
        try {
          const buffers = this.buffersOf(header, body);
          if (!buffers) throw new Error('its buffers do not match their lengths');
          return { type: 'event', payload: header.payload, display: displayOf(header, buffers, 'An event') };
        } catch (err) {
          this.log(`bridge: event frame: ${(err as Error).message}; sent without its display bundle`, 'error');
          return { type: 'event', payload: header.payload };
        }
      }
      case 'widget_change':
      case 'widget_msg': {
        if (header.op === 'widget_msg' && header.id !== undefined) return undefined; // a request's echo, never sent
        const buffers = this.buffersOf(header, body) ?? [];
        const payload = header.op === 'widget_change' ? { changes: header.changes, ...(header.buffer_paths ? { buffer_paths: header.buffer_paths } : {}) } : { content: header.content ?? null };
        return { type: header.op, payload, buffers };
      }
      default:
        return undefined;
    }
  }

  /**
   * Queues a frame; everything queued in one turn of the event loop goes out in a single write
   * (setImmediate runs right after the turn's I/O callbacks): pipelined calls arriving on several
   * sockets at once reach the worker in one write, and every write wakes the worker.
   *
   * A `lone` request (nothing else in flight, nothing queued) is written at once instead: the
   * worker is idle in its read, and waiting for setImmediate put the rest of the turn (11-14 µs
   * measured between queueing a ws call and its write) on the latency of every isolated call.
   * With calls in flight, the worker is busy anyway and requests keep sharing a write.
   */
  private send(header: object | string, body: Buffer[] = [], lone = false): void {
    if (!this.toWorker || this.exitError) return;
    const scheduled = !this.outbox.empty;
    this.outbox.push(header, body);
    if (lone && !scheduled) this.flush();
    else if (!scheduled) setImmediate(() => this.flush());
  }

  private flush(): void {
    const parts = this.outbox.take();
    if (parts.length === 1) {
      this.toWorker?.write(parts[0]!);
      return;
    }
    // Widget buffers of megabytes: hand the parts over as they are (one writev), not copied into one.
    this.toWorker?.cork();
    for (const part of parts) this.toWorker?.write(part);
    this.toWorker?.uncork();
  }

  private failAll(error: PorticoError): void {
    for (const [id, entry] of [...this.pending]) this.settle(id, entry, { ok: false, error });
  }

  private log(line: string, level?: LineLevel): void {
    (this.options.log ?? ((l: string) => process.stderr.write(l + '\n')))(`[worker ${this.pid ?? '?'}] ${line}`, level);
  }
}

const NO_BODY: Buffer[] = [];

/** The JSON of each call target's part of a call header, per target object (see CallRequest). */
const targetJson = new WeakMap<CallTarget, string>();

/**
 * A call request's header as JSON text, written out instead of spreading the request into a
 * header object and stringifying that: the spreads and the target's config serialized again on
 * every call were the largest cost of sending a call to the worker in the gateway's profile of
 * pipelined calls. Same fields and values as `JSON.stringify({ op: 'call', ...req, stream, id })`.
 */
function callHeader(id: number, req: CallRequest, stream: boolean): string {
  const { target } = req;
  let head = targetJson.get(target);
  if (head === undefined) {
    head = `"uuid":${JSON.stringify(target.uuid)},"module":${JSON.stringify(target.module)},"config":${JSON.stringify(target.config)}`;
    targetJson.set(target, head);
  }
  return `{"op":"call","id":${id},${head},"method":${JSON.stringify(req.method)},"args":${JSON.stringify(req.args ?? [])},"kwargs":${JSON.stringify(req.kwargs ?? {})},"stream":${stream}}`;
}

function joinPythonPath(first: string, rest: string | undefined): string {
  return rest ? `${first}${path.delimiter}${rest}` : first;
}
