// The PostgreSQL part of `npm run provision` (DESIGN §8): the tests start a throwaway cluster of
// their own (test/support/postgres.ts), so the machine needs the server binaries, not a running
// server. Debian's `postgresql` package puts them in /usr/lib/postgresql/<major>/bin, off PATH.
// Nothing is needed when PORTICO_TEST_POSTGRES names a server the tests may use.
// Exports (for vitest): PORTICO_POSTGRES_BIN, the folder holding initdb, pg_ctl and postgres.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { apt, log, ProvisionError } from './provision.mjs';

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
    log("postgres: initdb missing; installing Debian's postgresql package");
    apt(['update'], 'postgres');
    apt(['install', '-y', 'postgresql'], 'postgres');
    bin = findPostgresBin();
    if (!bin) throw new ProvisionError('postgres: apt-get finished but initdb is still missing');
  }
  log(`postgres: binaries in ${bin}`);
  return { PORTICO_POSTGRES_BIN: bin };
}
