/**
 * Run directories: `<project>/.portico/executions/<uuid>/`, in the format python/portico/shared.json
 * (`run_folder`) writes down once for both sides (file names, what each holds, times; see
 * run-folder.ts). The gateway writes `execution.json` and the cancel marker (and status.json with
 * finished_at for a run process that died without them); the run process (`python -m portico.run`)
 * writes the rest. An executor with a scheduler adds `job.json` and `job.sh`. The state of a run is
 * read from these files and from what its executor sees (its process alive, its job's queue
 * state), so it is the truth after a gateway restart and travels with the directory.
 */
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import type { ExecutionInfo, RunStatus } from '../contract/executions.js';
import { SHARED } from '../config/shared.js';
import { interfaceDir, isSafeName, STORE_DIR, syncPath, writeAtomic } from './files.js';
import { CACHED_FILE, jsonFileText, readEventsFrom, readJson, readOutputWindow, readRunFile, readText, RUN_FILES, runTime, type OutputQuery, type OutputWindow } from './run-folder.js';

/*
 * Defined here, where run states are read from them; each executor (executors/) reports one.
 */
/**
 * What an engine (an executor) knows of a run beside its files, for the runs that have not recorded their end:
 * - `process`: the child this gateway started (a run that has not written process.json yet);
 * - `job`: a batch job, with its phase as the scheduler reports it (`unknown` once no source knows
 *   the job any more) and the scheduler's own state and reason words.
 */
export type EngineView =
  | { kind: 'process'; alive: boolean; pid: number | undefined }
  | { kind: 'job'; id: string; phase: JobPhase; state: string | null; reason: string | null };

export type JobPhase = 'queued' | 'running' | 'ended' | 'unknown';

export const EXECUTIONS_DIR = 'executions';
/** The run process rewrites heartbeat_at this often (portico/run.py; both read it from shared.json)… */
export const HEARTBEAT_MS = SHARED.limits.run_heartbeat_seconds.value * 1000;
/** …so a run on another host whose heartbeat is older than this is taken as dead. */
export const HEARTBEAT_STALE_MS = 3 * HEARTBEAT_MS;
/**
 * How old the listing of the executions folder may be before a listing reads it again (ms). Other
 * gateways serving the project (on shared storage) add runs to it; only the folder's names are
 * read again, and the execution.json of names not seen before.
 */
export const RUNS_RESCAN_MS = 500;

/** A run folder whose execution.json cannot be read (missing, truncated, not this run's). */
export interface UnreadableRun {
  unreadable: string;
}

export interface RunInterface {
  uuid: string;
  module: string;
  config: Record<string, unknown>;
  contexts: Array<{ uuid: string; module: string; config: Record<string, unknown> }>;
}

/** execution.json: what a run is, written once by the gateway. */
export interface ExecutionSpec {
  uuid: string;
  project: string;
  created_at: string;
  created_by: string;
  parent: string | null;
  interfaces: RunInterface[];
  /** The dispatch's resources (absent in runs written before they were kept). */
  resources?: Record<string, unknown> | null;
}

interface ProcessFile {
  pid: number;
  starttime: number | null;
  hostname: string;
}

/** job.json: the batch job a scheduler runs the run as, written by the gateway once submitted. */
export interface JobFile {
  engine: 'slurm';
  id: string;
  submitted_at: string;
}

interface StatusFile {
  status: 'finished' | 'failed' | 'interrupted';
  error: { exception: string; message: string; interface?: string | null } | null;
  /** Each interface of execution.json, in its order (absent in runs written before it was kept). */
  interfaces?: Array<{ uuid: string; status: 'finished' | 'failed' | 'interrupted' | 'skipped' }>;
}

