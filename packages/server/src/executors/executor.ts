/**
 * The executor seam: how a run is started, observed and stopped by the engine that runs it. The run
 * directory (store/runs.ts) stays the single source of truth for a run's script, output, status and
 * cancel marker; an executor only adds what its engine knows (a live child process, a Slurm job and
 * its queue state). Two implementations: `local.ts` (a detached child process of the gateway, the
 * default) and `slurm.ts` (a batch job submitted with sbatch).
 */
import type { Resources } from '../contract/executions.js';
import type { EngineView, JobPhase, RunStore } from '../store/runs.js';

export const EXECUTORS = ['local', 'slurm'] as const;
export type ExecutorName = (typeof EXECUTORS)[number];

/** A run to start: its directory is written (execution.json) before `start` is called. */
export interface RunToStart {
  uuid: string;
  runs: RunStore;
  /** The project directory (the run's working directory). */
  project: string;
  /** The interpreter that runs `python -m portico.run`. */
  python: string;
  /** Per-dispatch resources, validated by the contract (executors without a queue ignore them). */
  resources?: Resources | undefined;
}

export type { EngineView, JobPhase };

export interface Executor {
  readonly name: ExecutorName;
  /** Starts a run whose directory is written; throws a PorticoError when the engine refuses it. */
  start(run: RunToStart): Promise<void>;
  /** The engine's view of a run that has not recorded its end (undefined: the engine knows nothing of it). */
  observe(runs: RunStore, uuid: string): Promise<EngineView | undefined>;
  /** Called after the cancel marker is written: whatever else the engine needs to stop the run. */
  cancel(runs: RunStore, uuid: string): Promise<void>;
  /** Called once a run's end is recorded, so that the engine stops following it. */
  forget(runs: RunStore, uuid: string): void;
  /** Commands run against the engine's scheduler so far, by command (none for local processes). */
  readonly commands: Readonly<Record<string, number>>;
  /** Stops timers; never stops runs (they outlive the gateway). */
  close(): void;
}
