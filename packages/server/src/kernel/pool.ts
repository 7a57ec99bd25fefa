/**
 * The worker pool: one long-lived worker per (project, interpreter), started lazily and reused.
 * It owns the lifetime of live instances and their workers (docs/writing/lifetime.md):
 *
 * - An instance lives until it is released, or has had no use and no attached client for
 *   `instanceIdleMs`. A worker stops only when it holds no live instance and has had no request
 *   for `workerIdleMs`.
 * - Supervision: a worker that dies unasked (a crash, a signal, an OOM kill) or stops answering
 *   heartbeats (wedged: killed) is started again at once when it held live instances or clients
 *   are attached, and `onLost` names the instances that died with it. One that keeps dying
 *   within `STABLE_MS` of its start is started again after a growing delay, instead of a restart
 *   loop. Requests arriving meanwhile wait for the new worker when it starts within
 *   `LIMITS.workerRestartWaitMs`, and get `worker_unavailable` at once when the delay is longer.
 *   Requests in flight when a worker dies fail with `worker_crashed` (their answer is lost), but
 *   for the gateway's own requests without effects (resolve, schema, …: `withoutEffects`), which
 *   run again on the new worker.
 * - Reload (`restartProject`, `portico serve --reload`): the workers of a project are stopped
 *   and started again on the code now on disk; `onLost` names their instances (`source_changed`).
 */
import { LIMITS } from '../config/constants.js';
import type { Resources } from '../contract/executions.js';
import { PorticoError } from '../errors.js';
import type { LineLevel, LogLine } from '../ops/logger.js';
import { DEFAULT_LANE, laneOf, Lanes, type Lane } from './lanes.js';
import type { PlacementInfo, WorkerPlacement } from './placement.js';
import { tellWaiting, type WaitListener } from './waiting.js';
import { Worker, type Push } from './worker.js';

/** Why a worker was started again after it died. */
export type RestartReason = 'crashed' | 'wedged';
/** Why live instances were lost: their worker died, its allocation ended under it (Slurm placement), or it was started again on changed source (`restartProject`). */
export type LossReason = RestartReason | 'allocation_ended' | 'source_changed';

export interface PoolOptions {
  onPush: (project: string, uuid: string, push: Push) => void;
  /** Whether a client is attached to `uuid` (an attached instance is in use however quiet it is). */
  isAttached?: (project: string, uuid: string) => boolean;
  /** Whether a worker must stay up although it holds no live instance (e.g. sockets are attached). */
  keepAlive?: (project: string, python: string) => boolean;
  /** Told when a worker died unasked, with the instances that died with it and why. */
  onLost?: (project: string, python: string, uuids: string[], reason: LossReason, message: string) => void;
  log?: LogLine;
  /** Told when a worker is started again after it died, and why. */
  onRestart?: (reason: RestartReason) => void;
  workerIdleMs?: number;
  instanceIdleMs?: number;
  /** A worker that has not answered a heartbeat for this long is wedged (0: never checked). */
  livenessMs?: number;
  /** Where workers run (default: local child processes); closed with the pool. */
  placement?: WorkerPlacement | undefined;
}

export interface WorkerInfo {
  directory: string;
  python: string;
  pid: number | null;
  /** Live instances it holds. */
  instances: number;
  /** Requests it has not answered yet. */
  calls: number;
  /** Where a placed worker runs: its Slurm job, node, state and resources (absent for a local child). */
  placement?: PlacementInfo;
}

/** Something wrong with a (project, interpreter) now: /v1/health reports `degraded` while any is. */
export interface WorkerProblem {
  project: string;
  python: string;
  /** `wedged` (no heartbeat answer: killed, being replaced), `restarting` (died, being replaced), `crash_loop` (keeps dying at start: backing off). */
  status: 'wedged' | 'restarting' | 'crash_loop';
  message: string;
  /** Deaths in a row, each within STABLE_MS of its start. */
  failures: number;
  since: string;
  /** crash_loop: when the next start is tried. */
  next_attempt_at?: string;
}

interface Slot {
  worker: Worker;
  ready: Promise<Worker>;
  /** Until `ready` settles: the worker is not alive yet (its reply channel opens before it is spawned), but it is the one to wait for. */
  starting: boolean;
}

/** Supervision state of a (project, interpreter) whose worker died, until a worker stays up. */
interface Trouble {
  /** Deaths in a row, each within STABLE_MS of its start. */
  failures: number;
  /** performance.now() before which no worker is started (crash loop). */
  notBefore: number;
  /** What /v1/health reports, while it reports anything. */
  problem?: WorkerProblem | undefined;
  restart?: NodeJS.Timeout | undefined;
  stable?: NodeJS.Timeout | undefined;
}

