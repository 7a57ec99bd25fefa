/**
 * `portico serve` options: flags win over PORTICO_* environment variables, which win over the
 * defaults. Bad values are refused with a message, never guessed.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_HOST, DEFAULT_PORT, LIMITS, LOCAL_JUPYTER_ORIGINS } from '../config/constants.js';
import { defaultOptions, isLoopback, type GatewayOptions } from '../config/options.js';
import { Resources } from '../contract/executions.js';
import { EXECUTORS, type ExecutorName } from '../executors/executor.js';
import { parseConnectAddress } from '../executors/slurm-workers.js';
import { trustedProxyProblem } from '../http/forwarded.js';
import { LOG_LEVELS, type LogLevel } from '../ops/logger.js';
import { isPostgresUrl, redact } from '../store/postgres/postgres-store.js';

/** One row per option: the flag, its environment variable and what it does (the table of docs/operating/options.md). */
export const SERVE_OPTIONS = [
  { flag: '--host', env: 'PORTICO_HOST', default: DEFAULT_HOST, help: 'Address to bind. A non-loopback address needs --api-token (or --insecure).' },
  { flag: '--port', env: 'PORTICO_PORT', default: String(DEFAULT_PORT), help: 'Port to listen on (0 picks a free one).' },
  { flag: '--api-token', env: 'PORTICO_API_TOKEN', default: '', help: 'Require Authorization: Bearer <token> on every endpoint but /docs and /openapi.json.' },
  { flag: '--project-roots', env: 'PORTICO_PROJECT_ROOTS', default: '', help: 'Comma-separated directories under which requests may bind other projects.' },
  {
    flag: '--store',
    env: 'PORTICO_STORE',
    default: 'embedded',
    help: 'Where the index lives: `embedded` (<project>/.portico/index, one gateway per project) or a postgres://user@host/db URL that several gateways share.',
  },
  { flag: '--python', env: 'PORTICO_PYTHON', default: 'python3', help: 'Interpreter that runs the project workers.' },
  { flag: '--python-allowlist', env: 'PORTICO_PYTHON_ALLOWLIST', default: '', help: 'Comma-separated further interpreters a request may pick with X-Service-Python.' },
  {
    flag: '--allow-origin',
    env: 'PORTICO_ALLOW_ORIGINS',
    default: 'on loopback: local JupyterLab',
    help: `A browser origin allowed besides the gateway’s own; repeat it, or give a comma-separated list (--allow-origins is the same). On a loopback address ${LOCAL_JUPYTER_ORIGINS.join(', ')} are allowed too; elsewhere none by default.`,
  },
  {
    flag: '--trusted-proxy',
    env: 'PORTICO_TRUSTED_PROXIES',
    default: '',
    help: 'A reverse proxy (IP address or CIDR range) whose X-Forwarded-Proto, -Host and -For the gateway believes, for the origin check and the logged client address; repeat it, or give a comma-separated list. From any other peer those headers are ignored.',
  },
  {
    flag: '--advertise-url',
    env: 'PORTICO_ADVERTISE_URL',
    default: 'the address it listens on',
    help: 'The base URL other gateways reach this one at (http://host:port). With a PostgreSQL index, a live instance is owned by the gateway that made it, and the others forward its calls, widget frames and sockets there (docs/operating/several-gateways.md).',
  },
  {
    flag: '--peer-secret',
    env: 'PORTICO_PEER_SECRET',
    default: 'the api token',
    help: 'The secret gateways sharing a PostgreSQL index present to each other when one forwards to the owner of a live instance; requests marked as forwarded without it are refused.',
  },
  {
    flag: '--instance-lease',
    env: 'PORTICO_INSTANCE_LEASE',
    default: `${LIMITS.instanceLeaseMs / 1000}`,
    help: 'Seconds a gateway owns a live instance unless it renews the lease (every third of it): when its owner dies, another gateway makes the instance again at most 4/3 of this later (the lease, then a grace for a holder cut off from the database to renew first).',
  },
  { flag: '--upload-max', env: 'PORTICO_UPLOAD_MAX', default: `${LIMITS.uploadMaxDefault / 1024 ** 3}G`, help: 'Largest WebSocket upload in bytes (suffixes K, M, G, T allowed); larger ones answer payload_too_large.' },
  { flag: '--widget-buffer-max', env: 'PORTICO_WIDGET_BUFFER_MAX', default: `${LIMITS.widgetBufferMaxDefault / 1024 ** 2}M`, help: 'Most bytes of binary buffers one widget message, set, state or push carries (suffixes K, M, G, T allowed); more answers payload_too_large and delivers nothing.' },
  { flag: '--oidc-issuer', env: 'PORTICO_OIDC_ISSUER', default: '', help: 'Accept JWT access tokens from this OpenID Connect issuer (keys from its discovery document).' },
  { flag: '--oidc-audience', env: 'PORTICO_OIDC_AUDIENCE', default: '', help: 'The audience (aud) OIDC access tokens must carry.' },
  { flag: '--oidc-user-claim', env: 'PORTICO_OIDC_USER_CLAIM', default: 'sub', help: 'The verified claim that names the user of an OIDC request.' },
  { flag: '--enable-source-api', env: 'PORTICO_ENABLE_SOURCE_API', default: 'false', help: 'Serve /v1/source to read and edit the project’s source files.' },
  { flag: '--source-token', env: 'PORTICO_SOURCE_TOKEN', default: '', help: 'The X-Service-Source-Token that source writes need (required with --enable-source-api).' },
  {
    flag: '--reload',
    env: 'PORTICO_RELOAD',
    default: 'false',
    help: 'Watch the project’s .py files and start its worker again when one changes: live instances are made again on the new code, with their saved widget state, and attached clients get instance_restarted (source_changed).',
  },
  {
    flag: '--drain-timeout',
    env: 'PORTICO_DRAIN_TIMEOUT',
    default: `${LIMITS.shutdownDrainMs / 1000}`,
    help: 'Seconds a shutdown (SIGTERM, Ctrl+C) lets requests, calls and uploads in flight finish before cutting them; a second signal stops at once.',
  },
  {
    flag: '--ws-compression',
    env: 'PORTICO_WS_COMPRESSION',
    default: 'off',
    help: `on: negotiate permessage-deflate with clients that offer it (text frames from ${LIMITS.wsDeflateThresholdBytes / 1024} KiB up; binary frames never). Off by default: on loopback and fast links it costs more than it saves (docs/operating/sockets.md).`,
  },
  {
    flag: '--ws-heartbeat',
    env: 'PORTICO_WS_HEARTBEAT',
    default: `${LIMITS.wsHeartbeatMs / 1000}`,
    help: 'Seconds between pings to each WebSocket; a socket that has not answered the previous ping is closed as a dead peer (0: never ping).',
  },
  {
    flag: '--instance-idle',
    env: 'PORTICO_INSTANCE_IDLE',
    default: `${LIMITS.instanceIdleMs / 1000}`,
    help: 'Seconds a live instance may go without a call and without an attached client before it is released (its record and saved widget state stay).',
  },
  {
    flag: '--worker-idle',
    env: 'PORTICO_WORKER_IDLE',
    default: `${LIMITS.workerIdleMs / 1000}`,
    help: 'Seconds a worker that holds no live instance may go without a request before it stops.',
  },
  {
    flag: '--worker-liveness',
    env: 'PORTICO_WORKER_LIVENESS',
    default: `${LIMITS.workerLivenessMs / 1000}`,
    help: 'Seconds a worker may leave heartbeats unanswered before it counts as wedged and is killed and started again (0: never checked).',
  },
  { flag: '--log-level', env: 'PORTICO_LOG_LEVEL', default: 'info', help: `Least severe log line written to stderr (${LOG_LEVELS.join(', ')}); JSON lines unless stderr is a terminal.` },
  { flag: '--access-log', env: 'PORTICO_ACCESS_LOG', default: 'on', help: 'on: a log line per request (at info); off: none (metrics still count them), so that info shows what methods print without the traffic (npm start does this).' },
  { flag: '--executor', env: 'PORTICO_EXECUTOR', default: 'local', help: `What runs executions: ${EXECUTORS.join(' or ')}. slurm submits each run with sbatch (the project must be on storage the compute nodes share; SLURM_CONF is passed through).` },
  { flag: '--slurm-partition', env: 'PORTICO_SLURM_PARTITION', default: '', help: 'Partition of Slurm jobs whose dispatch names none (default: the cluster’s default partition).' },
  { flag: '--slurm-account', env: 'PORTICO_SLURM_ACCOUNT', default: '', help: 'Account charged for Slurm jobs whose dispatch names none.' },
  {
    flag: '--workers',
    env: 'PORTICO_WORKERS',
    default: 'local',
    help: 'Where the Python workers that serve live instances run: local (child processes of the gateway) or slurm (each in an allocation started with srun, which connects back; docs/running/slurm-workers.md). Partition and account come from --slurm-partition and --slurm-account.',
  },
  {
    flag: '--worker-connect',
    env: 'PORTICO_WORKER_CONNECT',
    default: '',
    help: 'With --workers slurm: HOST or HOST:PORT the workers connect back to, and where the gateway listens for them (default: this host’s name, a free port). Each worker proves itself with a one-time secret.',
  },
  {
    flag: '--worker-wait',
    env: 'PORTICO_WORKER_WAIT',
    default: `${LIMITS.slurmWorkerWaitMs / 1000}`,
    help: 'With --workers slurm: seconds a worker may take from srun to connecting back, pending in the queue included; then its job is cancelled and requests waiting for it get 503 worker_unavailable naming the job and Slurm’s reason.',
  },
  { flag: '--insecure', env: 'PORTICO_INSECURE', default: 'false', help: 'Allow a non-loopback address without a token.' },
] as const;

