/**
 * The worker pool: one long-lived worker per (project, interpreter), started lazily, reused,
 * replaced after a crash (the next request starts a fresh one) and stopped when idle.
 */
import { LIMITS } from '../config/constants.js';
import { Worker, type Push } from './worker.js';

export interface PoolOptions {
  onPush: (project: string, uuid: string, push: Push) => void;
  /** Whether a worker must stay up although no call is running (e.g. sockets are attached). */
  keepAlive?: (project: string, python: string) => boolean;
  log?: (line: string) => void;
  idleMs?: number;
  /** Told when a worker starts for a (project, interpreter) that had one before. */
  onRestart?: () => void;
}

export interface WorkerInfo {
  directory: string;
  python: string;
  pid: number | null;
}

interface Slot {
  worker: Worker;
  ready: Promise<Worker>;
  lastUsed: number;
  /** Until `ready` settles: the worker is not alive yet (its reply channel opens before it is spawned), but it is the one to wait for. */
  starting: boolean;
}

export class KernelPool {
  private readonly slots = new Map<string, Slot>();
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  /** Slots that ever had a worker (a new worker for one is a restart). */
  private readonly started = new Set<string>();

  constructor(private readonly options: PoolOptions) {
    const idleMs = options.idleMs ?? LIMITS.workerIdleMs;
    this.sweeper = setInterval(() => this.stopIdle(idleMs), Math.max(1000, Math.min(idleMs / 4, 30_000)));
    this.sweeper.unref();
  }

  /** The running worker for (project, python), starting one if there is none. */
  get(project: string, python: string): Promise<Worker> {
    if (this.closed) return Promise.reject(new Error('kernel pool is closed'));
    const key = slotKey(project, python);
    const slot = this.slots.get(key);
    if (slot && (slot.starting || slot.worker.alive)) {
      slot.lastUsed = Date.now();
      return slot.ready;
    }
    if (this.started.has(key)) this.options.onRestart?.();
    this.started.add(key);
    const worker = new Worker({
      project,
      python,
      onPush: (uuid, push) => this.options.onPush(project, uuid, push),
      ...(this.options.log ? { log: this.options.log } : {}),
    });
    const ready = worker.start().then(
      () => worker,
      (err) => {
        if (this.slots.get(key)?.worker === worker) this.slots.delete(key);
        throw err;
      },
    );
    worker.onExit(() => {
      if (this.slots.get(key)?.worker === worker) this.slots.delete(key);
    });
    const entry: Slot = { worker, ready, lastUsed: Date.now(), starting: true };
    this.slots.set(key, entry);
    ready.then(
      () => (entry.starting = false),
      () => (entry.starting = false),
    );
    return ready;
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
   * again made a new string for the Map to flatten and hash each time, 2% of a pipelined
   * call's CPU in the gateway's profile. The last joined key is kept and reused.
   */
  private peekKey(project: string, python: string): string {
    const last = this.lastPeek;
    if (last.project !== project || last.python !== python) this.lastPeek = { project, python, key: slotKey(project, python) };
    return this.lastPeek.key;
  }

  list(): WorkerInfo[] {
    return [...this.slots.values()]
      .filter((slot) => slot.worker.alive)
      .map(({ worker }) => ({ directory: worker.project, python: worker.python, pid: worker.pid ?? null }));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    const workers = [...this.slots.values()].map((slot) => slot.worker);
    this.slots.clear();
    await Promise.all(workers.map((worker) => worker.stop()));
  }

  private stopIdle(idleMs: number): void {
    const now = Date.now();
    for (const [key, slot] of this.slots) {
      const { worker } = slot;
      if (worker.busy > 0) slot.lastUsed = now;
      if (now - slot.lastUsed < idleMs) continue;
      if (this.options.keepAlive?.(worker.project, worker.python)) continue;
      this.slots.delete(key);
      void worker.stop();
    }
  }
}

function slotKey(project: string, python: string): string {
  return `${project}\0${python}`;
}
