/**
 * Workers placed by Slurm (`portico serve --workers slurm`, docs/running/slurm-workers.md): each
 * worker is `srun … <python> -m portico.worker --connect HOST:PORT <project>`, a child process of
 * the gateway that asks Slurm for an allocation and runs the worker in it. The worker connects
 * back (kernel/connect-back.ts: a one-time secret per worker, passed in its environment, never in
 * argv) and from then on speaks the frames of a local worker over that connection.
 *
 * - srun's stdout and stderr are the worker's (and srun's own notes): they go to the gateway log.
 * - Until the worker connects, it waits at most `waitMs`; then its job is cancelled and the start
 *   fails with 503 `worker_unavailable` naming the job and Slurm's state and reason. An srun that
 *   ends before that was refused (400 `job_refused` with Slurm's message), could not reach the
 *   controller (503 `scheduler_unavailable`), or its worker could not connect back (503, naming
 *   the address).
 * - Every job is named `portico-worker-<tag>-<n>`, `tag` being this gateway's (its host, project
 *   and port): stopping the gateway ends every allocation it holds, and a gateway starting with
 *   the same tag cancels the jobs a crashed predecessor left (`cancelOrphans`).
 * - A job Slurm ends (scancel from outside, time limit, preemption, node failure) ends srun; the
 *   worker's end then carries `allocationEnded`, and its instances' clients hear
 *   `instance_restarted` with reason `allocation_ended`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { hostname, userInfo } from 'node:os';
import { LIMITS } from '../config/constants.js';
import type { Resources } from '../contract/executions.js';
import { PorticoError } from '../errors.js';
import type { LineLevel } from '../ops/logger.js';
import { ConnectBack, type ConnectedWorker } from '../kernel/connect-back.js';
import type { LaunchedWorker, LaunchSpec, PlacementInfo, ReadInPlace, WorkerEnd, WorkerPlacement } from '../kernel/placement.js';
import { forwardOutput } from '../kernel/worker-output.js';
import { sbatchResourceArgs, type SlurmDefaults } from './sbatch-options.js';
import { slurmCommand, type SlurmCommand } from './slurm-queue.js';

export interface SlurmWorkerOptions extends SlurmDefaults {
  /** Environment of srun, squeue and scancel (SLURM_CONF, PATH); default: the gateway's. */
  env?: NodeJS.ProcessEnv | undefined;
  /** `host` or `host:port` workers connect back to, and where the gateway listens for them (default: this host's name, a free port). */
  connect?: string | undefined;
  /** How long a worker may take from srun to its connect-back: allocation, start and import (ms). */
  waitMs: number;
  /** What names this gateway's jobs (see the file header); default from the host, the project and `port`. */
  tag: string;
  /** Resources of every worker's allocation (the keys of a dispatch's `resources`). */
  resources?: Resources | undefined;
}

/** A job name's prefix; the tag and a per-worker part follow. */
const JOB_PREFIX = 'portico-worker-';
/** How often a worker's job is looked up in squeue while it is pending (ms). */
const FOLLOW_MS = 1000;
/** How long a killed worker's srun may take to end after scancel before it is killed itself (ms). */
const SRUN_KILL_GRACE_MS = 5_000;

/** The tag of a gateway's jobs: the same for the same host, project and port, so a restart finds what it left. */
export function workerJobTag(project: string, port: number): string {
  return createHash('sha256').update(`${hostname()}\0${project}\0${port}`).digest('hex').slice(0, 10);
}

/** `host` or `host:port` (`[v6]:port`) → its parts; port 0 when none is named. */
export function parseConnectAddress(text: string): { host: string; port: number } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (v6) return { host: v6[1]!, port: Number(v6[2] ?? 0) };
  const [host, port, extra] = text.split(':');
  if (!host || extra !== undefined || (port !== undefined && !/^\d{1,5}$/.test(port)) || Number(port ?? 0) > 65535) throw new Error(`'${text}' is not HOST or HOST:PORT`);
  return { host, port: Number(port ?? 0) };
}

/** What slurmstepd says when Slurm ends a step or job: `*** STEP 3.0 ON node CANCELLED AT … DUE TO TIME LIMIT ***`. */
const ENDED = /\*\*\* (?:STEP|JOB) (\d+)\S* ON (\S+) (.+?) \*\*\*/;

/** Slurm's state word for what slurmstepd said. */
function endedState(text: string): string {
  if (/TIME LIMIT/.test(text)) return 'TIMEOUT';
  if (/PREEMPTION/.test(text)) return 'PREEMPTED';
  if (/NODE FAIL/.test(text)) return 'NODE_FAIL';
  return 'CANCELLED';
}

