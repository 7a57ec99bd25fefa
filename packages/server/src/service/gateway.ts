/**
 * The service layer's entry point: binds requests to a project, an interpreter and a user,
 * owns the worker pool and routes what workers push to the clients attached to an interface.
 * Knows nothing of HTTP or WebSocket.
 */
import { realpath } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';
import type { Principal } from '../auth/credentials.js';
import { LIMITS, VERSION } from '../config/constants.js';
import type { GatewayOptions } from '../config/options.js';
import { PorticoError } from '../errors.js';
import { KernelPool, type WorkerInfo, type WorkerProblem } from '../kernel/pool.js';
import { createLogger, lineLogger, setBackgroundLog, type Logger, type LogLine } from '../ops/logger.js';
import { Metrics } from '../ops/metrics.js';
import { SourceService } from './source.js';
import { SourceReloader } from './source-reload.js';
import { indexBackend, type IndexBackend } from '../store/backends.js';
import { PythonPackageService } from './python-package.js';
import type { RequestContext } from './context.js';
import { DataService } from './data.js';
import { LocalExecutor } from '../executors/local.js';
import { SlurmExecutor } from '../executors/slurm.js';
import { SlurmWorkers, workerJobTag } from '../executors/slurm-workers.js';
import { ExecutionService } from './executions.js';
import { InterfaceService } from './interfaces.js';
import { LineageService } from './lineage.js';
import { InstanceOwnership } from './ownership.js';
import { ProjectService } from './project.js';
import { ProjectRegistry } from './projects.js';
import { RemoteModules } from './remotes.js';
import { WidgetService } from './widgets.js';

export interface BindInput {
  project?: string | null | undefined;
  python?: string | null | undefined;
  /** X-Service-User: the self-declared user, used when the credential names none. */
  user?: string | null | undefined;
  /** Who the request was admitted as; a verified subject (OIDC, a session token minted for a user) wins over `user`. */
  principal?: Principal | undefined;
}

/** GET /v1/projects: what this gateway can serve and what runs now. */
export interface ProjectsInfo {
  default: string;
  /** Projects with live state (an opened index), the default first. */
  open: string[];
  /** The --project-roots a request may bind projects under. */
  roots: string[];
  /** The default interpreter and the further ones a request may pick (--python-allowlist). */
  python: string;
  python_allowlist: string[];
  /** Running workers, one per (project, interpreter). */
  workers: WorkerInfo[];
}

/**
 * An interpreter as the allowlist and the pool compare it: a path is made absolute (so
 * `./venv/bin/python` and its absolute spelling are one worker), a bare name (`python3`) stays
 * as it is, to be looked up on PATH when the worker starts.
 */
export function normalizeInterpreter(python: string): string {
  return python.includes('/') || python.includes(path.sep) ? path.resolve(python) : python;
}

/** The index cannot be reached (health's problem; the PostgreSQL store only). */
export interface StoreProblem {
  store: 'postgresql';
  status: 'unavailable';
  message: string;
  since: string;
}

export interface HealthInfo {
  /** `degraded` while a worker is wedged, being replaced after a death, or backing off a crash loop, or the index cannot be reached (`problems` says which). */
  status: 'ok' | 'degraded';
  version: string;
  project: string;
  projects: string[];
  executions_active: number;
  workers: number;
  /** Live instances per project directory. */
  instances: Record<string, number>;
  problems: Array<WorkerProblem | StoreProblem>;
  uptime_seconds: number;
}

export class Gateway {
  readonly interfaces: InterfaceService;
  readonly executions: ExecutionService;
  readonly data: DataService;
  readonly widgets: WidgetService;
  /** The Python client's wheel, for `pip install` from this gateway. */
  readonly pythonPackage: PythonPackageService;
  readonly lineage: LineageService;
  readonly project: ProjectService;
  readonly remotes = new RemoteModules();
  readonly projects: ProjectRegistry;
  /** Who owns each live instance when several gateways serve a project (docs/operating/several-gateways.md). */
  readonly ownership: InstanceOwnership;
  /** Source editing (opt-in with --enable-source-api). */
  readonly source: SourceService;
  /** Kept private: services reach workers, transports reach services. */
  private readonly pool: KernelPool;
  /** `--workers slurm`: where workers are placed (undefined: local child processes). */
  private readonly slurmWorkers: SlurmWorkers | undefined;
  /** Structured logs (access lines come from the transports). */
  readonly logger: Logger;
  /** Plain log lines (worker output, failures) onto the logger at their level, unless options.log takes them. */
  readonly log: LogLine;
  readonly metrics: Metrics;
  private readonly startedAt = performance.now();
  private readonly defaultUser = safeUserName();
  private readonly python: string;
  private readonly pythonAllowlist: string[];
  private readonly backend: IndexBackend;
  /** When this gateway first found its index unavailable; undefined while it answers. */
  private storeDownSince: string | undefined;
  /** `--reload`: watches the launch project's Python files. */
  private reloader: SourceReloader | undefined;