export class UsageError extends Error {}

/** --advertise-url: an http(s) base URL without a path, query or credentials. */
function advertiseUrl(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--advertise-url must be a URL such as http://10.0.0.5:8000, got '${text}'`);
  }
  if (!/^https?:$/.test(url.protocol) || url.username || url.password || url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) {
    throw new UsageError(`--advertise-url must be an http:// or https:// base URL with no path, query or credentials, got '${text}'`);
  }
  return url.origin;
}

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

function truthy(value: string | undefined): boolean {
  return ['1', 'true', 'yes', 'on'].includes((value ?? '').toLowerCase());
}

function onOff(flag: string, text: string): boolean {
  if (text === 'on' || text === 'off') return text === 'on';
  throw new UsageError(`${flag} must be on or off, got '${text}'`);
}

function logLevel(text: string): LogLevel {
  if (!(LOG_LEVELS as readonly string[]).includes(text)) throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got '${text}'`);
  return text as LogLevel;
}

function workersOption(text: string): 'local' | 'slurm' {
  if (text !== 'local' && text !== 'slurm') throw new UsageError(`--workers must be one of local, slurm, got '${text}'`);
  return text;
}

/** --worker-connect: HOST or HOST:PORT ([v6]:PORT), no scheme or path. */
function workerConnect(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  try {
    parseConnectAddress(text);
  } catch {
    throw new UsageError(`--worker-connect must be HOST or HOST:PORT, got '${text}'`);
  }
  return text;
}

function executor(text: string): ExecutorName {
  if (!(EXECUTORS as readonly string[]).includes(text)) throw new UsageError(`--executor must be one of ${EXECUTORS.join(', ')}, got '${text}'`);
  return text as ExecutorName;
}

/** A partition or account name, checked as a dispatch's `resources` are. */
function slurmName(flag: string, text: string | undefined): string | undefined {
  if (!text) return undefined;
  const key = flag === '--slurm-partition' ? 'partition' : 'account';
  if (!Resources.safeParse({ [key]: text }).success) throw new UsageError(`${flag} must be a Slurm name (letters, digits, _ . -), got '${text}'`);
  return text;
}

function seconds(flag: string, text: string, { min = 0, max = 3600 } = {}): number {
  const value = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text.trim()) || !Number.isFinite(value) || value < min || value > max) throw new UsageError(`${flag} must be a number of seconds from ${min} to ${max}, got '${text}'`);
  return value;
}

/** '1048576', '512M', '8G' → bytes (binary multiples). */
function parseBytes(flag: string, text: string): number {
  const m = /^(\d+)([KMGT]?)i?B?$/i.exec(text.trim());
  const power = m ? ' KMGT'.indexOf((m[2] || ' ').toUpperCase()) : -1;
  const bytes = m ? Number(m[1]) * 1024 ** power : NaN;
  if (!Number.isSafeInteger(bytes) || bytes <= 0) throw new UsageError(`${flag} must be a positive size in bytes (K, M, G, T suffixes allowed), got '${text}'`);
  return bytes;
}

/** The configured origins (flags win over the environment), plus local JupyterLab's on loopback. */
function allowedOrigins(single: string[] | undefined, lists: string[] | undefined, fromEnv: string | undefined, host: string): string[] {
  const given = single || lists ? [...(single ?? []), ...(lists ?? [])] : [fromEnv ?? ''];
  const origins = given.flatMap(list);
  for (const origin of origins) {
    if (origin === '*') continue;
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      // refused below
    }
    if (!parsed || parsed.origin !== origin) {
      throw new UsageError(`--allow-origin takes origins like http://localhost:8888 (scheme, host and port, no path), got '${origin}'`);
    }
  }
  return [...new Set([...(isLoopback(host) ? LOCAL_JUPYTER_ORIGINS : []), ...origins])];
}