/** The error of a run whose job the scheduler ended (or forgot) before the run recorded its end. */
export function jobEndError(job: { id: string; phase: string; state: string | null; reason: string | null }, cancelled: boolean): { exception: string; message: string; interface: null } {
  if (job.phase === 'unknown') {
    return { exception: 'JobLost', message: `Slurm no longer knows job ${job.id} and the run never recorded its end`, interface: null };
  }
  const reason = job.reason && job.reason !== 'None' ? ` (${job.reason})` : '';
  if (cancelled && job.state === 'CANCELLED') {
    return { exception: 'ExecutionInterrupted', message: `Cancelled: Slurm job ${job.id} was cancelled before the run recorded its end`, interface: null };
  }
  return { exception: 'JobEnded', message: `Slurm ended job ${job.id} with ${job.state ?? 'an unknown state'}${reason} before the run recorded its end`, interface: null };
}

/** Whether the process that wrote process.json is still this same process (not a reused pid, not a zombie). */
async function processAlive(proc: ProcessFile): Promise<boolean> {
  const stat = await readText(`/proc/${proc.pid}/stat`);
  if (stat === null) return false;
  // Fields after the parenthesized command name: state is the 1st, starttime the 20th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z' || fields[0] === 'X') return false;
  return proc.starttime === null || Number(fields[19]) === proc.starttime;
}

/**
 * status.json's `interfaces` for a run whose process died without writing it, as the run itself
 * records an outcome it could not finish (portico/run.py): `finished` for each interface whose
 * cached marker names this run, `skipped` for the others (which one the death hit is unknown).
 */
async function diedInterfaces(project: string, run: string, spec: ExecutionSpec | undefined): Promise<NonNullable<StatusFile['interfaces']>> {
  return Promise.all(
    (spec?.interfaces ?? []).map(async ({ uuid }) => {
      const marker = isSafeName(uuid) ? await readText(path.join(interfaceDir(project, uuid), CACHED_FILE)) : null;
      return { uuid, status: marker === run ? ('finished' as const) : ('skipped' as const) };
    }),
  );
}

export class RunStore {
  /** uuid → spec of every run folder seen (the executions folder is read again every RUNS_RESCAN_MS, see scan). */
  private readonly specs = new Map<string, ExecutionSpec>();
  /** uuid → why its folder cannot be read (tried again at each rescan; logged once per reason). */
  private readonly unreadable = new Map<string, string>();
  /** When the last listing of the executions folder was started (performance.now()). */
  private scannedAt = -Infinity;
  private scanning: Promise<void> | undefined;
  /**
   * The info of runs whose status.json exists: it never changes once written (only the cancel
   * marker may still appear), so listings and /v1/health do not re-read ended runs.
   */
  private readonly ended = new Map<string, ExecutionInfo>();

  constructor(
    readonly project: string,
    private readonly log: (line: string) => void = () => undefined,
  ) {}

  get root(): string {
    return path.join(this.project, STORE_DIR, EXECUTIONS_DIR);
  }

  dir(uuid: string): string {
    if (!isSafeName(uuid)) throw new Error(`bad execution uuid '${uuid}'`);
    return path.join(this.root, uuid);
  }

  /** Every run of the project, newest first. */
  async all(): Promise<ExecutionSpec[]> {
    await this.scan();
    return [...this.specs.values()].sort(newestFirst);
  }

  /** The newest run of each of these interfaces that has one (first in `all()`'s order): one pass, no sort. */
  async newestOf(interfaces: Iterable<string>): Promise<Map<string, ExecutionSpec>> {
    await this.scan();
    return newestPer(this.specs.values(), new Set(interfaces));
  }

  async get(uuid: string): Promise<ExecutionSpec | undefined> {
    const found = await this.lookup(uuid);
    return found && !('unreadable' in found) ? found : undefined;
  }

  /**
   * A run by uuid: known, or else read from its folder at once (a run another gateway dispatched
   * since the last listing). undefined: no such run; `unreadable`: its folder is there but its
   * execution.json cannot be read.
   */
  async lookup(uuid: string): Promise<ExecutionSpec | UnreadableRun | undefined> {
    if (!isRunName(uuid)) return undefined;
    const known = this.specs.get(uuid);
    if (known) return known;
    const read = await this.readSpec(uuid);
    return typeof read === 'string' ? { unreadable: read } : read;
  }