/**
 * What a line srun or slurmstepd printed says of the job's end, when it says Slurm ended it:
 * `*** STEP 3.0 ON node CANCELLED AT … DUE TO TIME LIMIT ***` (with the job id), or srun's own
 * `Job has been cancelled` / `Force Terminated` (without). `job` names it in the message otherwise.
 */
export function jobEnded(line: string, job: string): { id: string | null; state: string; message: string } | undefined {
  const ended = ENDED.exec(line);
  if (ended) {
    const state = endedState(ended[3]!);
    return { id: ended[1]!, state, message: `Slurm ended job ${ended[1]} on ${ended[2]} (${state}): ${ended[3]}` };
  }
  if (/^srun: (Job has been cancelled|Force Terminated)/.test(line)) return { id: null, state: 'CANCELLED', message: `Slurm ended job ${job} (CANCELLED): ${line.replace(/^srun: /, '')}` };
  return undefined;
}

/** Why srun ended before its worker connected back (`notes`: the last lines it printed), as the client's error. */
export function startFailure(notes: string[], job: string, address: string): PorticoError {
  const said = notes.join('\n');
  const connect = /cannot connect back to the gateway at .*/.exec(said);
  if (connect) return new PorticoError('worker_unavailable', `The Python worker in Slurm job ${job} ${connect[0]} (set --worker-connect to an address the nodes reach)`);
  const refused = /srun: error: (?:Unable to allocate resources: )?(.+)/.exec(said);
  if (/Unable to contact slurm controller|Socket timed out|Connection refused|Could not establish a configuration source|cannot run srun/i.test(said))
    return new PorticoError('scheduler_unavailable', `Slurm cannot be reached to place the Python worker: ${refused?.[1] ?? said.trim().split('\n').pop() ?? 'srun failed'}`);
  if (refused && /Unable to allocate resources|invalid|not available|exceed|denied|Requested/i.test(said)) return new PorticoError('job_refused', `Slurm did not take the Python worker's allocation: ${refused[1]}`);
  return new PorticoError('worker_unavailable', `The Python worker's srun ended before the worker connected back to ${address}: ${said.trim().split('\n').slice(-3).join(' / ') || 'it said nothing'}`);
}

export class SlurmWorkers implements WorkerPlacement {
  readonly name = 'slurm' as const;
  private readonly env: NodeJS.ProcessEnv;
  private readonly run: SlurmCommand;
  private readonly listener: ConnectBack;
  /** Jobs of workers this gateway started and that have not ended, by job name. */
  private readonly jobs = new Map<string, SrunJob>();
  private count = 0;

  constructor(
    private readonly options: SlurmWorkerOptions,
    private readonly log: (line: string, level?: LineLevel) => void,
  ) {
    this.env = options.env ?? process.env;
    this.run = slurmCommand(this.env, LIMITS.slurmCommandTimeoutMs);
    const { host, port } = parseConnectAddress(options.connect ?? hostname());
    this.listener = new ConnectBack(host, port, log);
  }

  /** Connect-backs refused so far. */
  get refused(): number {
    return this.listener.refused;
  }

  /** Cancels the jobs an earlier gateway with this tag left (it was killed before it could); resolves with their ids. */
  async cancelOrphans(): Promise<string[]> {
    const res = await this.run('squeue', ['--noheader', '--format=%i|%j', `--user=${userInfo().username}`]);
    if (res.code !== 0) {
      this.log(`squeue failed (${res.code}) looking for worker jobs left by an earlier run: ${res.stderr.trim().slice(0, 500)}`, 'warn');
      return [];
    }
    const mine = `${JOB_PREFIX}${this.options.tag}-`;
    const ids = res.stdout
      .split('\n')
      .map((line) => line.trim().split('|'))
      .filter(([id, name]) => id && name?.startsWith(mine) && !this.jobs.has(name))
      .map(([id]) => id!);
    if (!ids.length) return [];
    const cancel = await this.run('scancel', ids);
    if (cancel.code !== 0) this.log(`scancel ${ids.join(' ')} failed (${cancel.code}): ${cancel.stderr.trim()}`, 'warn');
    this.log(`cancelled ${ids.length} worker job(s) an earlier run of this gateway left: ${ids.join(', ')}`, 'warn');
    return ids;
  }