/** A worker that lived this long after its start did not crash-loop (ms). */
const STABLE_MS = 10_000;
/** Delay before the second start after quick deaths in a row; it doubles up to the maximum (ms). */
const BACKOFF_FIRST_MS = 500;
const BACKOFF_MAX_MS = 30_000;
/** A restart on changed source lets the calls in flight finish on the old code for at most this long (ms); the rest fail with worker_crashed. */
export const RELOAD_DRAIN_MS = 5_000;
const RELOAD_DRAIN_POLL_MS = 20;

export class KernelPool {
  private readonly slots = new Map<string, Slot>();
  private readonly lanes = new Lanes(); // what each module's class declares in __resources__ (Slurm placement)
  private readonly troubles = new Map<string, Trouble>();
  /** Workers being started again on changed source (restartProject): requests wait for the new one. */
  private readonly replacing = new Map<string, Promise<void>>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly beater: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly workerIdleMs: number;
  private readonly instanceIdleMs: number;
  private readonly livenessMs: number;
  private readonly placed: boolean; // workers away from the gateway (not local children): `__resources__` pick them, a pending start is listed, each says where it runs

  constructor(private readonly options: PoolOptions) {
    this.workerIdleMs = options.workerIdleMs ?? LIMITS.workerIdleMs;
    this.instanceIdleMs = options.instanceIdleMs ?? LIMITS.instanceIdleMs;
    this.livenessMs = options.livenessMs ?? LIMITS.workerLivenessMs;
    this.placed = (options.placement?.name ?? 'local') !== 'local';
    const shortest = Math.min(this.workerIdleMs, this.instanceIdleMs);
    this.sweeper = setInterval(() => sweep(this.slots, options, { instanceMs: this.instanceIdleMs, workerMs: this.workerIdleMs }, (line) => this.log(line)), Math.max(1000, Math.min(shortest / 4, 30_000))).unref();
    if (this.livenessMs > 0) {
      this.beater = setInterval(() => this.checkLiveness(), Math.max(50, this.livenessMs / LIMITS.workerHeartbeatsPerLiveness)).unref();
    }
  }

  /**
   * The running worker for (project, python), starting one if there is none. One backing off
   * after quick deaths in a row is waited for until `deadline` (performance.now(); default
   * `LIMITS.workerRestartWaitMs` from now); a next start later than that answers
   * `worker_unavailable` at once. While it starts (a pending Slurm job), `onWaiting` hears where it stands.
   */
  get(project: string, python: string, deadline = performance.now() + LIMITS.workerRestartWaitMs, lane: Lane = DEFAULT_LANE, onWaiting?: WaitListener): Promise<Worker> {
    if (this.closed) return Promise.reject(new Error('kernel pool is closed'));
    const key = slotKey(project, python, lane.key);
    const slot = this.slots.get(key);
    if (slot && slot.starting) return waitFor(slot, onWaiting);
    if (slot && slot.worker.alive) return slot.ready;
    const replacing = this.replacing.get(key);
    if (replacing) return replacing.then(() => this.get(project, python, deadline, lane, onWaiting));
    const trouble = this.troubles.get(key);
    const now = performance.now();
    if (trouble && now < trouble.notBefore) {
      if (trouble.notBefore <= deadline) {
        // The supervisor's restart (or this request, when nothing needed one) starts it then.
        return new Promise((resolve) => setTimeout(resolve, trouble.notBefore - now)).then(() => this.get(project, python, deadline, lane, onWaiting));
      }
      const wait = Math.ceil((trouble.notBefore - now) / 1000);
      return Promise.reject(
        new PorticoError('worker_unavailable', `The Python worker of this project died ${trouble.failures} times in a row soon after starting; the next start is in ${wait} s. Last: ${trouble.problem?.message ?? 'unknown'}`),
      );
    }
    return waitFor(this.start(key, project, python, lane.resources), onWaiting);
  }

  /** The worker for instances of `module`: with a placement that honours `__resources__`, the one of its class's lane (lanes.ts); `onWaiting` as for `get`. */
  async getFor(project: string, python: string, module: string, onWaiting?: WaitListener): Promise<Worker> {
    if (!this.placed) return this.get(project, python);
    const lane = this.lanes.get(project, python, module) ?? this.lanes.set(project, python, module, laneOf(module, await withoutEffects(this, project, python, (w) => w.declaredResources(module), onWaiting)));
    return this.get(project, python, undefined, lane, onWaiting);
  }

