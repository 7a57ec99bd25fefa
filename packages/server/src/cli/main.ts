/** The `portico` command line: serve, get, reindex, fetch. */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { hostname } from 'node:os';
import type { GatewayOptions } from '../config/options.js';
import { VERSION } from '../config/constants.js';
import { startServer } from '../server.js';
import { redact } from '../store/postgres/postgres-store.js';
import { DB_OPTIONS, db } from './db.js';
import { FETCH_OPTIONS, fetchRemotes, get, GET_OPTIONS, INDEX_COPY_OPTIONS, indexCommand, reindex, REINDEX_OPTIONS } from './commands.js';
import { parseServeArgs, SERVE_OPTIONS, UsageError } from './options.js';

const USAGE = `Usage:
  portico serve [PROJECT] [options]        serve the interface classes of PROJECT (default: .)
  portico get MODULE [VERSION…] [options]  create (or find) an interface and print its InterfaceInfo
  portico reindex [PROJECT] [--store S]    rebuild the index from the interface directories
  portico index copy --from S --to S       copy an index between a project and PostgreSQL
  portico fetch [MODULE] [options]         fetch the remote modules declared in portico.json
  portico db start|stop|status [--project P]
                                           a PostgreSQL cluster of the project's own, for --store
  portico COMMAND --help                   the options of one command

VERSION items: '~name', '~name(args)', 'a.b=value' or a JSON object.
`;

/** One line per option: flag, what it does, its default and environment variable. */
function optionLines(options: ReadonlyArray<{ flag: string; help: string; default?: string; env?: string }>): string {
  return options
    .map((o) => {
      const extra = [o.default ? `default: ${o.default}` : '', o.env ?? ''].filter(Boolean).join('; ');
      return `  ${o.flag.padEnd(22)} ${o.help}${extra ? ` [${extra}]` : ''}`;
    })
    .join('\n');
}

const COMMAND_HELP: Record<string, string> = {
  serve: `Usage: portico serve [PROJECT] [options]

Serves the interface classes of PROJECT (default: the current directory, or PORTICO_PROJECT) over
REST and WebSocket, with the landing page at / and the API docs at /docs.

Options (flags win over environment variables):
${optionLines(SERVE_OPTIONS)}
  ${'--help'.padEnd(22)} this help
`,
  get: `Usage: portico get MODULE [VERSION…] [options]

Creates (or finds) the interface MODULE with the VERSION items and prints its InterfaceInfo. While
a gateway serves the project, it goes through that gateway; with none, it opens the project's index
itself (creating .portico/ there only when it creates a record). --url names a gateway to use.

VERSION items: '~name', '~name(args)', 'a.b=value' or a JSON object.

Options:
${optionLines(GET_OPTIONS)}
  ${'--help'.padEnd(22)} this help
`,
  reindex: `Usage: portico reindex [PROJECT] [--store S]

Rebuilds the index of PROJECT (default: the current directory) from its interface directories,
keeping created_by, label and archived, in the embedded store (stop the gateway serving it
first) or in PostgreSQL (in one transaction, beside running gateways).

Options:
${optionLines(REINDEX_OPTIONS)}
  ${'--help'.padEnd(22)} this help
`,
  index: `Usage: portico index copy --from S --to S [--project P]

Copies the index of a project from its embedded store into PostgreSQL, or back, keeping uuid,
created_by, created_at, label and archived. Idempotent and resumable: run it again after an
interruption. The embedded side must not be served meanwhile (it takes the project's lock).

Options:
${optionLines(INDEX_COPY_OPTIONS)}
  ${'--help'.padEnd(22)} this help
`,
  fetch: `Usage: portico fetch [MODULE] [options]

Fetches the remote modules declared in the project's portico.json (all, or MODULE) into
.portico/remotes. Works beside a running gateway.

Options:
${optionLines(FETCH_OPTIONS)}
  ${'--help'.padEnd(22)} this help
`,
  db: `Usage: portico db start|stop|status [--project P]

start: makes (first time) and starts a PostgreSQL cluster of the project's own in
P/.portico/postgres (a unix socket there, no TCP port) with a database 'portico', and prints the
URL to pass to \`portico serve --store\` (on stdout, alone: STORE=$(portico db start) works). Run
again, it says the cluster is already running and prints the URL. stop: stops it (the data stays).
status: whether it runs (exit status 0) or not (3), with the URL. As root the server runs as the
'postgres' user. Needs Debian's postgresql package (apt-get install -y postgresql).

Options:
${optionLines(DB_OPTIONS)}
  ${'--help'.padEnd(22)} this help
`,
};