  /**
   * Writes a new run's directory with its execution.json, compact and durably (the run process
   * reads it). The folder is written under a hidden name and renamed into place, so that another
   * gateway listing the executions folder never sees a run folder without its execution.json.
   */
  async create(spec: ExecutionSpec): Promise<void> {
    const dir = this.dir(spec.uuid);
    const staging = path.join(this.root, `.new-${spec.uuid}`);
    await mkdir(staging, { recursive: true });
    try {
      await writeAtomic(path.join(staging, RUN_FILES.execution), jsonFileText(spec));
      await rename(staging, dir);
    } catch (err) {
      await rm(staging, { recursive: true, force: true }).catch(() => undefined);
      throw err;
    }
    await syncPath(this.root);
    this.specs.set(spec.uuid, spec);
  }

  /** Writes the cancel marker (best effort: a run not started just keeps it); a run that has ended is left as it is. */
  async cancel(uuid: string): Promise<void> {
    if (await this.hasEnded(uuid)) return;
    await writeAtomic(path.join(this.dir(uuid), RUN_FILES.cancelled), 'cancelled\n');
    const ended = this.ended.get(uuid);
    if (ended) ended.cancelled = true;
  }

  /**
   * Records that a run's process died without saying how it ended, so that the directory tells
   * the truth on its own (a reader elsewhere does not need to know the process is gone).
   */
  async markDied(uuid: string, why: string, outcome: { status: 'failed' | 'interrupted'; exception: string } = { status: 'failed', exception: 'ProcessDied' }): Promise<void> {
    const dir = this.dir(uuid);
    if ((await readText(path.join(dir, RUN_FILES.status))) !== null) return;
    // A second process refused on a running run dir exits too: never declare a live run dead.
    const proc = await readJson<ProcessFile>(path.join(dir, RUN_FILES.process));
    if (proc && proc.hostname === hostname() && (await processAlive(proc))) return;
    const status: StatusFile = { status: outcome.status, error: { exception: outcome.exception, message: why, interface: null }, interfaces: await diedInterfaces(this.project, uuid, await this.get(uuid)) };
    await writeAtomic(path.join(dir, RUN_FILES.status), jsonFileText(status));
    await writeAtomic(path.join(dir, RUN_FILES.finished_at), runTime());
  }

  /** Records the batch job a run was submitted as. */
  async recordJob(uuid: string, job: JobFile): Promise<void> {
    await writeAtomic(path.join(this.dir(uuid), RUN_FILES.job), jsonFileText(job));
  }

  /** The batch job of a run, or null for a run no scheduler ran. */
  job(uuid: string): Promise<JobFile | null> {
    return readJson<JobFile>(path.join(this.dir(uuid), RUN_FILES.job));
  }

  /** A run's manifest.json (the interpreter and the hash of every module it ran), or null before the run wrote it. */
  async manifest(uuid: string): Promise<Record<string, unknown> | null> {
    const content = await readRunFile(this.dir(uuid), 'manifest');
    return content !== null && typeof content === 'object' && !Array.isArray(content) ? (content as Record<string, unknown>) : null;
  }

  /** Whether a run recorded its end (status.json exists). */
  async hasEnded(uuid: string): Promise<boolean> {
    return this.ended.has(uuid) || (await readText(path.join(this.dir(uuid), RUN_FILES.status))) !== null;
  }

