#!/usr/bin/env node
// `npm run provision` (and the first step of `npm test`): makes sure what the browser and notebook
// tests need is on the machine, installing only what is missing:
//   - Debian Chromium at /usr/bin/chromium (apt-get; sudo only when not root),
//   - a test-only Python venv at <repo>/.cache/test-venv with scripts/test-requirements.txt and a
//     `python3` kernelspec inside it. pip runs only when the stamp in it does not match the sha256 of
//     the requirements file and the Python version. It is not the project's `.venv`: what a user
//     installs there (JupyterLab, `npx portico-lab install`) never reaches the tests.
//   - a second venv at <repo>/.cache/lab-newest with the newest JupyterLab 4 from PyPI, as a user's
//     `pip install 'jupyterlab>=4,<5'` gets it (scripts/lab-newest-requirements.txt, unpinned on
//     purpose); pip looks for a newer release again once a day (test/e2e/lab-newest.test.ts).
//   - a third venv at <repo>/.cache/front-ends with the other notebook front ends that render
//     anywidgets (Notebook 7, Voilà, marimo; scripts/front-ends-requirements.txt, pinned).
//   - VitePress, for the guide in docs/ (`npm run docs`, test/docs-site.test.ts), from npm into
//     <repo>/.cache/docs-site with its own lockfile (scripts/provision-docs.mjs).
//   - Debian nginx at /usr/sbin/nginx (apt-get, like chromium): test/proxy.test.ts starts its own on
//     loopback, as the TLS proxy in front of a gateway (docs/operating/proxy.md); the tests never use
//     the package's own service.
// Exports (for vitest): PORTICO_TEST_PYTHON (the venv's python), PORTICO_LAB_NEWEST_PYTHON, PORTICO_FRONT_ENDS_PYTHON,
// PORTICO_CHROMIUM, PORTICO_NGINX, PORTICO_VITEPRESS.
// Idempotent; well under 2 s when everything is there. Alone (`npm run provision`) it prints what it
// does; `npm test` sends all of it, pip's and apt-get's output included, to its log file and shows
// only a line when a slow step starts (provision({ logFd })).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureSlurm } from './provision-slurm.mjs';
import { ensurePostgres } from './provision-postgres.mjs';
import { ensureDocsSite } from './provision-docs.mjs';
import { apt, capture, log, notice, ProvisionError, setLogFd, sh } from './provision-shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const CHROMIUM = '/usr/bin/chromium';
export const NGINX = '/usr/sbin/nginx';
export const VENV = path.join(ROOT, '.cache', 'test-venv');
export const VENV_PYTHON = path.join(VENV, 'bin', 'python');
const REQUIREMENTS = path.join(ROOT, 'scripts', 'test-requirements.txt');
export const FRONT_ENDS = path.join(ROOT, '.cache', 'front-ends');
export const FRONT_ENDS_PYTHON = path.join(FRONT_ENDS, 'bin', 'python');
const FRONT_ENDS_REQUIREMENTS = path.join(ROOT, 'scripts', 'front-ends-requirements.txt');
const BASE_PYTHON = 'python3';
// ipykernel's own default name, the one a user's kernel has: the notebooks record it, so JupyterLab
// opens them unmodified when this kernel connects.
const KERNEL_DISPLAY_NAME = 'Python 3 (ipykernel)';

export const LAB_NEWEST = path.join(ROOT, '.cache', 'lab-newest');
export const LAB_NEWEST_PYTHON = path.join(LAB_NEWEST, 'bin', 'python');
const LAB_NEWEST_REQUIREMENTS = path.join(ROOT, 'scripts', 'lab-newest-requirements.txt');
/** How long the newest JupyterLab found stays the newest before pip asks PyPI again. */
const LAB_NEWEST_RECHECK_MS = 24 * 3600 * 1000;

export function ensureChromium() {
  if (existsSync(CHROMIUM)) {
    log(`chromium: ${CHROMIUM} present`);
    return;
  }
  notice(`chromium: ${CHROMIUM} missing; installing Debian's chromium package (apt-get)`);
  apt(['update'], 'chromium');
  apt(['install', '-y', 'chromium'], 'chromium');
  if (!existsSync(CHROMIUM)) throw new ProvisionError(`chromium: apt-get finished but ${CHROMIUM} is still missing`);
  log(`chromium: installed ${CHROMIUM}`);
}

