/**
 * `portico db start|stop|status`: a PostgreSQL cluster of the project's own, for `--store`.
 *
 * The cluster lives in `<project>/.portico/postgres/`: its data in `data/`, its log in
 * `server.log`, and its only way in, a unix socket, in the folder itself (no TCP port to collide
 * on or to guard). The folder is mode 0700, so only its owner (and root) reach the socket, and the
 * server trusts whoever does. PostgreSQL refuses to run as root: as root its programs run as the
 * `postgres` user (`runuser`), which owns the folder, as the test suites' throwaway clusters do
 * (scripts/provision-postgres.mjs). The binaries are Debian's (`/usr/lib/postgresql/<major>/bin`,
 * off PATH), PORTICO_POSTGRES_BIN's, or the ones on PATH.
 *
 * stdout carries one line, the `--store` URL (`STORE=$(portico db start)` works); what happened
 * and what to do next go to stderr.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { chmod, chown, mkdir, readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import pg from 'pg';
import { UsageError } from './options.js';

/** `portico db` options (its --help). */
export const DB_OPTIONS = [{ flag: '--project P', help: 'The project whose cluster it is (in P/.portico/postgres).', default: '.', env: 'PORTICO_PROJECT' }];

/** The database `start` makes in the cluster and the URL names. */
const DATABASE = 'portico';
/** Where Debian installs each PostgreSQL major version (`<major>/bin`). */
const DEBIAN_ROOT = '/usr/lib/postgresql';
/** Linux's bound on a unix socket path (sun_path holds 108 bytes with the final NUL). */
const SOCKET_PATH_MAX = 107;
/** The socket PostgreSQL makes in its socket folder (default port 5432: nothing listens on TCP). */
const SOCKET_NAME = '.s.PGSQL.5432';
/** How long pg_ctl waits for the server to start or stop (s). */
const PG_CTL_WAIT_S = 60;
/** Lines of server.log shown when the server does not start. */
const LOG_TAIL_LINES = 15;

const run = promisify(execFile);

/** The cluster of one project, and how its programs are run. */
interface Cluster {
  project: string;
  /** `<project>/.portico/postgres`: the socket folder, the log and `data/`. */
  dir: string;
  data: string;
  log: string;
  bin: string;
  /** Running as root: the server programs run as `postgres`, which owns `dir`. */
  root: boolean;
  /** The database user: `postgres` as root, else whoever runs this. */
  user: string;
  url: string;
}

/** `portico db start|stop|status [--project P]`; see the file header. */
export async function db(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== 'start' && sub !== 'stop' && sub !== 'status') throw new UsageError(`db takes start, stop or status, got '${sub ?? ''}'`);
  const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { project: { type: 'string' } } });
  if (positionals.length) throw new UsageError(`db ${sub} takes --project P, not '${positionals[0]}'`);
  const project = path.resolve(values.project ?? process.env.PORTICO_PROJECT ?? process.cwd());
  if (!existsSync(project) || !statSync(project).isDirectory()) throw new UsageError(`Project directory '${project}' does not exist`);
  const cluster = clusterOf(project);
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const others = project === process.cwd() ? '' : ` --project ${shellWord(project)}`;

  if (sub === 'status') {
    const state = await status(cluster);
    if (state === 'none') say(`No PostgreSQL cluster in ${cluster.dir}: start one with \`portico db start${others}\``);
    else if (state === 'stopped') say(`The PostgreSQL cluster in ${cluster.dir} is stopped: start it with \`portico db start${others}\``);
    else {
      say(`The PostgreSQL cluster in ${cluster.dir} is running (pid ${state.pid}); its --store URL:`);
      process.stdout.write(`${cluster.url}\n`);
    }
    return state === 'none' || state === 'stopped' ? 3 : 0;
  }

  if (sub === 'stop') {
    const state = await status(cluster);
    if (state === 'none' || state === 'stopped') {
      say(`The PostgreSQL cluster in ${cluster.dir} is not running${state === 'none' ? ' (there is none)' : ''}`);
      return 0;
    }
    await pgCtl(cluster, ['stop', '-m', 'fast']);
    say(`Stopped the PostgreSQL cluster in ${cluster.dir} (its data stays; \`portico db start${others}\` starts it again)`);
    return 0;
  }

  const state = await status(cluster);
  if (state !== 'none' && state !== 'stopped') {
    say(`The PostgreSQL cluster in ${cluster.dir} is already running (pid ${state.pid})`);
  } else {
    await checkReachable(cluster);
    if (state === 'none') await initialize(cluster);
    await startServer(cluster);
    const version = (await readFile(path.join(cluster.data, 'PG_VERSION'), 'utf8').catch(() => '')).trim();
    say(`Started PostgreSQL ${version} in ${cluster.dir} (a unix socket there, no TCP port)`);
  }
  await ensureDatabase(cluster);
  say(`Serve the project with it (the URL below names user '${cluster.user}' and database '${DATABASE}'):`);
  say(`  portico serve ${shellWord(project)} --store ${shellWord(cluster.url)}`);
  say(`Stop it with \`portico db stop${others}\``);
  process.stdout.write(`${cluster.url}\n`);
  return 0;
}