  /** `getFor`'s worker when it is running; never starts one. */
  peekFor(project: string, python: string, module: string): Worker | undefined {
    if (!this.placed) return this.peek(project, python);
    const lane = this.lanes.get(project, python, module);
    const slot = lane && this.slots.get(slotKey(project, python, lane.key));
    return slot?.worker.alive ? slot.worker : undefined;
  }

  private start(key: string, project: string, python: string, resources?: Resources): Slot {
    const worker = new Worker({
      project,
      python,
      resources,
      onPush: (uuid, push) => this.options.onPush(project, uuid, push),
      ...(this.options.log ? { log: this.options.log } : {}),
      placement: this.options.placement,
    });
    const ready = worker.start().then(
      () => {
        this.recovered(key, worker);
        return worker;
      },
      (err: unknown) => {
        if (this.slots.get(key)?.worker === worker) this.slots.delete(key);
        // Never spawned (a bad interpreter) or stopped meanwhile: no death to supervise.
        if (worker.exitReason === undefined && !worker.stopping) this.died(key, project, python, worker, `did not start: ${(err as Error).message}`);
        throw err;
      },
    );
    ready.catch(() => undefined); // its callers hear it; supervision has no caller
    worker.onExit(() => {
      if (this.slots.get(key)?.worker === worker) this.slots.delete(key);
      if (!worker.stopping && !this.closed) this.died(key, project, python, worker, worker.killedFor ?? `stopped (${worker.exitReason})`);
    });
    const entry: Slot = { worker, ready, starting: true };
    this.slots.set(key, entry);
    ready.then(
      () => (entry.starting = false),
      () => (entry.starting = false),
    );
    return entry;
  }

  /** The worker for (project, python) if one is running; never starts one. */
  peek(project: string, python: string): Worker | undefined {
    const slot = this.slots.get(this.peekKey(project, python));
    return slot?.worker.alive ? slot.worker : undefined;
  }

  /** The key `peek` asked for last, with the strings it was joined from. */
  private lastPeek = { project: '', python: '', key: slotKey('', '') };

  /**
   * peek runs on every call, nearly always for the same (project, python): joining the two
   * again made a new string for the Map to flatten and hash each time, a visible share of a
   * pipelined call's CPU in the gateway's profile. The last joined key is kept and reused.
   */
  private peekKey(project: string, python: string): string {
    const last = this.lastPeek;
    if (last.project !== project || last.python !== python) this.lastPeek = { project, python, key: slotKey(project, python) };
    return this.lastPeek.key;
  }

  /** The project's source changed: its classes' `__resources__` are asked again; its running workers (every interpreter and lane), to drop the changed modules. */
  sourceChanged(project: string): Worker[] {
    this.lanes.forget(project);
    return [...this.slots.values()].flatMap(({ worker }) => (worker.project === project && worker.alive ? [worker] : []));
  }

  /** Drops the live instance `uuid` from every worker of `project`; whether one held it. */
  release(project: string, uuid: string): boolean {
    let held = false;
    for (const { worker } of this.slots.values()) if (worker.project === project && worker.alive && worker.release(uuid)) held = true;
    return held;
  }

  /** Whether a worker of the project holds a live instance of `uuid`. */
  isLive(project: string, uuid: string): boolean {
    for (const { worker } of this.slots.values()) if (worker.project === project && worker.alive && worker.live.has(uuid)) return true;
    return false;
  }

  list(): WorkerInfo[] {
    return [...this.slots.values()]
      .filter((slot) => slot.worker.alive || (slot.starting && this.placed)) // a pending job is listed too
      .map(({ worker }) => workerInfo(worker, this.placed));
  }