export function ensureNginx() {
  if (existsSync(NGINX)) {
    log(`nginx: ${NGINX} present`);
    return;
  }
  notice(`nginx: ${NGINX} missing; installing Debian's nginx package (apt-get)`);
  apt(['update'], 'nginx');
  try {
    apt(['install', '-y', 'nginx'], 'nginx');
  } catch (err) {
    // Without a policy-rc.d (outside containers) the package's own service may fail to start (port
    // 80 taken, no init): the tests never use it, only the binary.
    if (!existsSync(NGINX)) throw err;
    log(`nginx: the package's own service did not start (${err.message}); the tests use only ${NGINX}`);
  }
  if (!existsSync(NGINX)) throw new ProvisionError(`nginx: apt-get finished but ${NGINX} is still missing`);
  log(`nginx: installed ${NGINX}`);
}

/**
 * A venv at `venv` with the pinned `requirements` and a `python3` kernelspec inside it; pip runs
 * only when the stamp in it does not match the requirements' sha256 and the Python version. `what`
 * names it in the log.
 */
function ensurePinnedVenv(venv, requirementsFile, what) {
  const python = path.join(venv, 'bin', 'python');
  const stampFile = path.join(venv, '.portico-provision.json');
  const kernelJson = path.join(venv, 'share', 'jupyter', 'kernels', 'python3', 'kernel.json');
  const version = capture(BASE_PYTHON, ['-c', 'import sys; print(sys.version.replace("\\n", " "))'])?.trim();
  if (!version) throw new ProvisionError(`${what}: ${BASE_PYTHON} not found or not runnable; install Python 3.11+`);
  const requirements = readFileSync(requirementsFile);
  const want = { requirements_sha256: createHash('sha256').update(requirements).digest('hex'), python: version, kernel: KERNEL_DISPLAY_NAME };

  let stamp = null;
  try {
    stamp = JSON.parse(readFileSync(stampFile, 'utf8'));
  } catch {
    // no stamp (new or half-made venv): install below
  }
  const usable = existsSync(python) && existsSync(path.join(venv, 'pyvenv.cfg'));
  if (usable && stamp?.requirements_sha256 === want.requirements_sha256 && stamp?.python === want.python && stamp?.kernel === want.kernel && existsSync(kernelJson)) {
    log(`${what}: ${path.relative(ROOT, venv)} up to date (Python ${version.split(' ')[0]}, requirements ${want.requirements_sha256.slice(0, 12)})`);
    return;
  }

  if (!usable || (stamp && stamp.python !== want.python)) {
    // A venv made by another Python (or half-made) cannot be repaired in place: make it anew.
    if (existsSync(venv)) log(`${what}: ${!usable ? 'incomplete' : `made with Python ${stamp.python.split(' ')[0]}`}; recreating`);
    rmSync(venv, { recursive: true, force: true });
    sh(BASE_PYTHON, ['-m', 'venv', venv], { what });
  } else {
    log(`${what}: requirements changed; updating`);
  }
  notice(`${what}: installing ${path.relative(ROOT, requirementsFile)} into ${path.relative(ROOT, venv)} (pip, a few minutes the first time)`);
  // The repo's package.json says "type": "module"; node tools run from inside the venv (jupyter_builder's
  // yarn.js) must stay CommonJS (toolchain.md §7).
  writeFileSync(path.join(venv, 'package.json'), '{"type":"commonjs"}\n');
  rmSync(stampFile, { force: true });
  sh(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '-r', requirementsFile], { what });
  sh(python, ['-m', 'ipykernel', 'install', '--sys-prefix', '--name', 'python3', '--display-name', KERNEL_DISPLAY_NAME], { what });
  if (!existsSync(kernelJson)) throw new ProvisionError(`${what}: ipykernel install left no kernelspec at ${kernelJson}`);
  writeFileSync(stampFile, JSON.stringify(want, null, 2) + '\n');
  log(`${what}: ready (${path.relative(ROOT, python)})`);
}

export function ensureVenv() {
  ensurePinnedVenv(VENV, REQUIREMENTS, 'venv');
}

/**
 * The notebook front ends besides JupyterLab that render anywidgets, each where a user gets it
 * from PyPI: Notebook 7 (which needs a newer JupyterLab than the test venv's pinned one), Voilà and
 * marimo, with anywidget and ipykernel (scripts/front-ends-requirements.txt; issue 42,
 * test/e2e/kernel-widgets.test.ts).
 */
export function ensureFrontEnds() {
  ensurePinnedVenv(FRONT_ENDS, FRONT_ENDS_REQUIREMENTS, 'front-ends');
  return { PORTICO_FRONT_ENDS_PYTHON: FRONT_ENDS_PYTHON };
}