/** Where the project's cluster is and who runs it; refuses what cannot work (no binaries, too long a path). */
function clusterOf(project: string): Cluster {
  const named = process.env.PORTICO_POSTGRES_BIN;
  const bin = findPostgresBin(named);
  if (!bin) {
    throw new Error(
      `PostgreSQL's server programs (initdb, pg_ctl) are not installed${named ? ` in ${named} (PORTICO_POSTGRES_BIN)` : ''}. ` +
        "On Debian or Ubuntu: apt-get install -y postgresql (as root, or with sudo). Elsewhere, name the bin folder of a PostgreSQL installation in PORTICO_POSTGRES_BIN, or put it on PATH.",
    );
  }
  const dir = path.join(project, '.portico', 'postgres');
  const socket = path.join(dir, SOCKET_NAME);
  if (Buffer.byteLength(socket) > SOCKET_PATH_MAX) {
    throw new Error(
      `The cluster's unix socket would be ${socket}, ${Buffer.byteLength(socket)} bytes, longer than the ${SOCKET_PATH_MAX} a socket path may be: ` +
        `give --project a shorter path to the project (a symbolic link works: ln -s ${project} /srv/project).`,
    );
  }
  const root = process.getuid?.() === 0;
  const user = root ? 'postgres' : userInfo().username;
  const url = `postgres://${encodeURIComponent(user)}@localhost/${DATABASE}?host=${dir.split('/').map(encodeURIComponent).join('/')}`;
  return { project, dir, data: path.join(dir, 'data'), log: path.join(dir, 'server.log'), bin, root, user, url };
}

/** `named` (PORTICO_POSTGRES_BIN) alone when given, else the newest Debian major's bin folder, else the one on PATH, that has initdb and pg_ctl. */
function findPostgresBin(named: string | undefined): string | undefined {
  const majors = existsSync(DEBIAN_ROOT)
    ? readdirSync(DEBIAN_ROOT)
        .filter((name) => /^\d+$/.test(name))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const candidates = named ? [named] : [...majors.map((major) => path.join(DEBIAN_ROOT, major, 'bin')), ...(process.env.PATH ?? '').split(path.delimiter)];
  return candidates.find((dir) => dir && existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'pg_ctl')));
}

/**
 * Runs a server program (initdb, pg_ctl) as the cluster's owner, from its folder (the postgres
 * user may not be allowed into the current one). Resolves with its exit code and output; rejects
 * only when it cannot be run at all.
 */
