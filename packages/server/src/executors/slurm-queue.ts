/**
 * What Slurm says of the jobs of live runs, asked in batches: one `squeue` for every job followed
 * (at most once per `pollMs`, however many requests ask), then, for the jobs squeue no longer
 * lists, one `sacct` where the cluster keeps accounting. Requests wait for the next snapshot
 * instead of running a command each. A job no source knows is `unknown`; a failing command never
 * makes a job unknown (the last snapshot stays), so an unreachable controller fails no run.
 */
import { execFile } from 'node:child_process';
import type { JobPhase } from './executor.js';

export interface JobState {
  phase: JobPhase;
  /** Slurm's state word (PENDING, RUNNING, COMPLETED, CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, …). */
  state: string | null;
  reason: string | null;
}

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs one Slurm client command (argv, never a shell string). */
export type SlurmCommand = (cmd: string, args: string[]) => Promise<CommandResult>;

/** Runs a command with `env` and a time limit; a command that cannot run reports code 127. */
export function slurmCommand(env: NodeJS.ProcessEnv, timeoutMs: number): SlurmCommand {
  return (cmd, args) =>
    new Promise((resolve) => {
      execFile(cmd, args, { env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 127) : 0;
        resolve({ code, stdout: stdout ?? '', stderr: stderr || (err && code === 127 ? err.message : '') || '' });
      });
    });
}

/** Slurm job states in which the job's processes may run. */
const ACTIVE_STATES = new Set(['RUNNING', 'CONFIGURING', 'COMPLETING', 'STAGE_OUT', 'SUSPENDED', 'STOPPED', 'SIGNALING', 'RESIZING']);
const QUEUED_STATES = new Set(['PENDING', 'REQUEUED', 'REQUEUE_FED', 'REQUEUE_HOLD', 'RESV_DEL_HOLD', 'SPECIAL_EXIT']);

export function phaseOf(state: string): JobPhase {
  if (ACTIVE_STATES.has(state)) return 'running';
  if (QUEUED_STATES.has(state)) return 'queued';
  return 'ended';
}

/** Parses `squeue --noheader --format=%i|%T|%r` lines. */
export function parseSqueue(stdout: string): Map<string, JobState> {
  const jobs = new Map<string, JobState>();
  for (const line of stdout.split('\n')) {
    const [id, state, reason] = line.trim().split('|');
    if (!id || !state) continue;
    jobs.set(id, { phase: phaseOf(state), state, reason: reason || null });
  }
  return jobs;
}

/** Parses `sacct --noheader --parsable2 --allocations --format=JobIDRaw,State,Reason` lines ("CANCELLED by 0" → CANCELLED). */
export function parseSacct(stdout: string): Map<string, JobState> {
  const jobs = new Map<string, JobState>();
  for (const line of stdout.split('\n')) {
    const [id, rawState, reason] = line.trim().split('|');
    if (!id || !rawState) continue;
    const state = rawState.split(' ')[0]!;
    jobs.set(id, { phase: phaseOf(state), state, reason: reason || null });
  }
  return jobs;
}

interface Snapshot {
  /** When the commands of this snapshot were started (ms, performance.now()). */
  startedAt: number;
  jobs: Map<string, JobState>;
  /** Job ids squeue was asked about and no source knew. */
  unknown: Set<string>;
}

export interface QueueStats {
  /** Slurm commands run so far, by command. */
  commands: Record<string, number>;
}

export class SlurmQueue {
  /** Job ids of the runs followed, with when each was first followed (ms). */
  private readonly followed = new Map<string, number>();
  private snapshot: Snapshot = { startedAt: -Infinity, jobs: new Map(), unknown: new Set() };
  private refreshing: Promise<void> | undefined;
  /** null: not known yet; false once sacct said the cluster keeps no accounting. */
  private sacct: boolean | null = null;
  readonly stats: QueueStats = { commands: {} };

  constructor(
    private readonly run: SlurmCommand,
    private readonly pollMs: number,
    private readonly log: (line: string) => void,
  ) {}

  /** The state of a job, from a snapshot taken after the job was first followed and at most pollMs old. */
  async state(id: string): Promise<JobState> {
    if (!this.followed.has(id)) this.followed.set(id, performance.now());
    const since = Math.max(this.followed.get(id)!, performance.now() - this.pollMs);
    // Two rounds at most: a refresh in flight may have started before this job was followed.
    for (let round = 0; round < 2 && this.snapshot.startedAt < since; round++) await this.refresh();
    const known = this.snapshot.jobs.get(id);
    if (known) return known;
    if (this.snapshot.unknown.has(id)) return { phase: 'unknown', state: null, reason: null };
    // Not asked about yet (the controller did not answer): nothing is known, so nothing is concluded.
    return { phase: 'running', state: null, reason: null };
  }

  /** Stops following a job (its run recorded its end). */
  forget(id: string): void {
    this.followed.delete(id);
  }

  private refresh(): Promise<void> {
    this.refreshing ??= this.poll().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private count(cmd: string): void {
    this.stats.commands[cmd] = (this.stats.commands[cmd] ?? 0) + 1;
  }

  private async poll(): Promise<void> {
    const startedAt = performance.now();
    const ids = [...this.followed.keys()];
    if (!ids.length) {
      this.snapshot = { startedAt, jobs: new Map(), unknown: new Set() };
      return;
    }
    this.count('squeue');
    const res = await this.run('squeue', ['--noheader', '--states=all', '--format=%i|%T|%r', `--jobs=${ids.join(',')}`]);
    let jobs: Map<string, JobState>;
    if (res.code === 0) jobs = parseSqueue(res.stdout);
    else if (/Invalid job id/i.test(res.stderr)) jobs = new Map(); // every job asked about is gone
    else {
      // The controller is unreachable or busy: keep what was known, conclude nothing.
      this.log(`squeue failed (${res.code}): ${res.stderr.trim().slice(0, 500)}`);
      this.snapshot = { ...this.snapshot, startedAt };
      return;
    }
    const missing = ids.filter((id) => !jobs.has(id));
    const unknown = new Set<string>();
    if (missing.length && this.sacct !== false) {
      this.count('sacct');
      const acct = await this.run('sacct', ['--noheader', '--parsable2', '--allocations', '--format=JobIDRaw,State,Reason', `--jobs=${missing.join(',')}`]);
      if (acct.code === 0) {
        this.sacct = true;
        for (const [id, state] of parseSacct(acct.stdout)) if (missing.includes(id)) jobs.set(id, state);
      } else if (/accounting storage is disabled|not running a supported accounting_storage plugin/i.test(acct.stderr)) {
        this.sacct = false;
        this.log('sacct: this cluster keeps no accounting; jobs squeue no longer lists are taken as gone');
      } else {
        this.log(`sacct failed (${acct.code}): ${acct.stderr.trim().slice(0, 500)}`);
        this.snapshot = { startedAt, jobs: new Map([...this.snapshot.jobs, ...jobs]), unknown: new Set() };
        return;
      }
    }
    for (const id of missing) if (!jobs.has(id)) unknown.add(id);
    this.snapshot = { startedAt, jobs, unknown };
  }
}