  async launch(spec: LaunchSpec, reader: ReadInPlace): Promise<LaunchedWorker> {
    const address = await this.listener.address().catch((err: Error) => {
      throw new PorticoError('worker_unavailable', 'Cannot listen for workers connecting back (the gateway’s log says why)', { internal: err.message });
    });
    const expected = this.listener.expect();
    const jobName = `${JOB_PREFIX}${this.options.tag}-${++this.count}${randomBytes(3).toString('hex')}`;
    const resources = spec.resources ?? this.options.resources ?? {};
    const args = [
      `--job-name=${jobName}`,
      `--chdir=${spec.project}`,
      '--ntasks=1',
      '--export=ALL',
      '--kill-on-bad-exit=1',
      ...sbatchResourceArgs(resources, this.options),
      spec.python,
      '-m',
      'portico.worker',
      '--connect',
      address,
      spec.project,
    ];
    const env = { ...this.env, PYTHONPATH: spec.env.PYTHONPATH, PYTHONUNBUFFERED: '1', PYTHONSAFEPATH: '1', PORTICO_WORKER_TOKEN: expected.token };
    const job = new SrunJob(jobName, this.run, spec.log);
    this.jobs.set(jobName, job);
    job.exited.finally(() => this.jobs.delete(jobName)).catch(() => undefined);
    try {
      job.start(args, env);
      spec.onPending?.(() => job.info(resources, this.options));
      job.follow();
      const connected = await this.connected(job, expected, spec.signal, address);
      return job.attach(connected, reader, resources, this.options);
    } catch (err) {
      expected.cancel();
      await job.kill();
      throw err;
    }
  }

  /** The worker's connection, or why it will not come (its job is cancelled by the caller). */
  private async connected(job: SrunJob, expected: { connected: Promise<ConnectedWorker> }, signal: AbortSignal, address: string): Promise<ConnectedWorker> {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: () => void = () => undefined;
    const outcome = await Promise.race([
      expected.connected.then((worker) => ({ worker }) as const),
      job.exited.then(() => ({ exited: true }) as const),
      new Promise<{ timeout: true }>((resolve) => (timer = setTimeout(() => resolve({ timeout: true }), this.options.waitMs))),
      new Promise<{ aborted: true }>((resolve) => {
        onAbort = () => resolve({ aborted: true });
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]).finally(() => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    });
    if ('worker' in outcome) return outcome.worker;
    if ('aborted' in outcome) throw new PorticoError('worker_unavailable', 'The Python worker was stopped before it started');
    if ('timeout' in outcome) {
      const { id, state, reason } = await job.queueState();
      const where = state ? `${state}${reason && reason !== 'None' ? ` (${reason})` : ''}` : 'not listed by squeue';
      throw new PorticoError('worker_unavailable', `Slurm job ${id ?? job.name} of the Python worker did not start within ${Math.round(this.options.waitMs / 1000)} s: ${where}; the job was cancelled`);
    }
    throw job.startFailure(address);
  }

  /** Ends every allocation still held (workers were stopped first: this is a job still pending, or an srun that did not end). */
  async close(): Promise<void> {
    await this.listener.close();
    await Promise.all([...this.jobs.values()].map((job) => job.kill()));
  }
}

/** One srun: the allocation of one worker, from submission to its end. */
class SrunJob {
  private child: ChildProcess | undefined;
  /** What srun and slurmstepd said on stderr, last lines only (for the messages above). */
  private readonly notes: string[] = [];
  id: string | null = null;
  node: string | null = null;
  state = 'PENDING';
  reason: string | null = null;
  ended: { state: string; message: string } | undefined;
  private resolveExit!: (why: string) => void;
  readonly exited = new Promise<string>((resolve) => (this.resolveExit = resolve));

  constructor(
    readonly name: string,
    private readonly run: SlurmCommand,
    private readonly log: (line: string, level?: LineLevel) => void,
  ) {}

