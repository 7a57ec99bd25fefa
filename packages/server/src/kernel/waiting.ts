/**
 * Waiting for a worker whose placement is not up yet (a Slurm job still pending,
 * docs/running/slurm-workers.md "Waiting for an allocation"): the request that waits hears where
 * the worker's job stands, once when its wait starts and again whenever Slurm's state or reason
 * changes, until the worker is up or the wait fails.
 *
 * A request that wants to hear it passes a `WaitListener` down to the pool (`KernelPool.get`,
 * `getFor`, `withoutEffects`); the pool tells it when the worker that request needs is still
 * starting. A request without one (the gateway's own, a plain REST call) hears nothing.
 */
import type { PlacementInfo } from './placement.js';

/** Where a waited-for worker's job stands: Slurm's job id, state and reason, and that as one line. */
export interface WaitNotice {
  job: string | null;
  state: string;
  reason: string | null;
  /** `Slurm job 123: PENDING (Priority)`. */
  message: string;
}

export type WaitListener = (notice: WaitNotice) => void;

/** What each listener was told last. */
const told = new WeakMap<WaitListener, string>();

/** How often a waiting request looks at its worker's placement again (ms); Slurm's is read from squeue every second. */
const LOOK_MS = 250;

/**
 * Tells `listener` where `info()` says the worker stands, until `ready` settles: at once when
 * there is something to tell, then on every change. Only a placement that reports a job with a
 * state says anything (a local child never does).
 */
export function tellWaiting(listener: WaitListener, info: () => PlacementInfo, ready: Promise<unknown>): void {
  const look = (): void => {
    const notice = noticeOf(info());
    // By listener, not by wait: one request may wait on a starting worker twice at once (a
    // connect resolves its config and finds its class's worker), and hears each change once.
    if (!notice || notice.message === told.get(listener)) return;
    told.set(listener, notice.message);
    try {
      listener(notice);
    } catch {
      // a socket gone meanwhile: its request ends on its own
    }
  };
  look();
  const timer = setInterval(look, LOOK_MS);
  const stop = (): void => clearInterval(timer);
  ready.then(stop, stop);
}

/** The notice for a placement's info: none until it names a job (srun says it is queued, or squeue lists it). */
export function noticeOf(info: PlacementInfo): WaitNotice | undefined {
  if (!info.job || !info.state) return undefined;
  const reason = info.reason ?? null;
  const where = info.state === 'PENDING' ? (reason ? ` (${reason})` : '') : info.node ? ` on ${info.node}` : '';
  return { job: info.job, state: info.state, reason, message: `Slurm job ${info.job}: ${info.state}${where}` };
}
