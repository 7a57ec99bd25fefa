/**
 * Where a worker process runs, and how its frames reach the gateway (README "Placement"). The
 * Worker above (worker.ts) only sees bytes: a Writable for its requests and a `ReadInPlace` that
 * receives its replies. Two placements: `LocalPlacement` (the default: a child process of the
 * gateway on fd 3 / fd 4, as it always was) and the Slurm one (`executors/slurm-workers.ts`: a
 * process started by srun in an allocation that connects back over TCP with a one-time secret).
 */
import { spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import type { Resources } from '../contract/executions.js';
import { PorticoError } from '../errors.js';
import type { LineLevel } from '../ops/logger.js';
import { openReplyChannel, type ReadInPlace } from './reply-channel.js';
import { forwardOutput } from './worker-output.js';

export type { ReadInPlace } from './reply-channel.js';

/** A worker to start: the project it serves, its interpreter and the environment that makes `python -m portico.worker` importable. */
export interface LaunchSpec {
  project: string;
  python: string;
  /** What its allocation asks for (a class's `__resources__`); undefined: the placement's defaults. Local placement ignores it. */
  resources?: Resources | undefined;
  /** The gateway's environment with PYTHONPATH (the bundled package first), PYTHONUNBUFFERED and PYTHONSAFEPATH set. */
  env: NodeJS.ProcessEnv;
  /** The worker's stdout/stderr (one entry per line, a traceback as one) and the placement's own notes. */
  log: (line: string, level?: LineLevel) => void;
  /** Told, while the worker is not up yet, how to say where it stands (a pending job: GET /v1/projects lists it). */
  onPending?: (info: () => PlacementInfo) => void;
  /** Aborted when the worker is stopped before it is up: a placement still waiting gives up (and releases what it holds). */
  signal: AbortSignal;
}

/** How a worker ended: `why` as the log says it (`exit code 1`, `signal SIGKILL`), and, when its allocation ended under it, Slurm's word for that. */
export interface WorkerEnd {
  why: string;
  allocationEnded?: { state: string; message: string } | undefined;
}

/** Where a placed worker is, for GET /v1/projects (nothing for a local child process). */
export interface PlacementInfo {
  job?: string | null;
  node?: string | null;
  state?: string | null;
  /** Slurm's reason for the state while the job is pending (Resources, Priority). */
  reason?: string | null;
  resources?: Record<string, unknown>;
}

export interface LaunchedWorker {
  /** The process id the gateway knows before `ready` (a local child's; none for a placed worker). */
  pid?: number | undefined;
  /** Gateway → worker frames. */
  input: Writable;
  /** Settles once the process has ended, however it ended. */
  exited: Promise<WorkerEnd>;
  /** Ends it at once (a wedge, a broken frame stream, a stop past its grace). */
  kill(signal?: NodeJS.Signals): void;
  /** How long the worker may take from here to its `ready` frame (ms). */
  readyTimeoutMs: number;
  /** How long `stop` waits after `shutdown` before `kill` (ms). */
  stopGraceMs: number;
  info(): PlacementInfo;
}

export interface WorkerPlacement {
  readonly name: 'local' | 'slurm';
  /**
   * Starts a worker whose replies go to `reader`; resolves once requests can be written to it.
   * Rejects with a PorticoError when it cannot start (its message is the client's).
   */
  launch(spec: LaunchSpec, reader: ReadInPlace): Promise<LaunchedWorker>;
  /** Ends whatever it still holds (allocations); the workers themselves were stopped first. */
  close(): Promise<void>;
}

/** The default: a child process of the gateway, fd 3 / fd 4 (README "Process"). */
export class LocalPlacement implements WorkerPlacement {
  readonly name = 'local' as const;

  constructor(
    private readonly readyTimeoutMs: number,
    private readonly stopGraceMs: number,
  ) {}

  async launch({ project, python, env, log, signal }: LaunchSpec, reader: ReadInPlace): Promise<LaunchedWorker> {
    // Replies are decoded as they are read in place (reply-channel.ts); a broken frame stream
    // kills the process (`kill` below), whose exit reports it.
    const channel = await openReplyChannel(reader).catch((err: Error) => {
      throw new PorticoError('worker_unavailable', "Cannot open the worker's reply channel (the gateway's log says why)", { internal: `Cannot open the worker's reply channel: ${err.message}` });
    });
    channel.gatewayEnd.on('error', () => {}); // a reset after a crash: the exit handler reports it
    if (signal.aborted) {
      channel.gatewayEnd.destroy();
      channel.workerEnd.destroy();
      throw new PorticoError('worker_unavailable', 'The Python worker was stopped before it started');
    }
    const child = (() => {
      try {
        return spawn(python, ['-m', 'portico.worker', project], {
          cwd: project,
          env,
          stdio: ['ignore', 'pipe', 'pipe', 'pipe', channel.workerEnd],
          // Its own session and process group: a terminal's Ctrl+C (SIGINT to the whole foreground
          // group) reaches the gateway, which drains and stops its workers, never the worker itself
          // (a KeyboardInterrupt mid-call). A gateway that dies leaves it EOF on its pipe: it exits.
          detached: true,
        });
      } finally {
        channel.workerEnd.destroy(); // the worker has its own copy; the gateway end sees EOF when it exits
      }
    })();
    const input = child.stdio[3] as Writable;
    input.on('error', () => {}); // EPIPE after a crash: the exit handler reports it
    for (const stream of [child.stdout, child.stderr]) forwardOutput(stream!, log);
    const exited = new Promise<WorkerEnd>((resolve, reject) => {
      child.on('exit', (code, sig) => resolve({ why: sig ? `signal ${sig}` : `exit code ${code}` }));
      child.on('error', (err) => {
        // The interpreter's name is no secret (GET /v1/projects lists them); why it failed is the operator's.
        reject(new PorticoError('worker_unavailable', `Cannot start Python interpreter '${python}' (the gateway's log says why)`, { internal: `Cannot start Python interpreter '${python}': ${err.message}` }));
      });
    });
    return {
      pid: child.pid,
      input,
      exited,
      kill: (sig = 'SIGKILL') => {
        if (sig === 'SIGKILL') channel.gatewayEnd.destroy();
        child.kill(sig);
      },
      readyTimeoutMs: this.readyTimeoutMs,
      stopGraceMs: this.stopGraceMs,
      info: () => ({}),
    };
  }

  async close(): Promise<void> {}
}