  /** Live instances per project directory, across its interpreters. */
  liveInstances(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const { worker } of this.slots.values()) {
      if (worker.alive) counts[worker.project] = (counts[worker.project] ?? 0) + worker.live.size;
    }
    return counts;
  }

  /** What is wrong now (a wedge, a restart under way, a crash loop); empty when all is well. */
  problems(): WorkerProblem[] {
    return [...this.troubles.values()].flatMap((t) => (t.problem ? [{ ...t.problem }] : []));
  }

  /**
   * Starts the workers of `project` again on the code now on disk (`portico serve --reload`):
   * each lets its calls in flight finish (at most RELOAD_DRAIN_MS), stops (writing the widget
   * state it has not saved yet), `onLost` names its live instances with reason `source_changed`,
   * and a new worker starts at once when it held any or clients are attached. Requests arriving
   * meanwhile wait for the new worker. `why` ends the message the instances' clients get.
   */
  async restartProject(project: string, why: string): Promise<void> {
    const restarts = [...this.slots].flatMap(([key, slot]) => {
      if (slot.worker.project !== project) return [];
      this.slots.delete(key); // from now on, requests wait for the replacement
      const done: Promise<void> = this.replace(key, slot, why).finally(() => {
        if (this.replacing.get(key) === done) this.replacing.delete(key);
      });
      this.replacing.set(key, done);
      return [done];
    });
    await Promise.all(restarts);
  }

  private async replace(key: string, slot: Slot, why: string): Promise<void> {
    const { worker } = slot;
    const { project, python, resources } = worker;
    this.lanes.forget(project);
    await slot.ready.catch(() => undefined); // one still starting is stopped once it is up
    const deadline = performance.now() + RELOAD_DRAIN_MS;
    while (worker.alive && worker.busy > 0 && !this.closed && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, RELOAD_DRAIN_POLL_MS));
    const lost = [...worker.live.keys()];
    await worker.stop();
    worker.live.clear();
    const message = `The Python worker was started again on the project's new source: ${why}`;
    this.log(`${message}; ${lost.length} live instance(s) are made again on their next use`);
    if (lost.length) this.options.onLost?.(project, python, lost, 'source_changed', message);
    // A supervised restart may have started one meanwhile (the old worker died while draining).
    if (this.closed || this.slots.has(key) || !(lost.length > 0 || (this.options.keepAlive?.(project, python) ?? false))) return;
    await this.start(key, project, python, resources).ready.catch(() => undefined); // a failed start is a death of its own
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    clearInterval(this.beater);
    for (const trouble of this.troubles.values()) {
      clearTimeout(trouble.restart);
      clearTimeout(trouble.stable);
    }
    const workers = [...this.slots.values()].map((slot) => slot.worker);
    this.slots.clear();
    await Promise.all([...workers.map((worker) => worker.stop()), ...this.replacing.values()]);
    await this.options.placement?.close();
  }

  /** Sends every ready worker a heartbeat; one that left the last ones unanswered too long is wedged. */
  private checkLiveness(): void {
    const now = performance.now();
    for (const { worker } of this.slots.values()) {
      if (!worker.alive || worker.readyAt === undefined || worker.killedFor) continue;
      const silent = now - worker.lastBeat;
      if (silent < this.livenessMs) {
        worker.heartbeat();
        continue;
      }
      worker.killedFor = `answered no heartbeat for ${(silent / 1000).toFixed(1)} s (wedged)`;
      this.log(`worker ${worker.pid} of ${worker.project} ${worker.killedFor}; killing it`, 'error');
      const trouble = this.troubleOf(slotKey(worker.project, worker.python));
      trouble.problem = { project: worker.project, python: worker.python, status: 'wedged', message: `The Python worker (pid ${worker.pid}) ${worker.killedFor}`, failures: trouble.failures, since: new Date().toISOString() };
      worker.kill('SIGKILL');
    }
  }

  /** A worker died unasked (or never started): tell whom it concerns, and start it again unless nobody needs it. */
  private died(key: string, project: string, python: string, worker: Worker, what: string): void {
    const reason: RestartReason = worker.killedFor ? 'wedged' : 'crashed';
    const lost = [...worker.live.keys()];
    worker.live.clear();
    const ended = worker.killedFor ? undefined : worker.allocationEnded;
    const message = ended ? `The Python worker (pid ${worker.pid ?? '?'}) ended with its Slurm allocation: ${ended.message}` : `The Python worker (pid ${worker.pid ?? '?'}) ${what}`;
    this.log(`${message}; ${lost.length} live instance(s) lost`, 'error');
    if (lost.length) this.options.onLost?.(project, python, lost, ended ? 'allocation_ended' : reason, message);
    const trouble = this.troubleOf(key);
    const quick = worker.readyAt === undefined || performance.now() - worker.readyAt < STABLE_MS;
    trouble.failures = quick ? trouble.failures + 1 : 1;
    clearTimeout(trouble.stable);
    const delay = trouble.failures <= 1 ? 0 : Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** (trouble.failures - 2));
    trouble.notBefore = performance.now() + delay;
    const needed = lost.length > 0 || (this.options.keepAlive?.(project, python) ?? false);
    trouble.problem = {
      project,
      python,
      status: delay > 0 ? 'crash_loop' : reason === 'wedged' ? 'wedged' : 'restarting',
      message,
      failures: trouble.failures,
      since: trouble.problem?.since ?? new Date().toISOString(),
      ...(delay > 0 ? { next_attempt_at: new Date(Date.now() + delay).toISOString() } : {}),
    };
    // Nothing to bring back: the next request starts a worker (after the back-off, if any).
    if (!needed) {
      if (delay === 0) trouble.problem = undefined;
      return;
    }
    trouble.restart = setTimeout(() => {
      trouble.restart = undefined;
      if (this.closed || this.slots.has(key)) return;
      this.options.onRestart?.(reason);
      this.start(key, project, python, worker.resources).ready.catch(() => undefined); // a failed start is a death of its own
    }, delay);
    trouble.restart.unref();
  }

  private troubleOf(key: string): Trouble {
    let trouble = this.troubles.get(key);
    if (!trouble) this.troubles.set(key, (trouble = { failures: 0, notBefore: 0 }));
    return trouble;
  }

  /**
   * A worker is ready. What health reports clears now, unless the worker came back from a crash
   * loop: that ends only once it stays up. Its count of quick deaths is forgotten once it has
   * stayed up STABLE_MS, so a worker that dies again soon after this start backs off.
   */
  private recovered(key: string, worker: Worker): void {
    const trouble = this.troubles.get(key);
    if (!trouble) return;
    if (trouble.failures <= 1) trouble.problem = undefined;
    clearTimeout(trouble.stable);
    trouble.stable = setTimeout(() => {
      if (worker.alive && this.troubles.get(key) === trouble) this.troubles.delete(key);
    }, STABLE_MS);
    trouble.stable.unref();
  }

  private log(line: string, level?: LineLevel): void {
    if (this.options.log) this.options.log(line, level);
    else process.stderr.write(line + '\n');
  }
}

