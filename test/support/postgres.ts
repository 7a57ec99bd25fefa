/**
 * A real PostgreSQL for a test suite: a throwaway cluster (initdb in a temporary folder, a unix
 * socket there, no TCP) started in beforeAll and removed in afterAll, or the server named by
 * PORTICO_TEST_POSTGRES. Either way each suite gets a fresh database of its own. Nothing here
 * skips: a suite whose PostgreSQL cannot start fails with the reason.
 */
import { execFile } from 'node:child_process';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
// @ts-expect-error: a plain .mjs script without types
import { findPostgresBin } from '../../scripts/provision-postgres.mjs';

const run = promisify(execFile);

export interface TestPostgres {
  /** A connection string for the suite's own database. */
  url: string;
  /** Stops the server (fast shutdown) when this suite owns it; refuses otherwise. */
  stop(): Promise<void>;
  /** Starts the stopped server again on the same socket. */
  start(): Promise<void>;
  /** Drops the database and, for a throwaway cluster, stops it and removes its folder. */
  close(): Promise<void>;
}

/** initdb and postgres refuse to run as root: as root, run them as the `postgres` user. */
function asServerUser(bin: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
}

async function serverCommand(bin: string, args: string[]): Promise<void> {
  const [cmd, argv] = asServerUser(bin, args);
  try {
    await run(cmd, argv, { timeout: 60_000 });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(`${path.basename(bin)} ${args.join(' ')} failed: ${(err as Error).message}\n${stdout ?? ''}${stderr ?? ''}`);
  }
}

async function createDatabase(adminUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `portico_test_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const again = new pg.Client({ connectionString: adminUrl });
      await again.connect();
      try {
        await again.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await again.end();
      }
    },
  };
}

/**
 * Starts (or borrows) a PostgreSQL and makes a fresh database on it. `durable: false` turns off
 * fsync in a throwaway cluster, for suites that test semantics and never crash the server.
 */
export async function startPostgres({ durable = true } = {}): Promise<TestPostgres> {
  const named = process.env.PORTICO_TEST_POSTGRES;
  if (named) {
    const db = await createDatabase(named);
    const refuse = async () => {
      throw new Error('this test stops and starts its PostgreSQL; it needs a throwaway cluster (unset PORTICO_TEST_POSTGRES)');
    };
    return { url: db.url, stop: refuse, start: refuse, close: db.drop };
  }
  const bin = process.env.PORTICO_POSTGRES_BIN ?? findPostgresBin();
  if (!bin) throw new Error('no PostgreSQL binaries (initdb, pg_ctl): run `npm run provision`, or set PORTICO_TEST_POSTGRES');
  const dir = await mkdtemp(path.join(tmpdir(), 'portico-pg-'));
  const data = path.join(dir, 'data');
  if (process.getuid?.() === 0) {
    const { uid, gid } = await run('id', ['-u', 'postgres']).then(async ({ stdout }) => ({
      uid: Number(stdout),
      gid: Number((await run('id', ['-g', 'postgres'])).stdout),
    }));
    await chown(dir, uid, gid);
  }
  const user = process.getuid?.() === 0 ? 'postgres' : userInfo().username;
  const pgCtl = path.join(bin, 'pg_ctl');
  // No TCP listener: the socket lives in the suite's own folder, so suites never collide on a port.
  const serverOptions = `-c listen_addresses= -k ${dir} -c max_connections=200${durable ? '' : ' -c fsync=off -c synchronous_commit=off -c full_page_writes=off'}`;
  const start = () => serverCommand(pgCtl, ['-D', data, '-o', serverOptions, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']);
  const stop = () => serverCommand(pgCtl, ['-D', data, '-m', 'fast', '-w', 'stop']);
  try {
    await serverCommand(path.join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', user, '--no-sync', '-E', 'UTF8', '--locale', 'C']);
    await start();
    const db = await createDatabase(`postgres://${encodeURIComponent(user)}@localhost/postgres?host=${encodeURIComponent(dir)}`);
    return {
      url: db.url,
      stop,
      start,
      async close() {
        await stop().catch(() => undefined);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
