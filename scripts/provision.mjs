#!/usr/bin/env node
// `npm run provision` (and the first step of `npm test`): makes sure what the browser and notebook
// tests need is on the machine, installing only what is missing:
//   - Debian Chromium at /usr/bin/chromium (apt-get; sudo only when not root),
//   - a test-only Python venv at <repo>/.cache/test-venv with scripts/test-requirements.txt and a
//     `python3` kernelspec inside it. pip runs only when the stamp in it does not match the sha256 of
//     the requirements file and the Python version. It is not the project's `.venv`: what a user
//     installs there (JupyterLab, `npx portico-lab install`) never reaches the tests.
// Exports (for vitest): PORTICO_TEST_PYTHON (the venv's python), PORTICO_CHROMIUM.
// Idempotent; well under 2 s when everything is there.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureSlurm } from './provision-slurm.mjs';
import { ensurePostgres } from './provision-postgres.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const CHROMIUM = '/usr/bin/chromium';
export const VENV = path.join(ROOT, '.cache', 'test-venv');
export const VENV_PYTHON = path.join(VENV, 'bin', 'python');
const REQUIREMENTS = path.join(ROOT, 'scripts', 'test-requirements.txt');
const STAMP = path.join(VENV, '.portico-provision.json');
const KERNEL_JSON = path.join(VENV, 'share', 'jupyter', 'kernels', 'python3', 'kernel.json');
const BASE_PYTHON = 'python3';
// ipykernel's own default name, the one a user's kernel has: the notebooks record it, so JupyterLab
// opens them unmodified when this kernel connects.
const KERNEL_DISPLAY_NAME = 'Python 3 (ipykernel)';

export const log = (line) => console.log(`provision: ${line}`);

export class ProvisionError extends Error {}

/** Runs a command with its output shown; throws a ProvisionError naming it when it fails. */
function sh(cmd, args, { what, ...opts } = {}) {
  log(`$ ${[cmd, ...args].join(' ')}`);
  const res = spawnSync(cmd, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'], ...opts });
  if (res.error) throw new ProvisionError(`${what ?? cmd}: cannot run ${cmd}: ${res.error.message}`);
  if (res.status !== 0) throw new ProvisionError(`${what ?? cmd}: \`${[cmd, ...args].join(' ')}\` exited with ${res.status ?? res.signal}`);
}

/** Runs a command quietly and returns its stdout, or null when it cannot run or fails. */
function capture(cmd, args) {
  const res = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return res.status === 0 ? res.stdout : null;
}

function onPath(cmd) {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => dir && existsSync(path.join(dir, cmd)));
}

/** How to run apt-get: directly as root, through sudo otherwise (non-interactive when there is no terminal). */
function aptPrefix() {
  if (process.getuid?.() === 0) return [];
  if (onPath('sudo')) return process.stdin.isTTY ? ['sudo'] : ['sudo', '-n'];
  throw new ProvisionError('installing Debian packages needs root or sudo; run `npm run provision` as root');
}

export function apt(args, what) {
  if (!onPath('apt-get')) throw new ProvisionError(`${what}: apt-get is not available here; install the Debian package by hand`);
  const [cmd, ...pre] = [...aptPrefix(), 'apt-get'];
  sh(cmd, [...pre, ...args], { what, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

export function ensureChromium() {
  if (existsSync(CHROMIUM)) {
    log(`chromium: ${CHROMIUM} present`);
    return;
  }
  log(`chromium: ${CHROMIUM} missing; installing Debian's chromium package`);
  apt(['update'], 'chromium');
  apt(['install', '-y', 'chromium'], 'chromium');
  if (!existsSync(CHROMIUM)) throw new ProvisionError(`chromium: apt-get finished but ${CHROMIUM} is still missing`);
  log(`chromium: installed ${CHROMIUM}`);
}

export function ensureVenv() {
  const version = capture(BASE_PYTHON, ['-c', 'import sys; print(sys.version.replace("\\n", " "))'])?.trim();
  if (!version) throw new ProvisionError(`venv: ${BASE_PYTHON} not found or not runnable; install Python 3.11+`);
  const requirements = readFileSync(REQUIREMENTS);
  const want = { requirements_sha256: createHash('sha256').update(requirements).digest('hex'), python: version, kernel: KERNEL_DISPLAY_NAME };

  let stamp = null;
  try {
    stamp = JSON.parse(readFileSync(STAMP, 'utf8'));
  } catch {
    // no stamp (new or half-made venv): install below
  }
  const usable = existsSync(VENV_PYTHON) && existsSync(path.join(VENV, 'pyvenv.cfg'));
  if (usable && stamp?.requirements_sha256 === want.requirements_sha256 && stamp?.python === want.python && stamp?.kernel === want.kernel && existsSync(KERNEL_JSON)) {
    log(`venv: ${path.relative(ROOT, VENV)} up to date (Python ${version.split(' ')[0]}, requirements ${want.requirements_sha256.slice(0, 12)})`);
    return;
  }

  if (!usable || (stamp && stamp.python !== want.python)) {
    // A venv made by another Python (or half-made) cannot be repaired in place: make it anew.
    if (existsSync(VENV)) log(`venv: ${!usable ? 'incomplete' : `made with Python ${stamp.python.split(' ')[0]}`}; recreating`);
    rmSync(VENV, { recursive: true, force: true });
    sh(BASE_PYTHON, ['-m', 'venv', VENV], { what: 'venv' });
  } else {
    log('venv: requirements changed; updating');
  }
  // The repo's package.json says "type": "module"; node tools run from inside the venv (jupyter_builder's
  // yarn.js) must stay CommonJS (toolchain.md §7).
  writeFileSync(path.join(VENV, 'package.json'), '{"type":"commonjs"}\n');
  rmSync(STAMP, { force: true });
  sh(VENV_PYTHON, ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '-r', REQUIREMENTS], { what: 'venv' });
  sh(VENV_PYTHON, ['-m', 'ipykernel', 'install', '--sys-prefix', '--name', 'python3', '--display-name', KERNEL_DISPLAY_NAME], { what: 'venv' });
  if (!existsSync(KERNEL_JSON)) throw new ProvisionError(`venv: ipykernel install left no kernelspec at ${KERNEL_JSON}`);
  writeFileSync(STAMP, JSON.stringify(want, null, 2) + '\n');
  log(`venv: ready (${path.relative(ROOT, VENV_PYTHON)})`);
}

/**
 * Provisions everything; never throws. Returns the environment for the tests and the reasons for
 * any part that could not be provisioned (empty when all is well).
 */
export function provision() {
  const started = Date.now();
  const errors = [];
  const env = { PORTICO_TEST_PYTHON: VENV_PYTHON, PORTICO_CHROMIUM: CHROMIUM };
  for (const step of [ensureChromium, ensureVenv, ensurePostgres, ensureSlurm]) {
    try {
      Object.assign(env, step());
    } catch (err) {
      const reason = err instanceof ProvisionError ? err.message : `${step.name}: ${err?.stack ?? err}`;
      log(`FAILED ${reason}`);
      errors.push(reason);
    }
  }
  log(`${errors.length ? `${errors.length} step(s) failed` : 'ready'} in ${((Date.now() - started) / 1000).toFixed(2)} s`);
  return { env, errors };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { env, errors } = provision();
  for (const [name, value] of Object.entries(env)) log(`export ${name}=${value}`);
  process.exitCode = errors.length ? 1 : 0;
}