/**
 * The pool's sweep (docs/writing/lifetime.md): releases instances idle too long, then takes out of
 * `slots` and stops the workers that hold none and had no request for long.
 */
function sweep(slots: Map<string, Slot>, options: PoolOptions, idle: { instanceMs: number; workerMs: number }, log: (line: string) => void): void {
  const now = performance.now();
  for (const [key, slot] of slots) {
    const { worker } = slot;
    if (!worker.alive) continue;
    for (const [uuid, lastUsed] of worker.live) {
      if (options.isAttached?.(worker.project, uuid)) worker.live.set(uuid, now);
      else if (now - lastUsed >= idle.instanceMs) {
        worker.release(uuid);
        log(`released instance ${uuid} of ${worker.project}: no use and no client for ${Math.round(idle.instanceMs / 1000)} s`);
      }
    }
    // A worker still starting is in use: its first request waits for it outside `busy`. (Under
    // load a start outlasted a short --worker-idle, and the sweep stopped the worker it awaited.)
    if (worker.busy > 0 || worker.readyAt === undefined) worker.lastActivity = now;
    if (worker.live.size > 0 || now - worker.lastActivity < idle.workerMs) continue;
    if (options.keepAlive?.(worker.project, worker.python)) continue;
    slots.delete(key);
    void worker.stop();
  }
}

/** What GET /v1/projects says of a worker: where it runs too, when it was `placed` away from the gateway. */
function workerInfo(worker: Worker, placed: boolean): WorkerInfo {
  const where = placed ? { placement: worker.placementInfo } : {};
  return { directory: worker.project, python: worker.python, pid: worker.pid ?? null, instances: worker.live.size, calls: worker.busy, ...where };
}

function slotKey(project: string, python: string, lane = ''): string {
  return lane ? `${project}\0${python}\0${lane}` : `${project}\0${python}`;
}

/**
 * Runs `op`, a request without effects in the worker (resolve, schema, modules, widget assets),
 * on the worker for (project, python). When that worker dies under it (`worker_crashed`: a call
 * of another interface took the process down), `op` runs once more on the new worker: nothing
 * of it can have happened, and the request that needed it arrived after the crash, not during it.
 */
export async function withoutEffects<T>(pool: KernelPool, project: string, python: string, op: (worker: Worker) => Promise<T>, onWaiting?: WaitListener): Promise<T> {
  const worker = await pool.get(project, python, undefined, undefined, onWaiting);
  try {
    return await op(worker);
  } catch (err) {
    if (!(err instanceof PorticoError && err.code === 'worker_crashed') || worker.alive) throw err;
    return op(await pool.get(project, python, undefined, undefined, onWaiting));
  }
}

/** A starting worker's `ready`; `onWaiting` hears where its placement stands meanwhile (waiting.ts). */
function waitFor(slot: Slot, onWaiting: WaitListener | undefined): Promise<Worker> {
  if (onWaiting) tellWaiting(onWaiting, () => slot.worker.placementInfo, slot.ready);
  return slot.ready;
}