async function serverProgram(cluster: Cluster, program: string, args: string[]): Promise<{ code: number; output: string }> {
  // A bare name is one of the cluster's programs; an absolute path runs as it is.
  const file = path.isAbsolute(program) ? program : path.join(cluster.bin, program);
  const [cmd, argv] = cluster.root ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
  try {
    const { stdout, stderr } = await run(cmd, argv, { cwd: existsSync(cluster.dir) ? cluster.dir : cluster.project, timeout: (PG_CTL_WAIT_S + 30) * 1000 });
    return { code: 0, output: `${stdout}${stderr}` };
  } catch (err) {
    const failed = err as { code?: unknown; stdout?: string; stderr?: string; message: string };
    if (typeof failed.code !== 'number') throw new Error(`Cannot run ${cmd}: ${failed.message}`);
    return { code: failed.code, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

async function pgCtl(cluster: Cluster, args: string[]): Promise<void> {
  const { code, output } = await serverProgram(cluster, 'pg_ctl', ['-D', cluster.data, '-w', '-t', String(PG_CTL_WAIT_S), ...args]);
  if (code !== 0) throw new Error(`pg_ctl ${args[0]} failed (exit code ${code}): ${output.trim()}`);
}

/** `none` (no cluster made yet), `stopped`, or the running server's pid. */
async function status(cluster: Cluster): Promise<'none' | 'stopped' | { pid: number }> {
  if (!existsSync(path.join(cluster.data, 'PG_VERSION'))) return 'none';
  // pg_ctl status: 0 running, 3 not running, 4 no readable data folder.
  const { code, output } = await serverProgram(cluster, 'pg_ctl', ['-D', cluster.data, 'status']);
  if (code === 0) return { pid: Number(/PID: (\d+)/.exec(output)?.[1] ?? 0) };
  if (code === 3) return 'stopped';
  throw new Error(`pg_ctl status failed (exit code ${code}): ${output.trim()}`);
}

/**
 * As root, the `postgres` user must be able to reach the cluster's folder: a folder on the way
 * that others may not enter (root's home is mode 0700 on Debian) stops it. Said before anything
 * is made, with the folder that blocks and the ways out; its permissions are not changed here.
 */
async function checkReachable(cluster: Cluster): Promise<void> {
  if (!cluster.root) return;
  const postgresUser = await run('id', ['-u', 'postgres']).catch(() => undefined);
  if (!postgresUser) throw new Error("There is no 'postgres' user to run the server as (PostgreSQL refuses to run as root): install Debian's postgresql package (apt-get install -y postgresql), which makes it.");
  const enters = async (dir: string) => (await serverProgram(cluster, '/usr/bin/test', ['-x', dir]).catch(() => ({ code: 1 }))).code === 0;
  let deepest = cluster.dir;
  while (!existsSync(deepest)) deepest = path.dirname(deepest);
  if (await enters(deepest)) return;
  // The first folder from / down that the postgres user cannot enter.
  const parts = deepest.split(path.sep).filter(Boolean);
  let blocking = deepest;
  for (let i = 1; i <= parts.length; i++) {
    const folder = path.sep + parts.slice(0, i).join(path.sep);
    if (!(await enters(folder))) {
      blocking = folder;
      break;
    }
  }
  const mode = (statSync(blocking).mode & 0o777).toString(8).padStart(3, '0');
  throw new Error(
    `PostgreSQL refuses to run as root, so its server runs as the 'postgres' user, which cannot enter ${blocking} (mode ${mode}) on the way to ${cluster.dir}. ` +
      `Let it through with \`chmod o+x ${shellWord(blocking)}\` (others may then enter, not list, that folder), or keep the project in a folder others may enter, then run this again.`,
  );
}

/** Makes the folder (0700, owned by the server's user) and the cluster in it. */
async function initialize(cluster: Cluster): Promise<void> {
  await mkdir(path.dirname(cluster.dir), { recursive: true }); // .portico, as the gateway makes it
  await mkdir(cluster.dir, { recursive: true, mode: 0o700 });
  await chmod(cluster.dir, 0o700); // whatever the umask
  if (cluster.root) {
    const id = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout);
    await chown(cluster.dir, await id('-u'), await id('-g'));
  }
  // trust: the socket is the only way in, and only the folder's owner (and root) may reach it.
  const { code, output } = await serverProgram(cluster, 'initdb', ['-D', cluster.data, '-A', 'trust', '-U', cluster.user, '-E', 'UTF8', '--locale', 'C']);
  if (code !== 0) throw new Error(`initdb failed (exit code ${code}): ${output.trim()}`);
}

/** Starts the server on the folder's socket only; a failure shows the end of its log. */
async function startServer(cluster: Cluster): Promise<void> {
  const options = `-c listen_addresses= -k ${cluster.dir}`;
  const { code, output } = await serverProgram(cluster, 'pg_ctl', ['-D', cluster.data, '-o', options, '-l', cluster.log, '-w', '-t', String(PG_CTL_WAIT_S), 'start']);
  if (code === 0) return;
  const log = await readFile(cluster.log, 'utf8').catch(() => '');
  const tail = log.trimEnd().split('\n').slice(-LOG_TAIL_LINES).join('\n');
  throw new Error(`pg_ctl start failed (exit code ${code}): ${output.trim()}${tail ? `\nThe end of ${cluster.log}:\n${tail}` : ''}`);
}

/** Creates the database the URL names, unless it is there. */
async function ensureDatabase(cluster: Cluster): Promise<void> {
  const client = new pg.Client({ host: cluster.dir, user: cluster.user, database: 'postgres' });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (!rowCount) await client.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await client.end();
  }
}

/** `text` as one shell word: as it is when it is plain, else single-quoted. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}
