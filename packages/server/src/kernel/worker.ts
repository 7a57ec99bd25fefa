/**
 * One Python worker process (see README.md in this folder): spawns it, and offers the worker's
 * operations (resolve, call, read, widget, ...) as requests on its bridge (bridge.ts), which
 * routes replies back to the requests waiting for them and fails every one in flight with
 * `worker_crashed` when the process dies.
 */
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { LIMITS } from '../config/constants.js';
import type { Resources } from '../contract/executions.js';
import type { LineLevel, LogLine } from '../ops/logger.js';
import { PorticoError } from '../errors.js';
import { Bridge, type CallHandlers, type CallOutcome, type Push, type Settled } from './bridge.js';
import { FrameDecoder, type BridgeFrame } from './frames.js';
import { LocalPlacement, type LaunchedWorker, type PlacementInfo, type WorkerPlacement } from './placement.js';
import { Resolutions, type Resolved } from './resolutions.js';

export type { CallHandlers, CallOutcome, ItemSink, OutputSink, Push, Settled } from './bridge.js';
export type { Display } from './display.js';
export { errorFromWorker, withoutProjectPath } from './worker-errors.js';
export type { Resolved } from './resolutions.js';

/** The bundled Python package folder (`packages/server/python`), put on the worker's PYTHONPATH. */
export const PYTHON_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../python');

export interface WorkerOptions {
  project: string;
  python: string;
  /** Receives what the worker's instances push to their clients (`emit()`, widget changes and messages). */
  onPush?: (uuid: string, push: Push) => void;
  /** Receives the worker's stdout/stderr (user prints at info, each Python traceback as one entry at error) and bridge problems. */
  log?: LogLine;
  /** Where the process runs (default: a local child process). */
  placement?: WorkerPlacement | undefined;
  /** What the allocation of a placed worker asks for (its classes' `__resources__`); undefined: the placement's defaults. */
  resources?: Resources | undefined;
}

/**
 * The instance a call runs on: read-only, as a record is (an update makes a new record). Its
 * JSON is kept per target object and reused while its fields are the same objects (`callHeader`):
 * a target given another config is sent with it, one whose config were changed in place would not.
 */
export interface CallTarget {
  readonly uuid: string;
  readonly module: string;
  readonly config: Readonly<Record<string, unknown>>;
}

export interface CallRequest {
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

/** How often deadlines are checked: a timeout lands within this much of its limit. */
const DEADLINE_SWEEP_MS = 250;

const NO_BODY: Buffer[] = [];

/** A request's handlers where the promise of its outcome is what the caller wants. */
type RequestHandlers = Omit<CallHandlers, 'onSettled'> & { onSettled?: Settled | undefined };

export class Worker {
  readonly project: string;
  readonly python: string;
  readonly resources: Resources | undefined;
  pid: number | undefined;
  private launched: LaunchedWorker | undefined;
  /** Where the worker stands before it is up, when its placement says (a pending Slurm job). */
  private pendingInfo: (() => PlacementInfo) | undefined;
  private readonly placement: WorkerPlacement;
  /** Aborted by stop(): a placement still starting the worker gives up. */
  private readonly abort = new AbortController();
  private readonly bridge: Bridge;
  // Chunk bodies are reused once the sink is done with them; a read has at most a window of them out.
  private readonly decoder = new FrameDecoder(LIMITS.maxBridgeFrameBytes, LIMITS.readBlockBytes, LIMITS.streamWindow);
  private exitError: PorticoError | undefined;
  private exited: Promise<void> = Promise.resolve();
  private readonly exitListeners: Array<() => void> = [];
  private readonly options: WorkerOptions;
  private sweeper: NodeJS.Timeout | undefined;
  /** stop() was called: a start still under way kills what it started. */
  private stopRequested = false;
  private readonly resolutions = new Resolutions(async (module, version) => (await this.expect({ op: 'resolve', module, version })) as unknown as Resolved);
  /**
   * The live instances this worker holds, by uuid, with when each was last used
   * (performance.now()): every call, read and widget operation names its instance, and the
   * worker creates it on first use. The pool releases those idle too long, and a worker that
   * dies takes exactly these with it.
   */
  readonly live = new Map<string, number>();
  /** When the last request was sent (performance.now()). */
  lastActivity = performance.now();
  /** When the worker reported ready (performance.now(); undefined before). */
  readyAt: number | undefined;
  /** Why the pool killed it, when it did (a wedge); the exit then reports this instead of a crash. */
  killedFor: string | undefined;