  start(args: string[], env: NodeJS.ProcessEnv): void {
    const child = spawn('srun', args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.child = child;
    child.on('error', (err) => {
      this.notes.push(`cannot run srun: ${err.message}`);
      this.resolveExit(`srun did not run (${err.message})`);
    });
    // close, not exit: what srun said last (why it failed) has been read by then.
    child.on('close', (code, signal) => {
      this.state = this.ended?.state ?? 'COMPLETED';
      this.resolveExit(signal ? `srun ended by signal ${signal}` : `srun exit code ${code}`);
    });
    forwardOutput(child.stdout!, this.log);
    forwardOutput(child.stderr!, (entry, level) => {
      this.note(entry);
      this.log(entry, level);
    });
  }

  private note(entry: string): void {
    this.notes.push(entry);
    if (this.notes.length > 20) this.notes.shift();
    const queued = /^srun: job (\d+) queued/.exec(entry);
    if (queued) this.id = queued[1]!;
    const ended = jobEnded(entry, this.id ?? this.name);
    if (ended?.id) this.id ??= ended.id;
    if (ended && (ended.id || !this.ended)) this.ended = { state: ended.state, message: ended.message };
  }

  /** Why srun ended before its worker connected back, as the client's error. */
  startFailure(address: string): PorticoError {
    return startFailure(this.notes, this.id ?? this.name, address);
  }

  /** The job's id, state and reason as squeue lists it now (nulls when it does not). */
  async queueState(): Promise<{ id: string | null; state: string | null; reason: string | null }> {
    const res = await this.run('squeue', ['--noheader', '--states=all', '--format=%i|%T|%r', `--name=${this.name}`]);
    const [id, state, reason] = (res.code === 0 ? res.stdout.trim().split('\n')[0] ?? '' : '').split('|');
    return { id: id || this.id, state: state || null, reason: reason || null };
  }

  /** The worker connected back: its connection becomes the worker's frames. */
  attach(worker: ConnectedWorker, reader: ReadInPlace, resources: Resources, defaults: SlurmDefaults): LaunchedWorker {
    const { socket } = worker;
    this.id = worker.job ?? this.id;
    this.node = worker.host;
    this.state = 'RUNNING';
    // An accepted socket cannot read in place (onread is for sockets Node connects): each read is copied once into the decoder's buffer.
    const feed = (bytes: Buffer): void => {
      let at = 0;
      while (at < bytes.length) {
        const target = reader.target();
        const n = Math.min(target.length, bytes.length - at);
        bytes.copy(target, 0, at, at + n);
        at += n;
        reader.onRead(n);
      }
    };
    if (worker.leftover.length) feed(worker.leftover);
    socket.on('data', feed);
    socket.resume();
    const exited: Promise<WorkerEnd> = this.exited.then((why) => {
      socket.destroy();
      return { why, allocationEnded: this.ended };
    });
    // The connection gone while srun still runs (the worker died, the network broke): the job goes too.
    socket.on('close', () => {
      const timer = setTimeout(() => void this.kill(), SRUN_KILL_GRACE_MS);
      timer.unref();
      void this.exited.then(() => clearTimeout(timer));
    });
    return {
      input: socket,
      exited,
      kill: () => {
        socket.destroy();
        void this.kill();
      },
      readyTimeoutMs: LIMITS.workerStartTimeoutMs,
      stopGraceMs: LIMITS.workerStopGraceMs + SRUN_KILL_GRACE_MS,
      info: () => this.info(resources, defaults),
    };
  }

  /** Where it stands: its job, node, state (and reason while pending) and what it asked for (the gateway's defaults filled in). */
  info(resources: Resources, defaults: SlurmDefaults): PlacementInfo {
    const merged = { ...resources, ...(resources.partition === undefined && defaults.partition ? { partition: defaults.partition } : {}), ...(resources.account === undefined && defaults.account ? { account: defaults.account } : {}) };
    return { job: this.id, node: this.node, state: this.state, ...(this.state === 'PENDING' ? { reason: this.reason } : {}), resources: merged };
  }

  /** Until the worker connects back (or srun ends), what squeue says of the job: its id, state and reason, every FOLLOW_MS. */
  follow(): void {
    const timer = setInterval(() => {
      if (this.state !== 'PENDING') return clearInterval(timer);
      void this.queueState().then(({ id, state, reason }) => {
        if (this.state !== 'PENDING') return;
        this.id = id ?? this.id;
        this.reason = reason && reason !== 'None' ? reason : null;
      });
    }, FOLLOW_MS);
    timer.unref();
    void this.exited.then(() => clearInterval(timer));
  }

  /** Ends the job (scancel by its name: it may have no id yet), and srun if it outlives that; resolves once srun has ended. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    if (!this.killing) {
      this.killing = true;
      const res = await this.run('scancel', [`--name=${this.name}`, `--user=${userInfo().username}`]);
      if (res.code !== 0) this.log(`scancel --name=${this.name} failed (${res.code}): ${res.stderr.trim()}`, 'warn');
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), SRUN_KILL_GRACE_MS);
    await this.exited;
    clearTimeout(timer);
  }

  private killing = false;
}
