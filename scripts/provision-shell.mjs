// How provisioning runs commands and says what it does (scripts/provision*.mjs): its log (the
// terminal, or npm test's log file), apt-get as root or through sudo, and the error that names a
// step that could not be done.
import { spawnSync } from 'node:child_process';
import { existsSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Where provisioning writes: null for the terminal, else the file descriptor of npm test's log. */
let logFd = null;

/** Sends what follows to `fd` (npm test's log), or to the terminal again with null. */
export function setLogFd(fd) {
  logFd = fd;
}

export const log = (line) => {
  if (logFd === null) console.log(`provision: ${line}`);
  else writeSync(logFd, `provision: ${line}\n`);
};

/** A line for the terminal even when the rest goes to the log: a slow step starting. */
export const notice = (line) => {
  log(line);
  if (logFd !== null) console.log(`provision: ${line}`);
};

/** stdio for a command provisioning runs: its output where provisioning writes. */
export const commandStdio = () => ['ignore', logFd ?? 'inherit', logFd ?? 'inherit'];

export class ProvisionError extends Error {}

/** Runs a command with its output shown (or logged); throws a ProvisionError naming it when it fails. */
export function sh(cmd, args, { what, ...opts } = {}) {
  log(`$ ${[cmd, ...args].join(' ')}`);
  const res = spawnSync(cmd, args, { cwd: ROOT, stdio: commandStdio(), ...opts });
  if (res.error) throw new ProvisionError(`${what ?? cmd}: cannot run ${cmd}: ${res.error.message}`);
  if (res.status !== 0) throw new ProvisionError(`${what ?? cmd}: \`${[cmd, ...args].join(' ')}\` exited with ${res.status ?? res.signal}`);
}

/** Runs a command quietly and returns its stdout, or null when it cannot run or fails. */
export function capture(cmd, args) {
  const res = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return res.status === 0 ? res.stdout : null;
}

export function onPath(cmd) {
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