  constructor(options: WorkerOptions) {
    this.options = options;
    this.project = options.project;
    this.python = options.python;
    this.resources = options.resources;
    this.placement = options.placement ?? new LocalPlacement(LIMITS.workerStartTimeoutMs, LIMITS.workerStopGraceMs);
    this.bridge = new Bridge({ project: options.project, onPush: options.onPush, log: (line, level) => this.log(line, level) });
  }

  /** Starts the process (where the placement puts it) and waits for its `ready` frame. */
  async start(): Promise<void> {
    let onReady!: () => void;
    let onFail!: (err: PorticoError) => void;
    const ready = new Promise<void>((resolve, reject) => {
      onReady = resolve;
      onFail = reject;
    });
    // Frames may arrive as soon as the placement has the worker (a connect-back brings its
    // `ready` with its hello): handled from the start.
    const onFrames = (frames: BridgeFrame[]): void => {
      for (const frame of frames) {
        if (frame.header.op === 'ready') {
          this.pid = Number(frame.header.pid);
          this.readyAt = this.bridge.lastBeat = performance.now();
          onReady();
        } else {
          this.bridge.dispatch(frame.header, frame.body, frame.release);
        }
      }
    };
    const env = { ...process.env, PYTHONPATH: joinPythonPath(PYTHON_DIR, process.env.PYTHONPATH), PYTHONUNBUFFERED: '1', PYTHONSAFEPATH: '1' };
    // PYTHONSAFEPATH: the project must not shadow modules the worker itself imports (json, ast…);
    // the worker puts the project on sys.path itself, after its own imports.
    const launched = await this.placement.launch(
      { project: this.project, python: this.python, resources: this.resources, env, log: (line, level) => this.log(line, level), signal: this.abort.signal, onPending: (info) => (this.pendingInfo = info) },
      {
        target: () => this.decoder.readTarget(),
        onRead: (n) => {
          let frames: BridgeFrame[];
          try {
            frames = this.decoder.commitRead(n);
          } catch (err) {
            this.log(`bridge: ${(err as Error).message}; stopping worker`, 'error');
            this.launched?.kill('SIGKILL');
            return;
          }
          onFrames(frames);
        },
      },
    );
    this.launched = launched;
    this.bridge.open(launched.input);
    this.sweeper = setInterval(() => {
      this.bridge.sweepDeadlines();
      this.decoder.trimPool();
    }, DEADLINE_SWEEP_MS);
    this.sweeper.unref();
    this.exited = launched.exited.then(
      (end) => {
        this.exitReason = end.why;
        this.allocationEnded = end.allocationEnded;
        const pid = this.pid ?? launched.pid;
        const who = pid === undefined ? 'The Python worker' : `The Python worker (pid ${pid})`;
        const message = this.killedFor ? `${who} ${this.killedFor} and was killed` : end.allocationEnded ? `${who} ended with its allocation: ${end.allocationEnded.message}` : `${who} stopped (${end.why})`;
        this.exitError = new PorticoError('worker_crashed', message);
        onFail(new PorticoError('worker_unavailable', `The Python worker failed to start (${end.why}); see the gateway log`));
        clearInterval(this.sweeper);
        this.bridge.close(this.exitError);
        for (const listener of this.exitListeners) listener();
      },
      (err: PorticoError) => {
        clearInterval(this.sweeper);
        onFail(err);
      },
    );
    if (this.stopRequested) launched.kill('SIGKILL');

    const timer = setTimeout(() => {
      onFail(new PorticoError('worker_unavailable', `The Python worker did not start within ${launched.readyTimeoutMs} ms`));
      launched.kill('SIGKILL');
    }, launched.readyTimeoutMs);
    return await ready.finally(() => clearTimeout(timer));
  }