  /**
   * The ExecutionInfo of a run from its files and from `engine`, what its executor sees (see
   * EngineView). Ask the engine before calling this, so that a run that ended in between is read
   * with its status.json.
   */
  async info(spec: ExecutionSpec, engine?: EngineView): Promise<ExecutionInfo> {
    const known = this.ended.get(spec.uuid);
    if (known) return { ...known };
    const spawned = engine?.kind === 'process' ? engine : undefined;
    const job = engine?.kind === 'job' ? engine : undefined;
    const dir = this.dir(spec.uuid);
    const [startedAt, heartbeatAt, finishedAt, statusFile, proc, cancelled, jobFile] = (await Promise.all([
      readRunFile(dir, 'started_at'),
      readRunFile(dir, 'heartbeat_at'),
      readRunFile(dir, 'finished_at'),
      readRunFile(dir, 'status'),
      readRunFile(dir, 'process'),
      readRunFile(dir, 'cancelled'),
      job ? null : readRunFile(dir, 'job'),
    ])) as [string | null, string | null, string | null, StatusFile | null, ProcessFile | null, boolean, JobFile | null];
    let status: RunStatus;
    let error = statusFile?.error ?? null;
    if (statusFile) {
      status = statusFile.status;
    } else if (job && job.phase !== 'running') {
      // Queued, or ended by the scheduler (or forgotten by it) before the run recorded its end.
      status = job.phase === 'queued' ? 'pending' : cancelled && job.state === 'CANCELLED' ? 'interrupted' : 'failed';
      if (status !== 'pending') error = jobEndError(job, cancelled);
    } else if (job && !proc) {
      status = 'pending'; // the job runs, the run process has not said so yet
    } else if (proc) {
      // A job's state is the scheduler's word (a job whose process died is ended by Slurm, with a
      // reason, moments later); otherwise the process itself, or on another host a fresh heartbeat.
      const alive =
        job && job.state !== null
          ? job.phase === 'running'
          : proc.hostname === hostname()
            ? await processAlive(proc)
            : heartbeatAt !== null && Date.now() - Date.parse(heartbeatAt) < HEARTBEAT_STALE_MS;
      status = alive ? (startedAt ? 'running' : 'pending') : 'failed';
      if (!alive) error = { exception: 'ProcessDied', message: 'The run process ended without recording a status', interface: null };
    } else {
      status = spawned?.alive || Date.now() - Date.parse(spec.created_at) < 30_000 ? 'pending' : 'failed';
      if (status === 'failed') error = { exception: 'NeverStarted', message: 'The run process never started', interface: null };
    }
    const isActive = status === 'running' || (status === 'pending' && (proc !== null || job?.phase === 'running'));
    const isStarted = startedAt !== null;
    const isFinished = status === 'finished';
    const info: ExecutionInfo = {
      uuid: spec.uuid,
      status,
      is_active: isActive,
      is_started: isStarted,
      is_finished: isFinished,
      is_incomplete: isStarted && !isFinished && !isActive,
      is_live: isFinished || isActive,
      cancelled,
      created_at: spec.created_at,
      started_at: startedAt,
      // finished_at follows status.json at once; a read between the two takes when status.json was written.
      finished_at: finishedAt ?? (statusFile ? await stat(path.join(dir, RUN_FILES.status)).then((st) => runTime(st.mtime), () => null) : null),
      heartbeat_at: heartbeatAt,
      interfaces: spec.interfaces.map((i) => i.uuid),
      parent: spec.parent,
      created_by: spec.created_by,
      pid: proc?.pid ?? spawned?.pid ?? null,
      error: error ?? null,
      job: job ? { id: job.id, state: job.state, reason: job.reason } : jobFile ? { id: jobFile.id, state: null, reason: null } : null,
      // The reference server's fields: its runner (Portico has one, without config), the interface
      // it ran, what it asked for, and resumes (a Portico run is never resumed).
      module: 'portico.run',
      config: {},
      version: [],
      resources: spec.resources ?? null,
      parent_uuid: spec.interfaces[0]?.uuid ?? '',
      is_resumed: false,
      resumed_at: null,
      label: null,
    };
    // finished_at is written after status.json: remember the run only once both are there.
    if (statusFile && finishedAt !== null) this.ended.set(spec.uuid, { ...info });
    return info;
  }

  /** A bounded window of output.log (see readOutputWindow). */
  output(uuid: string, query: OutputQuery): Promise<OutputWindow> {
    return readOutputWindow(this.dir(uuid), query);
  }

  /** New lines of events.jsonl from a byte offset (see readEventsFrom). */
  events(uuid: string, offset: number): Promise<{ events: unknown[]; next: number }> {
    return readEventsFrom(this.dir(uuid), offset);
  }

  /** Whether an interface's `cached` marker (written after a successful run) exists. */
  async cached(interfaceUuid: string): Promise<boolean> {
    return stat(path.join(interfaceDir(this.project, interfaceUuid), CACHED_FILE)).then(() => true, () => false);
  }

