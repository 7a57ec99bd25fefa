/**
 * Commands as a user runs them from a terminal, in a process group of their own: what they print,
 * the processes they started (read from /proc), and whether any of them is still there.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { stripVTControlCharacters } from 'node:util';

export interface Launched {
  child: ChildProcess;
  /** The process group: every process the command started, however deep. */
  group: number;
  out: () => string;
  err: () => string;
  exited: Promise<number | null>;
  /** Resolves once stdout, as a terminal shows it (colours stripped: tools colour under CI=true), matches `pattern`; rejects if the command exits first. */
  printed(pattern: RegExp): Promise<RegExpExecArray>;
}

/** Runs `command` in a new process group (like a terminal's job), stdout and stderr kept. */
export function launch(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Launched {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    group: child.pid!,
    out: () => stdout,
    err: () => stderr,
    exited,
    printed: (pattern) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(stripVTControlCharacters(stdout));
          if (match) resolve(match);
        };
        child.stdout!.on('data', check);
        check();
        void exited.then(() => {
          check();
          reject(new Error(`exited before printing ${pattern}:\n${stdout}\n${stderr}`));
        });
      }),
  };
}

export interface Proc {
  pid: number;
  ppid: number;
  command: string;
}

/** The live (not zombie) processes of process group `group`. */
export function members(group: number): Proc[] {
  return live((_ppid, pgrp) => pgrp === group);
}

/** The live children of process `parent` (whatever their group: a worker has a session of its own). */
export function children(parent: number): Proc[] {
  return live((ppid) => ppid === parent);
}

/** Resolves once process `pid` is gone (or a zombie). */
export async function processGone(pid: number): Promise<void> {
  const alive = () => live(() => true).some((p) => p.pid === pid);
  while (alive()) await new Promise((resolve) => setTimeout(resolve, 100));
}

function live(keep: (ppid: number, pgrp: number) => boolean): Proc[] {
  const found: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid pgrp …: comm may hold spaces and parentheses, so split after the last ')'
      const [state, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (!keep(Number(ppid), Number(pgrp)) || state === 'Z') continue;
      const command = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
      found.push({ pid: Number(name), ppid: Number(ppid), command });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Resolves once no process of `group` is left (the test's timeout bounds the wait). */
export async function groupGone(group: number): Promise<void> {
  while (members(group).length) await new Promise((resolve) => setTimeout(resolve, 100));
}

/** Whether `port` on 127.0.0.1 can be listened on now. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** A port free now, on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Ends whatever a failed test left of `group` (only processes this test started). */
export function killGroup(group: number): void {
  try {
    process.kill(-group, 'SIGKILL');
  } catch {
    // already gone
  }
}

const PORTICO = new URL('../../packages/server/bin/portico.js', import.meta.url).pathname;

/**
 * The built `portico` command with `args` and exactly `env`, stdout and stderr kept; `ready`
 * resolves once stdout matches `untilOutput` (at once without one) and rejects if it exits first.
 */
export function runPortico(args: string[], env: NodeJS.ProcessEnv = process.env, untilOutput?: RegExp, cwd?: string) {
  const child = spawn(process.execPath, [PORTICO, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'], cwd });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const ready = untilOutput
    ? new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', () => untilOutput.test(stdout) && resolve());
        void exited.then(() => reject(new Error(`exited early: ${stdout}${stderr}`)));
      })
    : Promise.resolve();
  return { child, exited, ready, out: () => stdout, err: () => stderr };
}