  /** When the worker's allocation ended under it (Slurm placement): Slurm's state and what it said. */
  allocationEnded: { state: string; message: string } | undefined;

  /** Where the worker runs, when a placement other than a local child says (GET /v1/projects). */
  get placementInfo(): PlacementInfo {
    return this.launched?.info() ?? this.pendingInfo?.() ?? {};
  }

  /** How the process ended (`exit code 1`, `signal SIGKILL`); undefined while it runs. */
  exitReason: string | undefined;

  /** stop() was called: its exit is no crash. */
  get stopping(): boolean {
    return this.stopRequested;
  }

  get alive(): boolean {
    return this.launched !== undefined && this.exitError === undefined;
  }

  /** Number of requests waiting for an answer. */
  get busy(): number {
    return this.bridge.size;
  }

  /** When the worker last answered a heartbeat, from its reading side (performance.now(); 0 until ready). */
  get lastBeat(): number {
    return this.bridge.lastBeat;
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
    return this.resolutions.get(module, version);
  }

  /** The resolution `resolve` would answer at once from what it remembers, or undefined (nothing asked). */
  resolvedNow(module: string, version: unknown[]): Resolved | undefined {
    return this.resolutions.peek(module, version);
  }

  /**
   * Makes the worker forget `modules` and everything below them (`pkg` takes `pkg.sub` along)
   * after their source changed: sys.modules, its caches and the live instances of their classes
   * (README "invalidate"); resolutions cached here go too. Resolves with the evicted uuids; a
   * client attached to one keeps its socket, and its next call gets a fresh instance.
   */
  async invalidate(modules: string[], timeoutMs: number = LIMITS.callTimeoutMs): Promise<string[]> {
    this.resolutions.forget(modules);
    const outcome = await this.request({ op: 'invalidate', modules }, { timeoutMs });
    // Again: a resolution answered while the worker was still invalidating may have used the old code.
    this.resolutions.forget(modules);
    if (!outcome.ok) throw outcome.error;
    const evicted = ((outcome.payload as { evicted?: unknown }).evicted ?? []) as string[];
    for (const uuid of evicted) this.live.delete(uuid);
    return evicted;
  }

  /** The project's interface modules (ProjectIndex entries). */
  async modules(): Promise<unknown[]> {
    return (await this.expect({ op: 'modules' })).modules as unknown[];
  }