  /**
   * Reads the names in the executions folder again when the last listing is older than
   * RUNS_RESCAN_MS: names not seen before get their execution.json read (and those still
   * unreadable are tried again), folders gone are dropped. Known runs are not re-read.
   */
  private scan(): Promise<void> {
    if (performance.now() - this.scannedAt < RUNS_RESCAN_MS) return Promise.resolve();
    this.scanning ??= this.rescan().finally(() => {
      this.scanning = undefined;
    });
    return this.scanning;
  }

  private async rescan(): Promise<void> {
    const startedAt = performance.now();
    const before = new Set(this.specs.keys());
    let names: string[];
    try {
      names = await readdir(this.root);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        // Keep what is known; the next listing tries again.
        this.log(`executions: cannot list ${this.root}: ${(err as Error).message}`);
        return;
      }
      names = [];
    }
    const present = new Set(names.filter(isRunName));
    for (const uuid of before) {
      if (present.has(uuid)) continue;
      this.specs.delete(uuid);
      this.ended.delete(uuid);
    }
    for (const uuid of this.unreadable.keys()) if (!present.has(uuid)) this.unreadable.delete(uuid);
    await Promise.all([...present].filter((uuid) => !this.specs.has(uuid)).map((uuid) => this.readSpec(uuid)));
    this.scannedAt = startedAt;
  }

  /**
   * Reads one run's execution.json: the spec (now known), undefined when there is no such run
   * folder, or why the folder cannot be read (logged once per reason; never thrown).
   */
  private async readSpec(uuid: string): Promise<ExecutionSpec | string | undefined> {
    const dir = path.join(this.root, uuid);
    let text: string;
    try {
      text = await readFile(path.join(dir, RUN_FILES.execution), 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTDIR') return undefined; // a file in the folder, not a run
      if (code === 'ENOENT') {
        const isDir = await stat(dir).then((st) => st.isDirectory(), () => false);
        return isDir ? this.markUnreadable(uuid, 'its folder has no execution.json') : undefined;
      }
      return this.markUnreadable(uuid, `its execution.json cannot be read (${code ?? (err as Error).message})`);
    }
    let spec: ExecutionSpec;
    try {
      spec = JSON.parse(text) as ExecutionSpec;
    } catch {
      return this.markUnreadable(uuid, 'its execution.json is not valid JSON (truncated or half-written)');
    }
    if (!spec || typeof spec !== 'object' || spec.uuid !== uuid || typeof spec.created_at !== 'string' || !Array.isArray(spec.interfaces)) {
      return this.markUnreadable(uuid, 'its execution.json does not describe this run');
    }
    this.unreadable.delete(uuid);
    // A run this gateway created meanwhile is already known: keep that one.
    const known = this.specs.get(uuid);
    if (known) return known;
    this.specs.set(uuid, spec);
    return spec;
  }

  private markUnreadable(uuid: string, reason: string): string {
    if (this.unreadable.get(uuid) !== reason) this.log(`execution ${uuid}: skipped, ${reason}`);
    this.unreadable.set(uuid, reason);
    return reason;
  }
}

/** A name in the executions folder that may be a run (not a hidden staging folder or temp file). */
function isRunName(name: string): boolean {
  return isSafeName(name) && !name.startsWith('.');
}

/** The newest of `specs` for each interface of `wanted` that has one (an InterfaceInfo's `cached` costs no more than the runs). */
function newestPer(specs: Iterable<ExecutionSpec>, wanted: ReadonlySet<string>): Map<string, ExecutionSpec> {
  const newest = new Map<string, ExecutionSpec>();
  if (wanted.size === 0) return newest;
  for (const spec of specs) {
    for (const { uuid } of spec.interfaces) {
      const known = newest.get(uuid);
      if (wanted.has(uuid) && (!known || newestFirst(spec, known) < 0)) newest.set(uuid, spec);
    }
  }
  return newest;
}

/** The order of `all()`: newest created first, then by uuid. */
function newestFirst(a: ExecutionSpec, b: ExecutionSpec): number {
  return a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : a.uuid < b.uuid ? -1 : 1;
}