async function serve(argv: string[]): Promise<number> {
  const options = parseServeArgs(argv);
  if (!existsSync(options.project) || !statSync(options.project).isDirectory()) {
    throw new UsageError(`Project directory '${options.project}' does not exist`);
  }
  const running = await startServer(options);
  process.stdout.write(banner(running.url, running.gateway.projects.defaultDir, options));
  // The first signal drains and stops (exit 0); a second one stops at once. The handlers stay on
  // for the gateway's whole life: between removing one listener and adding the next, Node restores
  // the default action, and a SIGINT landing in that gap (npm's copy of the same Ctrl+C, often)
  // would kill the gateway mid-drain.
  let first: { signal: string; at: number } | undefined;
  let echoed = false;
  let stopping = (_signal: string) => {};
  const stop = new Promise<string>((resolve) => (stopping = resolve));
  const onSignal = (received: NodeJS.Signals) => {
    if (!first) {
      first = { signal: received, at: performance.now() };
      stopping(received);
      return;
    }
    // One Ctrl+C under npm arrives twice: the terminal signals the whole foreground group, npm
    // among it, and npm passes its own copy on. That copy (one, however late a loaded machine
    // makes it) is the same Ctrl+C, not a second one; a second Ctrl+C arrives twice as well.
    if (received === 'SIGINT' && first.signal === 'SIGINT' && process.env.npm_lifecycle_event && !echoed && performance.now() - first.at < SIGNAL_ECHO_MS) {
      echoed = true;
      return;
    }
    // Through the gateway's log (JSON lines on a stderr that is not a terminal), like every other line it writes.
    running.gateway.log(`${received} again, stopping now`, 'warn');
    process.exit(received === 'SIGINT' ? 130 : 143);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const unwatch = whenOrphaned(() => {
    first ??= { signal: 'orphaned', at: performance.now() };
    stopping('npm, which started the gateway, is gone');
  });
  const signal = await stop;
  unwatch();
  const again = signal.startsWith('SIG') ? 'send it again' : 'send SIGTERM';
  running.gateway.log(`${signal}, stopping (in-flight work gets up to ${options.drainMs / 1000} s; ${again} to stop now)`, 'warn');
  await running.close();
  return 0;
}

/** Under npm, one more SIGINT this soon after the first is npm passing the terminal's Ctrl+C on, not a second one (ms). */
const SIGNAL_ECHO_MS = 5000;

/** How often a gateway started by npm checks that npm is still there (ms). */
const PARENT_CHECK_MS = 500;

/**
 * Under npm (`npm start`, `npx portico serve`), a SIGTERM or SIGINT sent to npm alone reaches only
 * the shell npm runs the command in, which dies of it without passing it on: the gateway would live
 * on, orphaned, holding the port. Started by npm, the gateway notices that its parent changed and
 * calls `stop`. Started otherwise (a shell, nohup, systemd), an orphaned gateway keeps serving.
 * Returns the function that stops watching.
 */
function whenOrphaned(stop: () => void): () => void {
  if (!process.env.npm_lifecycle_event) return () => {};
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    stop();
  }, PARENT_CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command && COMMAND_HELP[command] && (rest.includes('--help') || rest.includes('-h'))) {
    process.stdout.write(COMMAND_HELP[command]);
    return 0;
  }
  try {
    switch (command) {
      case 'serve':
        return await serve(rest);
      case 'get':
        return await get(rest);
      case 'reindex':
        return await reindex(rest);
      case 'index':
        return await indexCommand(rest);
      case 'fetch':
        return await fetchRemotes(rest);
      case 'db':
        return await db(rest);
      case '--version':
      case 'version':
        process.stdout.write(`${VERSION}\n`);
        return 0;
      case undefined:
      case '--help':
      case '-h':
      case 'help':
        process.stdout.write(USAGE);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`Unknown command '${command}'`);
    }
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`portico: ${(err as Error).message}\n\n${(command && COMMAND_HELP[command]) || USAGE}`);
      return 2;
    }
    throw err;
  }
}

/** What `portico serve` prints once it listens: where to go, what it serves, who may use it, how to stop. */
function banner(url: string, project: string, options: GatewayOptions): string {
  const origins = options.allowOrigins.length ? options.allowOrigins.join(', ') : 'none besides its own';
  return [
    `Portico ${VERSION} serving ${project}`,
    `  Open     ${url}/   (modules with live widgets)`,
    `  Docs     ${url}/docs   (API ${url}/v1, socket ${url.replace(/^http/, 'ws')}/v1/interfaces/ws)`,
    `  Store    ${options.store ? `PostgreSQL at ${redact(options.store)} (shared with other gateways)` : `embedded index in ${path.join(project, '.portico')}`}`,
    `  Runs     ${options.executor === 'slurm' ? `Slurm jobs (sbatch${options.slurm.partition ? ` --partition=${options.slurm.partition}` : ''}${options.slurm.account ? ` --account=${options.slurm.account}` : ''})` : 'local processes'}`,
    ...(options.workers === 'slurm' ? [`  Workers  Slurm allocations (srun), connecting back to ${options.workerConnect ?? `${hostname()} (a free port)`}`] : []),
    `  Auth     ${authLine(options)}`,
    `  Origins  ${origins}`,
    `           add a page's origin with --allow-origin URL`,
    ...(options.trustedProxies.length ? [`  Proxies  X-Forwarded-Proto, -Host and -For believed from ${options.trustedProxies.join(', ')} only`] : []),
    `  Stop     Ctrl+C`,
    '',
  ].join('\n');
}

function authLine(options: { apiToken?: string | undefined; oidcIssuer?: string | undefined }): string {
  const ways = [options.apiToken && 'Authorization: Bearer <api token> (or a session token)', options.oidcIssuer && `OIDC access tokens of ${options.oidcIssuer}`].filter(Boolean);
  return ways.length ? ways.join('; ') : 'none (loopback only)';
}