  /** What a module's interface class declares in `__resources__` (unchecked: lanes.ts checks it), or null. */
  async declaredResources(module: string): Promise<unknown> {
    return (await this.expect({ op: 'resources', module })).resources ?? null;
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
   * Runs a method; the outcome goes to `handlers.onSettled`, synchronously with the worker's
   * terminal frame (settled at once when the worker is gone). Without `onItem` the method must
   * not stream (REST); with it, each yielded item goes to the sink and the generator advances
   * only as fast as the sink settles. Aborting `signal` cancels the call in the worker. Throws,
   * sending nothing, only when the request cannot be encoded (a value JSON cannot carry).
   */
  call(req: CallRequest, handlers: CallHandlers): void {
    const stream = handlers.onItem !== undefined;
    this.submit((id) => callHeader(id, req, stream), handlers, NO_BODY, req.target.uuid);
  }

  /**
   * Runs the interface's `read(params)` hook: each chunk (at most `block` bytes) goes to `onItem`
   * as a Buffer, paced like stream items; the outcome's payload is the number of bytes sent.
   * The Buffer is reused for a later chunk once `onItem` returns nothing or its promise resolves:
   * a sink that hands it to an asynchronous write resolves only when that write is done.
   */
  read(req: ReadRequest, handlers: Omit<CallHandlers, 'onItem' | 'onSettled'> & { onItem: (chunk: Buffer) => void | Promise<void>; onSettled?: Settled | undefined }): Promise<CallOutcome> {
    return this.request({ op: 'read', ...req }, handlers as RequestHandlers, NO_BODY, req.uuid);
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
    return this.request(header, { signal, timeoutMs: LIMITS.callTimeoutMs }, buffers, req.uuid);
  }

  /** Where a module's widget front end comes from: inline source, a file, or nothing. */
  async widgetAssets(module: string): Promise<Record<'esm' | 'css', WidgetAsset | null>> {
    const { esm, css } = await this.expect({ op: 'widget_assets', module });
    return { esm: (esm ?? null) as WidgetAsset | null, css: (css ?? null) as WidgetAsset | null };
  }

  /** Drops the live instance `uuid` (its record and saved widget state stay); false when it held none. */
  release(uuid: string): boolean {
    const held = this.live.delete(uuid);
    if (this.alive) this.bridge.send({ op: 'release', uuid });
    return held;
  }

  /**
   * Asks the worker's reading side for a sign of life (README "heartbeat"): its answer sets
   * `lastBeat`. Not a request: nothing waits for it, so a wedged worker piles up nothing.
   */
  heartbeat(): void {
    if (this.readyAt !== undefined) this.bridge.send({ op: 'heartbeat', id: 0 });
  }

  /** Asks the worker to exit; kills it if it has not after the grace period. */
  async stop(): Promise<void> {
    this.stopRequested = true;
    this.abort.abort(); // a placement still waiting for its worker gives up
    const launched = this.launched;
    if (!launched || this.exitError) return;
    this.bridge.send({ op: 'shutdown' });
    const timer = setTimeout(() => launched.kill('SIGKILL'), launched.stopGraceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** Kills the process at once (tests use it to simulate a crash). */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.launched?.kill(signal);
  }

  /** A request as a promise of its outcome (never rejects but for a header JSON cannot carry); `onSettled`, if given, hears it first. */
  private request(header: Record<string, unknown>, handlers: RequestHandlers = {}, body: Buffer[] = NO_BODY, instance?: string): Promise<CallOutcome> {
    const { onSettled } = handlers;
    return new Promise((resolve) =>
      this.submit(header, { ...handlers, onSettled: onSettled ? (outcome) => (onSettled(outcome), resolve(outcome)) : resolve }, body, instance),
    );
  }

  /** Sends a request on the bridge; `instance`: the live instance it uses (the worker creates it on first use). */
  private submit(header: Record<string, unknown> | ((id: number) => string), handlers: CallHandlers, body: Buffer[], instance?: string): void {
    const sent = this.bridge.submit(header, handlers, body);
    if (sent === undefined) return;
    this.lastActivity = sent;
    if (instance !== undefined) this.live.set(instance, sent);
  }

  private log(line: string, level?: LineLevel): void {
    (this.options.log ?? ((l: string) => process.stderr.write(l + '\n')))(`[worker ${this.pid ?? '?'}] ${line}`, level);
  }
}

/** The JSON of each target's part of a call header, per target object, with the fields it was made from. */
const targetJson = new WeakMap<CallTarget, { uuid: string; module: string; config: object; json: string }>();

/**
 * A call request's header as JSON text, written out instead of spreading the request into a
 * header object and stringifying that, and with its target's part kept per target object while
 * its fields are the same objects (see CallTarget): the spreads and the target serialized again
 * on every call were the largest cost of sending a call in the gateway's profile. Exactly
 * `JSON.stringify({ op: 'call', id, uuid, module, config, method, args, kwargs, stream })`
 * (worker.test.ts checks the two agree on generated requests).
 */
export function callHeader(id: number, req: CallRequest, stream: boolean): string {
  const { target } = req;
  let kept = targetJson.get(target);
  if (kept === undefined || kept.uuid !== target.uuid || kept.module !== target.module || kept.config !== target.config) {
    const json = `"uuid":${JSON.stringify(target.uuid)},"module":${JSON.stringify(target.module)},"config":${JSON.stringify(target.config)}`;
    targetJson.set(target, (kept = { uuid: target.uuid, module: target.module, config: target.config, json }));
  }
  return `{"op":"call","id":${id},${kept.json},"method":${JSON.stringify(req.method)},"args":${JSON.stringify(req.args ?? [])},"kwargs":${JSON.stringify(req.kwargs ?? {})},"stream":${stream}}`;
}

function joinPythonPath(first: string, rest: string | undefined): string {
  return rest ? `${first}${path.delimiter}${rest}` : first;
}
