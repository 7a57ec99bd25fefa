// Provisioning step for the Slurm executor's tests: Debian's `slurm-wlm` (sbatch, squeue, scancel,
// scontrol, slurmctld, slurmd) and `munge` (munged, mungekey), installed with apt-get only when one
// of their programs is missing. Starting a throwaway cluster is not done here but per test run, by
// test/support/slurm.ts, so that nothing outlives the run. With PORTICO_TEST_SLURM naming an
// existing cluster (a slurm.conf path), nothing is installed: the tests use that cluster.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { commandStdio, log, notice } from './provision-shell.mjs';

/** The programs the tests run: clients for the gateway, daemons for the throwaway cluster. */
export const SLURM_PROGRAMS = ['sbatch', 'squeue', 'scancel', 'scontrol', 'sinfo', 'slurmctld', 'slurmd', 'munged', 'mungekey'];
const PACKAGES = ['slurm-wlm', 'munge'];
// Debian puts the daemons in /usr/sbin, which a non-login root shell may not have on PATH.
const SEARCH = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/usr/bin', '/sbin'];

/** The full path of a program, or null. */
export function findProgram(name) {
  for (const dir of SEARCH) if (dir && existsSync(path.join(dir, name))) return path.join(dir, name);
  return null;
}

class SlurmProvisionError extends Error {}

function aptGet(args) {
  const root = process.getuid?.() === 0;
  if (!root && !findProgram('sudo')) throw new SlurmProvisionError(`slurm: installing ${PACKAGES.join(' ')} needs root or sudo; run \`apt-get install -y ${PACKAGES.join(' ')}\` as root`);
  const [cmd, ...pre] = root ? ['apt-get'] : ['sudo', '-n', 'apt-get'];
  // Another apt-get on the same machine (a parallel provision) holds the dpkg lock: wait for it.
  const full = [...pre, '-o', 'DPkg::Lock::Timeout=300', ...args];
  log(`$ ${[cmd, ...full].join(' ')}`);
  const res = spawnSync(cmd, full, { stdio: commandStdio(), env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (res.error) throw new SlurmProvisionError(`slurm: cannot run apt-get: ${res.error.message}`);
  if (res.status !== 0) throw new SlurmProvisionError(`slurm: \`apt-get ${args.join(' ')}\` exited with ${res.status ?? res.signal}`);
}

export function ensureSlurm() {
  if (process.env.PORTICO_TEST_SLURM) {
    log(`slurm: using the cluster of PORTICO_TEST_SLURM=${process.env.PORTICO_TEST_SLURM}`);
    return;
  }
  const missing = SLURM_PROGRAMS.filter((name) => !findProgram(name));
  if (!missing.length) {
    log('slurm: slurm-wlm and munge present');
    return;
  }
  if (!findProgram('apt-get')) throw new SlurmProvisionError(`slurm: ${missing.join(', ')} missing and apt-get is not available; install slurm-wlm and munge by hand`);
  notice(`slurm: ${missing.join(', ')} missing; installing Debian's ${PACKAGES.join(' ')} (apt-get)`);
  aptGet(['update']);
  aptGet(['install', '-y', '--no-install-recommends', ...PACKAGES]);
  const still = SLURM_PROGRAMS.filter((name) => !findProgram(name));
  if (still.length) throw new SlurmProvisionError(`slurm: apt-get finished but ${still.join(', ')} are still missing`);
  log('slurm: installed slurm-wlm and munge');
}

if (process.argv[1] && path.resolve(process.argv[1]) === new URL(import.meta.url).pathname) ensureSlurm();
