/**
 * A port the gateway cannot take: checked before anything slow starts (the index, the workers),
 * and refused with one sentence that names the port, the process holding it when it can be found,
 * and what to do instead.
 */
import { readdir, readFile, readlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { PorticoError } from '../errors.js';

/** Characters of the holder's command line a refusal repeats. */
const COMMAND_SHOWN = 120;

/** A process listening on a port: its pid and command line. */
export interface PortHolder {
  pid: number;
  command: string;
}

/**
 * The process listening on TCP `port` (any address), found through /proc: the socket's inode in
 * /proc/net/tcp and tcp6, then the process with a descriptor on it. Best effort: undefined off
 * Linux, or when the holder belongs to a user whose descriptors this process may not read.
 */
export async function portHolder(port: number): Promise<PortHolder | undefined> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(table, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      const fields = line.trim().split(/\s+/);
      const local = fields[1]?.split(':')[1];
      if (local && parseInt(local, 16) === port && fields[3] === '0A' /* LISTEN */ && fields[9] && fields[9] !== '0') inodes.add(`socket:[${fields[9]}]`);
    }
  }
  if (!inodes.size) return undefined;
  const pids = (await readdir('/proc').catch(() => [] as string[])).filter((name) => /^\d+$/.test(name));
  for (const pid of pids) {
    const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
    for (const fd of fds) {
      if (!inodes.has(await readlink(`/proc/${pid}/fd/${fd}`).catch(() => ''))) continue;
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      const command = cmdline.split('\0').filter(Boolean).join(' ');
      return { pid: Number(pid), command: command.length > COMMAND_SHOWN ? `${command.slice(0, COMMAND_SHOWN)}…` : command };
    }
  }
  return undefined;
}

/**
 * The refusal of a taken port (`conflict`): which port, who holds it when that can be found, and
 * what to do.
 *
 * @example "Port 8000 on 127.0.0.1 is already in use by process 4242 (node bin/portico.js serve): stop it, or pick another port with --port N (--port 0 picks a free one)"
 */
export async function portInUse(host: string, port: number): Promise<PorticoError> {
  const holder = await portHolder(port);
  const who = holder ? `process ${holder.pid}${holder.command ? ` (${holder.command})` : ''}` : 'another process';
  return new PorticoError('conflict', `Port ${port} on ${host} is already in use by ${who}: stop it, or pick another port with --port N (--port 0 picks a free one)`);
}

/**
 * Refuses at once when `host:port` is taken, before the slow part of a start. Port 0 (any free
 * port) always succeeds. Other listen failures are left for the real listen to report.
 */
export async function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  const failure = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    probe.once('error', resolve);
    probe.listen({ port, host, exclusive: true }, () => resolve(undefined));
  });
  if (!failure) {
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    return;
  }
  if (failure.code === 'EADDRINUSE') throw await portInUse(host, port);
}
