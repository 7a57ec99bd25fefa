// The PostgreSQL part of `npm run provision` (DESIGN §8): the tests start a throwaway cluster of
// their own (test/support/postgres.ts), so the machine needs the server binaries, not a running
// server. Debian's `postgresql` package puts them in /usr/lib/postgresql/<major>/bin, off PATH.
// Nothing is needed when PORTICO_TEST_POSTGRES names a server the tests may use.
// Exports (for vitest): PORTICO_POSTGRES_BIN, the folder holding initdb, pg_ctl and postgres.
// Also exports startCluster, the throwaway cluster the tests (test/support/postgres.ts) and the
// bench (bench/postgres.mjs) run against.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { apt, log, notice, ProvisionError } from './provision-shell.mjs';

const DEBIAN_ROOT = '/usr/lib/postgresql';

/** The newest Debian PostgreSQL bin folder with initdb and pg_ctl, or the one on PATH, or null. */
export function findPostgresBin() {
  const majors = existsSync(DEBIAN_ROOT)
    ? readdirSync(DEBIAN_ROOT)
        .filter((name) => /^\d+$/.test(name))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const candidates = [...majors.map((major) => path.join(DEBIAN_ROOT, major, 'bin')), ...(process.env.PATH ?? '').split(path.delimiter)];
  return candidates.find((dir) => dir && existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'pg_ctl'))) ?? null;
}

/** Makes sure initdb and pg_ctl are installed; returns the environment the tests need. */
export function ensurePostgres() {
  if (process.env.PORTICO_TEST_POSTGRES) {
    log('postgres: PORTICO_TEST_POSTGRES names a server; no local cluster needed');
    return {};
  }
  let bin = findPostgresBin();
  if (!bin) {
    notice("postgres: initdb missing; installing Debian's postgresql package (apt-get)");
    apt(['update'], 'postgres');
    apt(['install', '-y', 'postgresql'], 'postgres');
    bin = findPostgresBin();
    if (!bin) throw new ProvisionError('postgres: apt-get finished but initdb is still missing');
  }
  log(`postgres: binaries in ${bin}`);
  return { PORTICO_POSTGRES_BIN: bin };
}

const run = promisify(execFile);

/** initdb and postgres refuse to run as root: as root, they run as the `postgres` user. */
async function serverCommand(bin, args) {
  const [cmd, argv] = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  try {
    await run(cmd, argv, { timeout: 120_000 });
  } catch (err) {
    throw new Error(`${path.basename(bin)} ${args.join(' ')} failed: ${err.message}\n${err.stdout ?? ''}${err.stderr ?? ''}`);
  }
}

/**
 * Starts a throwaway PostgreSQL cluster: initdb in a temporary folder, listening only on a unix
 * socket in that folder (no TCP port to collide on), owned by whoever starts it. `durable: false`
 * turns fsync off, for runs that never crash the server. Returns the connection string of its
 * `postgres` database, stop/start (fast shutdown, same socket) and close (stop and remove).
 */
export async function startCluster({ durable = true } = {}) {
  const bin = process.env.PORTICO_POSTGRES_BIN ?? findPostgresBin();
  if (!bin) throw new Error('no PostgreSQL binaries (initdb, pg_ctl): run `npm run provision`, or set PORTICO_TEST_POSTGRES');
  const dir = await mkdtemp(path.join(tmpdir(), 'portico-pg-'));
  const data = path.join(dir, 'data');
  const root = process.getuid?.() === 0;
  if (root) {
    const id = async (flag) => Number((await run('id', [flag, 'postgres'])).stdout);
    await chown(dir, await id('-u'), await id('-g'));
  }
  const user = root ? 'postgres' : userInfo().username;
  const pgCtl = path.join(bin, 'pg_ctl');
  const options = `-c listen_addresses= -k ${dir} -c max_connections=200${durable ? '' : ' -c fsync=off -c synchronous_commit=off -c full_page_writes=off'}`;
  const start = () => serverCommand(pgCtl, ['-D', data, '-o', options, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']);
  const stop = () => serverCommand(pgCtl, ['-D', data, '-m', 'fast', '-w', 'stop']);
  const close = async () => {
    await stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await serverCommand(path.join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', user, '--no-sync', '-E', 'UTF8', '--locale', 'C']);
    await start();
  } catch (err) {
    await close();
    throw err;
  }
  return { url: `postgres://${encodeURIComponent(user)}@localhost/postgres?host=${encodeURIComponent(dir)}`, start, stop, close };
}