  private constructor(
    readonly options: GatewayOptions,
    project: string,
    roots: string[],
  ) {
    this.logger = options.logger ?? createLogger(options.logLevel);
    this.log = options.log ?? lineLogger(this.logger);
    setBackgroundLog(this.log);
    this.metrics = new Metrics({ workers: () => this.pool.list().length, instances: () => this.pool.liveInstances(), executions: () => this.executionCounts(), schedulerCommands: () => this.executions.executor.commands, storeUp: async () => (await this.storeProblem()) === undefined });
    this.backend = indexBackend(options.store, this.log);
    this.projects = new ProjectRegistry(project, roots, this.backend, this.metrics, this.log);
    this.python = normalizeInterpreter(options.python);
    this.pythonAllowlist = [...new Set(options.pythonAllowlist.map(normalizeInterpreter))];
    // --workers slurm: each worker in an allocation of its own, connecting back (executors/slurm-workers.ts).
    this.slurmWorkers =
      options.workers === 'slurm'
        ? new SlurmWorkers({ ...options.slurm, connect: options.workerConnect, waitMs: options.workerWaitMs, tag: workerJobTag(project, options.port) }, this.log)
        : undefined;
    this.pool = new KernelPool({
      placement: this.slurmWorkers,
      onPush: (dir, uuid, push) => this.projects.peek(dir)?.push(uuid, push),
      isAttached: (dir, uuid) => this.projects.peek(dir)?.isAttached(uuid) ?? false,
      keepAlive: (dir) => this.projects.peek(dir)?.hasAttachments ?? false,
      // Every client attached to an instance that died with its worker hears it, and why: its
      // next use makes the instance again from its record, with its saved widget state.
      onLost: (dir, _python, uuids, reason, message) => {
        const project = this.projects.peek(dir);
        const said = reason === 'source_changed' || reason === 'allocation_ended' ? reason : (`worker_${reason}` as const);
        for (const uuid of uuids) project?.push(uuid, { type: 'instance_restarted', payload: { uuid, reason: said, message } });
      },
      log: this.log,
      onRestart: (reason) => this.metrics.workerRestarts.inc({ reason }),
      workerIdleMs: options.workerIdleMs,
      instanceIdleMs: options.instanceIdleMs,
      livenessMs: options.workerLivenessMs,
    });
    this.ownership = new InstanceOwnership({
      leases: this.backend.leases,
      leaseMs: options.instanceLeaseMs,
      secret: options.peerSecret || options.apiToken,
      inUse: (dir, uuid) => this.pool.isLive(dir, uuid) || (this.projects.peek(dir)?.isAttached(uuid) ?? false),
      // Another gateway owns it now: the copy here goes, and its clients hear it (their next
      // frame goes to the new owner).
      onLost: (dir, uuid) => {
        this.pool.release(dir, uuid);
        const message = 'Another gateway took this instance over (this one could not renew its lease in time); its next use goes there';
        this.projects.peek(dir)?.push(uuid, { type: 'instance_restarted', payload: { uuid, reason: 'owner_lost', message } });
      },
      log: this.log,
    });
    this.widgets = new WidgetService(this.pool, this.remotes, options.widgetBufferMax);
    this.interfaces = new InterfaceService(this.pool, this.remotes, this.widgets, this.metrics, this.log);
    this.pythonPackage = new PythonPackageService(this.python);
    this.project = new ProjectService(this.pool, this.remotes);
    const executor = options.executor === 'slurm' ? new SlurmExecutor(options.slurm, this.log) : new LocalExecutor(this.log);
    this.executions = new ExecutionService(this.interfaces, executor, this.log);
    this.data = new DataService(this.interfaces);
    this.lineage = new LineageService(this.interfaces, this.executions);
    this.source = new SourceService(options, this.pool, this.widgets, this.log);
  }