/**
 * The newest JupyterLab 4 from PyPI in its own venv, with ipykernel: what a user gets today from
 * docs/clients/jupyterlab.md's `pip install 'jupyterlab>=4,<5'`. pip asks PyPI for newer releases when the venv is
 * made, when the requirements file changes, and otherwise once a day; the stamp records what it found.
 */
export function ensureLabNewest() {
  const env = { PORTICO_LAB_NEWEST_PYTHON: LAB_NEWEST_PYTHON };
  const version = capture(BASE_PYTHON, ['-c', 'import sys; print(sys.version.replace("\\n", " "))'])?.trim();
  if (!version) throw new ProvisionError(`lab-newest: ${BASE_PYTHON} not found or not runnable; install Python 3.11+`);
  const sha = createHash('sha256').update(readFileSync(LAB_NEWEST_REQUIREMENTS)).digest('hex');
  const stampFile = path.join(LAB_NEWEST, '.portico-provision.json');
  let stamp = null;
  try {
    stamp = JSON.parse(readFileSync(stampFile, 'utf8'));
  } catch {
    // no stamp: install below
  }
  const usable = existsSync(LAB_NEWEST_PYTHON) && existsSync(path.join(LAB_NEWEST, 'pyvenv.cfg'));
  const current = usable && stamp?.requirements_sha256 === sha && stamp?.python === version;
  const age = Date.now() - Date.parse(stamp?.checked_at ?? '');
  if (current && age >= 0 && age < LAB_NEWEST_RECHECK_MS) {
    log(`lab-newest: ${path.relative(ROOT, LAB_NEWEST)} has JupyterLab ${stamp.jupyterlab} (PyPI checked ${stamp.checked_at})`);
    return env;
  }
  if (!usable || (stamp && stamp.python !== version)) {
    rmSync(LAB_NEWEST, { recursive: true, force: true });
    sh(BASE_PYTHON, ['-m', 'venv', LAB_NEWEST], { what: 'lab-newest' });
  }
  writeFileSync(path.join(LAB_NEWEST, 'package.json'), '{"type":"commonjs"}\n');
  notice(`lab-newest: looking for the newest JupyterLab 4 on PyPI for ${path.relative(ROOT, LAB_NEWEST)} (pip)`);
  const pip = ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--upgrade', '--upgrade-strategy', 'eager', '-r', LAB_NEWEST_REQUIREMENTS];
  try {
    sh(LAB_NEWEST_PYTHON, pip, { what: 'lab-newest' });
  } catch (err) {
    // Only the daily look for a newer release failed (PyPI unreachable): keep the JupyterLab found
    // before, and look again next time.
    if (!current) throw err;
    notice(`lab-newest: ${err.message}; keeping JupyterLab ${stamp.jupyterlab} (found ${stamp.checked_at})`);
    return env;
  }
  rmSync(stampFile, { force: true });
  sh(LAB_NEWEST_PYTHON, ['-m', 'ipykernel', 'install', '--sys-prefix', '--name', 'python3', '--display-name', KERNEL_DISPLAY_NAME], { what: 'lab-newest' });
  const jupyterlab = capture(LAB_NEWEST_PYTHON, ['-c', 'import jupyterlab; print(jupyterlab.__version__)'])?.trim();
  if (!jupyterlab) throw new ProvisionError(`lab-newest: pip finished but ${path.relative(ROOT, LAB_NEWEST_PYTHON)} cannot import jupyterlab`);
  writeFileSync(stampFile, JSON.stringify({ requirements_sha256: sha, python: version, jupyterlab, checked_at: new Date().toISOString() }, null, 2) + '\n');
  log(`lab-newest: JupyterLab ${jupyterlab} (${path.relative(ROOT, LAB_NEWEST_PYTHON)})`);
  return env;
}

/**
 * Provisions everything; never throws. Returns the environment for the tests and the reasons for
 * any part that could not be provisioned (empty when all is well).
 */
export function provision({ logFd: fd = null } = {}) {
  setLogFd(fd);
  try {
    const started = Date.now();
    const errors = [];
    const env = { PORTICO_TEST_PYTHON: VENV_PYTHON, PORTICO_CHROMIUM: CHROMIUM, PORTICO_NGINX: NGINX };
    for (const step of [ensureChromium, ensureNginx, ensureVenv, ensureLabNewest, ensureFrontEnds, ensureDocsSite, ensurePostgres, ensureSlurm]) {
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
  } finally {
    setLogFd(null);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { env, errors } = provision();
  for (const [name, value] of Object.entries(env)) log(`export ${name}=${value}`);
  process.exitCode = errors.length ? 1 : 0;
}