/** The trusted proxies (flags win over the environment), each an IP address or a CIDR range. */
function trustedProxyList(flags: string[] | undefined, fromEnv: string | undefined): string[] {
  const entries = (flags ?? [fromEnv ?? '']).flatMap(list);
  for (const entry of entries) {
    const problem = trustedProxyProblem(entry);
    if (problem) throw new UsageError(`--trusted-proxy takes IP addresses or CIDR ranges: ${problem}`);
  }
  return [...new Set(entries)];
}

/** `embedded` → undefined; a postgres:// URL as given; anything else is refused. */
export function storeOption(text: string): string | undefined {
  if (text === 'embedded') return undefined;
  if (isPostgresUrl(text)) {
    try {
      new URL(text);
      return text;
    } catch {
      // refused below
    }
  }
  throw new UsageError(`--store must be 'embedded' or a postgres://user@host/db URL, got '${redact(text)}'`);
}

export function parseServeArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): GatewayOptions {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      'api-token': { type: 'string' },
      'project-roots': { type: 'string', multiple: true },
      store: { type: 'string' },
      python: { type: 'string' },
      'python-allowlist': { type: 'string', multiple: true },
      'allow-origin': { type: 'string', multiple: true },
      'allow-origins': { type: 'string', multiple: true },
      'trusted-proxy': { type: 'string', multiple: true },
      'advertise-url': { type: 'string' },
      'peer-secret': { type: 'string' },
      'instance-lease': { type: 'string' },
      'upload-max': { type: 'string' },
      'widget-buffer-max': { type: 'string' },
      'oidc-issuer': { type: 'string' },
      'oidc-audience': { type: 'string' },
      'oidc-user-claim': { type: 'string' },
      'enable-source-api': { type: 'boolean' },
      'source-token': { type: 'string' },
      reload: { type: 'boolean' },
      insecure: { type: 'boolean' },
      'drain-timeout': { type: 'string' },
      'log-level': { type: 'string' },
      'access-log': { type: 'string' },
      'ws-compression': { type: 'string' },
      'ws-heartbeat': { type: 'string' },
      'instance-idle': { type: 'string' },
      'worker-idle': { type: 'string' },
      'worker-liveness': { type: 'string' },
      executor: { type: 'string' },
      'slurm-partition': { type: 'string' },
      'slurm-account': { type: 'string' },
      workers: { type: 'string' },
      'worker-connect': { type: 'string' },
      'worker-wait': { type: 'string' },
    },
  });
  if (positionals.length > 1) throw new UsageError(`serve takes one PROJECT directory, got ${positionals.length}`);

  const portText = values.port ?? env.PORTICO_PORT ?? String(DEFAULT_PORT);
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) throw new UsageError(`--port must be an integer from 0 to 65535, got '${portText}'`);

  const options = defaultOptions({
    project: path.resolve(positionals[0] ?? env.PORTICO_PROJECT ?? process.cwd()),
    host: values.host ?? env.PORTICO_HOST ?? DEFAULT_HOST,
    port,
    apiToken: values['api-token'] ?? env.PORTICO_API_TOKEN ?? undefined,
    projectRoots: (values['project-roots'] ?? [env.PORTICO_PROJECT_ROOTS ?? '']).flatMap(list).map((p) => path.resolve(p)),
    store: storeOption(values.store ?? env.PORTICO_STORE ?? 'embedded'),
    python: values.python ?? env.PORTICO_PYTHON ?? 'python3',
    pythonAllowlist: (values['python-allowlist'] ?? [env.PORTICO_PYTHON_ALLOWLIST ?? '']).flatMap(list),
    allowOrigins: allowedOrigins(values['allow-origin'], values['allow-origins'], env.PORTICO_ALLOW_ORIGINS, values.host ?? env.PORTICO_HOST ?? DEFAULT_HOST),
    trustedProxies: trustedProxyList(values['trusted-proxy'], env.PORTICO_TRUSTED_PROXIES),
    advertiseUrl: advertiseUrl(values['advertise-url'] ?? (env.PORTICO_ADVERTISE_URL || undefined)),
    peerSecret: values['peer-secret'] ?? (env.PORTICO_PEER_SECRET || undefined),
    instanceLeaseMs: seconds('--instance-lease', values['instance-lease'] ?? env.PORTICO_INSTANCE_LEASE ?? String(LIMITS.instanceLeaseMs / 1000), { min: 1, max: 3600 }) * 1000,
    uploadMax: parseBytes('--upload-max', values['upload-max'] ?? env.PORTICO_UPLOAD_MAX ?? String(LIMITS.uploadMaxDefault)),
    widgetBufferMax: parseBytes('--widget-buffer-max', values['widget-buffer-max'] ?? env.PORTICO_WIDGET_BUFFER_MAX ?? String(LIMITS.widgetBufferMaxDefault)),
    oidcIssuer: values['oidc-issuer'] ?? (env.PORTICO_OIDC_ISSUER || undefined),
    oidcAudience: values['oidc-audience'] ?? (env.PORTICO_OIDC_AUDIENCE || undefined),
    oidcUserClaim: values['oidc-user-claim'] ?? (env.PORTICO_OIDC_USER_CLAIM || 'sub'),
    enableSourceApi: values['enable-source-api'] ?? truthy(env.PORTICO_ENABLE_SOURCE_API),
    sourceToken: values['source-token'] ?? (env.PORTICO_SOURCE_TOKEN || undefined),
    reload: values.reload ?? truthy(env.PORTICO_RELOAD),
    insecure: values.insecure ?? truthy(env.PORTICO_INSECURE),
    logLevel: logLevel(values['log-level'] ?? env.PORTICO_LOG_LEVEL ?? 'info'),
    accessLog: onOff('--access-log', values['access-log'] ?? env.PORTICO_ACCESS_LOG ?? 'on'),
    executor: executor(values.executor ?? env.PORTICO_EXECUTOR ?? 'local'),
    slurm: {
      partition: slurmName('--slurm-partition', values['slurm-partition'] ?? env.PORTICO_SLURM_PARTITION),
      account: slurmName('--slurm-account', values['slurm-account'] ?? env.PORTICO_SLURM_ACCOUNT),
    },
    workers: workersOption(values.workers ?? env.PORTICO_WORKERS ?? 'local'),
    workerConnect: workerConnect(values['worker-connect'] ?? (env.PORTICO_WORKER_CONNECT || undefined)),
    workerWaitMs: seconds('--worker-wait', values['worker-wait'] ?? env.PORTICO_WORKER_WAIT ?? String(LIMITS.slurmWorkerWaitMs / 1000), { min: 1, max: 7 * 86400 }) * 1000,
    wsCompression: onOff('--ws-compression', values['ws-compression'] ?? env.PORTICO_WS_COMPRESSION ?? 'off'),
    wsHeartbeatMs: seconds('--ws-heartbeat', values['ws-heartbeat'] ?? env.PORTICO_WS_HEARTBEAT ?? String(LIMITS.wsHeartbeatMs / 1000)) * 1000,
    instanceIdleMs: seconds('--instance-idle', values['instance-idle'] ?? env.PORTICO_INSTANCE_IDLE ?? String(LIMITS.instanceIdleMs / 1000), { min: 1, max: 30 * 86400 }) * 1000,
    workerIdleMs: seconds('--worker-idle', values['worker-idle'] ?? env.PORTICO_WORKER_IDLE ?? String(LIMITS.workerIdleMs / 1000), { min: 1, max: 30 * 86400 }) * 1000,
    workerLivenessMs: seconds('--worker-liveness', values['worker-liveness'] ?? env.PORTICO_WORKER_LIVENESS ?? String(LIMITS.workerLivenessMs / 1000)) * 1000,
    drainMs: seconds('--drain-timeout', values['drain-timeout'] ?? env.PORTICO_DRAIN_TIMEOUT ?? String(LIMITS.shutdownDrainMs / 1000)) * 1000,
  });
  if (options.enableSourceApi && !options.sourceToken) {
    throw new UsageError('--enable-source-api needs --source-token: source writes run code on the next import, so they get their own secret.');
  }
  if (options.apiToken === '') delete options.apiToken;
  if (options.peerSecret === '') delete options.peerSecret;
  if (options.oidcIssuer && !options.oidcAudience) {
    throw new UsageError('--oidc-issuer needs --oidc-audience: a token minted for another service must not be accepted here.');
  }
  // Gateways sharing an index forward to each other: with OIDC alone they would have nothing to show.
  if (isPostgresUrl(options.store) && options.oidcIssuer && !options.apiToken && !options.peerSecret) {
    throw new UsageError('--store postgres://… with --oidc-issuer needs --peer-secret (or --api-token): the gateways sharing the index forward requests to each other with it.');
  }
  // An api token or an OIDC issuer each mean that every request is authenticated.
  if (!isLoopback(options.host) && !options.apiToken && !options.oidcIssuer && !options.insecure) {
    throw new UsageError(
      `Refusing to serve ${options.host} without --api-token or --oidc-issuer: anyone who can reach it could run the project's code. Pass one, or --insecure if you mean it.`,
    );
  }
  return options;
}
