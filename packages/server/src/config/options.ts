/** The gateway's one typed options object, with its defaults. */
import type { ExecutorName } from '../executors/executor.js';
import type { SlurmOptions } from '../executors/slurm.js';
import type { Logger, LogLevel, LogLine } from '../ops/logger.js';
import { DEFAULT_HOST, DEFAULT_PORT, LIMITS } from './constants.js';

export interface GatewayOptions {
  /** The launch project directory (the default for every request). */
  project: string;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** When set, every endpoint but /docs and /openapi.json needs `Authorization: Bearer <token>`. */
  apiToken?: string | undefined;
  /**
   * Where the index lives: undefined for the embedded store (`<project>/.portico/index/`), or a
   * `postgres://` connection string for one index shared by several gateways.
   */
  store?: string | undefined;
  /** Directories under which requests may bind other projects (empty: only the launch project). */
  projectRoots: string[];
  /** The default interpreter for workers. */
  python: string;
  /** Further interpreters a request may pick with X-Service-Python (empty by default). */
  pythonAllowlist: string[];
  /** Browser origins allowed besides the gateway's own (empty by default). */
  allowOrigins: string[];
  /**
   * Reverse proxies (IP addresses, CIDR ranges) whose X-Forwarded-Proto, -Host and -For are
   * believed: for the origin check and the logged client address (http/forwarded.ts). Empty by
   * default: the headers are ignored.
   */
  trustedProxies: string[];
  /**
   * How other gateways reach this one (its base URL), recorded with the instances it owns when
   * several gateways share a PostgreSQL index (default: the address it listens on).
   */
  advertiseUrl?: string | undefined;
  /** The secret gateways present to each other when they forward to an instance's owner (default: the api token). */
  peerSecret?: string | undefined;
  /** How long an instance's ownership lasts unless its owner renews it (ms; renewed every third of it). */
  instanceLeaseMs: number;
  /** Largest upload one chunk_start … chunk_end sequence may carry, in bytes. */
  uploadMax: number;
  /** Most bytes of binary buffers one widget frame may carry (a message, a set, a state, a reply, a push). */
  widgetBufferMax: number;
  /** OpenID Connect issuer whose JWT access tokens are accepted (discovery at <issuer>/.well-known/openid-configuration). */
  oidcIssuer?: string | undefined;
  /** The `aud` an OIDC access token must carry. */
  oidcAudience?: string | undefined;
  /** The verified claim that names the user (created_by). */
  oidcUserClaim: string;
  /** Serves /v1/source (editing the project's source files); off by default. */
  enableSourceApi: boolean;
  /** The X-Service-Source-Token that source writes need beside Authorization. */
  sourceToken?: string | undefined;
  /** Watch the launch project's Python files and start its workers again when they change (`--reload`). */
  reload: boolean;
  /** Allows binding a non-loopback address without a token. */
  insecure: boolean;
  /** What runs executions: `local` processes (default) or `slurm` batch jobs. */
  executor: ExecutorName;
  /** The Slurm executor's defaults (partition, account) and the environment of its commands. */
  slurm: SlurmOptions;
  /** Where workers run: `local` child processes (default) or `slurm` allocations (srun) that connect back. */
  workers: 'local' | 'slurm';
  /** `--workers slurm`: the `host` or `host:port` workers connect back to (default: this host's name, a free port). */
  workerConnect?: string | undefined;
  /** `--workers slurm`: how long a worker may take from srun to connecting back (allocation included) before its job is cancelled (ms). */
  workerWaitMs: number;
  /** How long a shutdown lets requests, calls and transfers in flight finish before cutting them (ms). */
  drainMs: number;
  /** Negotiate permessage-deflate when a client offers it (docs/operating/sockets.md has the figures behind the default). */
  wsCompression: boolean;
  /** How often sockets are pinged; one that missed the previous ping is closed (ms; 0 disables). */
  wsHeartbeatMs: number;
  /** A worker holding no live instance stops after this long without a request (ms). */
  workerIdleMs: number;
  /** A live instance with no call and no attached client for this long is released (ms). */
  instanceIdleMs: number;
  /** A worker that answers no heartbeat for this long is killed and started again (ms; 0: never checked). */
  workerLivenessMs: number;
  /** The least severe structured log line written (default info; `silent` writes none). */
  logLevel: LogLevel;
  /** A log line per request (at info); false: none, the metrics still count them. */
  accessLog: boolean;
  /** The structured logger (default: one at logLevel on stderr, JSON unless stderr is a terminal). */
  logger?: Logger | undefined;
  /** Where plain gateway log lines go, each with its level (default: the logger, at that level). */
  log?: LogLine | undefined;
}

export function defaultOptions(overrides: Partial<GatewayOptions> = {}): GatewayOptions {
  return {
    project: process.cwd(),
    host: DEFAULT_HOST,
    port: DEFAULT_PORT,
    projectRoots: [],
    python: 'python3',
    pythonAllowlist: [],
    allowOrigins: [],
    trustedProxies: [],
    uploadMax: LIMITS.uploadMaxDefault,
    widgetBufferMax: LIMITS.widgetBufferMaxDefault,
    oidcUserClaim: 'sub',
    enableSourceApi: false,
    reload: false,
    insecure: false,
    drainMs: LIMITS.shutdownDrainMs,
    wsCompression: false,
    wsHeartbeatMs: LIMITS.wsHeartbeatMs,
    workerIdleMs: LIMITS.workerIdleMs,
    instanceIdleMs: LIMITS.instanceIdleMs,
    instanceLeaseMs: LIMITS.instanceLeaseMs,
    workerLivenessMs: LIMITS.workerLivenessMs,
    logLevel: 'info',
    accessLog: true,
    executor: 'local',
    slurm: {},
    workers: 'local',
    workerWaitMs: LIMITS.slurmWorkerWaitMs,
    ...overrides,
  };
}

/** True for addresses only this machine can reach. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