  static async create(options: GatewayOptions): Promise<Gateway> {
    const project = await realpath(options.project).catch(() => {
      throw new Error(`Project directory '${options.project}' does not exist`);
    });
    const roots = await Promise.all(options.projectRoots.map((root) => realpath(root).catch(() => root)));
    const gateway = new Gateway(options, project, roots);
    // Open the launch project's index now: its lock refuses a second writer at start, not mid-request.
    await gateway.projects.bind();
    // Jobs a killed predecessor (same host, project and port) left go before this gateway starts any.
    await gateway.slurmWorkers?.cancelOrphans();
    if (options.reload) gateway.reloader = await SourceReloader.start(project, gateway.pool, gateway.log);
    return gateway;
  }

  /**
   * Binds a request; refuses projects outside the roots and interpreters outside the allowlist
   * (`forbidden`). The user is the credential's verified subject when it has one, else
   * X-Service-User, else the gateway's OS user.
   */
  async bind(input: BindInput = {}): Promise<RequestContext> {
    const python = input.python ? normalizeInterpreter(input.python) : this.python;
    if (python !== this.python && !this.pythonAllowlist.includes(python)) {
      throw new PorticoError('forbidden', `Interpreter '${input.python}' is not permitted; start the gateway with --python-allowlist to allow it`);
    }
    const project = await this.projects.bind(input.project);
    const user = input.principal?.subject || input.user || this.defaultUser;
    return input.principal?.kind === 'peer' ? { project, python, user, forwarded: true } : { project, python, user };
  }

  /** Executions of the open projects by status (the metrics' executions gauge). */
  private async executionCounts(): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const dir of this.projects.openDirs) {
      const runs = await this.executions.list(await this.bind({ project: dir }), { limit: LIMITS.listMax });
      for (const run of runs) counts[run.status] = (counts[run.status] ?? 0) + 1;
    }
    return counts;
  }

  /** The default project, those with live state, the roots, the interpreters and the running workers. */
  listProjects(): ProjectsInfo {
    return {
      default: this.projects.defaultDir,
      open: this.projects.openDirs,
      roots: this.projects.projectRoots,
      python: this.python,
      python_allowlist: [...this.pythonAllowlist],
      workers: this.pool.list(),
    };
  }

  /**
   * The index's problem now, if it has one (asked afresh, LIMITS.storeProbeMs at most); `since`
   * is when this gateway first found it so, kept until the index answers again.
   */
  async storeProblem(): Promise<StoreProblem | undefined> {
    const message = await this.backend.probe();
    if (message === undefined) {
      this.storeDownSince = undefined;
      return undefined;
    }
    this.storeDownSince ??= new Date().toISOString();
    return { store: 'postgresql', status: 'unavailable', message, since: this.storeDownSince };
  }

  async health(): Promise<HealthInfo> {
    const ctx = await this.bind();
    const [store, executions] = await Promise.all([this.storeProblem(), this.executions.list(ctx, { active: true, limit: 1000 })]);
    const problems: HealthInfo['problems'] = [...this.pool.problems(), ...(store ? [store] : [])];
    return {
      status: problems.length ? 'degraded' : 'ok',
      version: VERSION,
      project: this.projects.defaultDir,
      projects: this.projects.openDirs,
      executions_active: executions.length,
      workers: this.pool.list().length,
      instances: this.pool.liveInstances(),
      problems,
      uptime_seconds: (performance.now() - this.startedAt) / 1000,
    };
  }

  async close(): Promise<void> {
    this.reloader?.close();
    this.widgets.close();
    this.executions.executor.close();
    await this.pool.close();
    // Given back once the workers stopped (their exit saved what widget state was pending):
    // other gateways take these instances over from there, without waiting for the leases to end.
    await this.ownership.close();
    await Promise.all((await this.projects.all()).map((p) => p.store.close()));
    await this.backend.close();
  }
}

function safeUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? 'unknown';
  }
}
