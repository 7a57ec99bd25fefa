/**
 * The staging folder of uploads (`<project>/.portico/uploads/`): temp files and append markers
 * while uploads run, named after the gateway that owns them (which renews their mtime: the lease
 * other hosts go by), and their recovery when a gateway opens the project (service/uploads.ts
 * says how uploads use them). A storage concern: the project registry recovers it on open
 * without a service.
 */
import { randomBytes } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import { lstat, open, readdir, readFile, unlink, utimes } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { LIMITS } from '../config/constants.js';
import { STORE_DIR, syncPath } from './files.js';

export const stagingDir = (project: string) => path.join(project, STORE_DIR, 'uploads');

/** This process as staging entries name their owner; the pid namespace tells containers of one host apart. */
const OWNER_HOST = hostname().replace(/[^A-Za-z0-9.-]/g, '_') || 'unknown';
const OWNER_PID_NS = (() => {
  try {
    return /\d+/.exec(readlinkSync('/proc/self/ns/pid'))?.[0] ?? '0';
  } catch {
    return '0'; // not Linux: every pid is one of this host's
  }
})();
const ENTRY = /^(\d+)-(\d+)@(.+)\.[0-9a-f]{12}\.(upload|append|write)$/;

type EntryKind = 'upload' | 'append' | 'write';

export function entryIn(staging: string, kind: EntryKind): string {
  return path.join(staging, `${process.pid}-${OWNER_PID_NS}@${OWNER_HOST}.${randomBytes(6).toString('hex')}.${kind}`);
}

/** Staging entries of this process's uploads in progress: their mtime is renewed, so other gateways see them alive. */
const live = new Set<string>();
let renewer: NodeJS.Timeout | undefined;

export function hold(entry: string): void {
  live.add(entry);
  if (renewer) return;
  renewer = setInterval(() => {
    const now = new Date();
    for (const held of live) void utimes(held, now, now).catch(() => undefined);
  }, LIMITS.uploadLeaseMs / 4);
  renewer.unref();
}

export function letGo(entry: string): void {
  live.delete(entry);
  if (live.size || !renewer) return;
  clearInterval(renewer);
  renewer = undefined;
}

/** A marker's content: the file it is about (relative to the staging folder) and, for an append, what to cut back to. */
export interface Marker {
  file: string;
  size?: number;
  dev?: string;
  ino?: string;
}

/** Writes a marker durably (its content and its name) before the upload touches what it names. */
export async function writeMarker(staging: string, entry: string, marker: Marker): Promise<void> {
  const handle = await open(entry, 'wx');
  try {
    await handle.writeFile(JSON.stringify(marker));
    await handle.sync();
  } finally {
    await handle.close();
  }
  await syncPath(staging);
}

/** A marker's content; undefined when torn (its gateway died writing it, before touching anything). */
async function readMarker(entry: string): Promise<Marker | undefined> {
  try {
    const marker = JSON.parse(await readFile(entry, 'utf8')) as Marker;
    return typeof marker?.file === 'string' ? marker : undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code) throw err; // unreadable now: kept for the next start
    return undefined;
  }
}

/** Whether process `pid` of this host runs (a zombie, dead but not yet reaped, does not). */
async function running(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
}

/** Whether a staging entry belongs to an upload no gateway is running any more. */
async function abandoned(entry: string, exclusive: boolean): Promise<boolean> {
  const owner = ENTRY.exec(path.basename(entry));
  if (!owner || live.has(entry)) return false;
  if (exclusive) return true;
  const pid = Number(owner[1]);
  if (owner[3] === OWNER_HOST && owner[2] === OWNER_PID_NS && pid > 0) {
    // This process's own pid is a previous gateway's that had it (the project opens before this one uploads).
    if (pid === process.pid || !(await running(pid))) return true;
  }
  const info = await lstat(entry).catch(() => undefined);
  return info !== undefined && Date.now() - info.mtimeMs > LIMITS.uploadLeaseMs;
}

/** Cuts an append a dead gateway began back to the size its marker recorded. */
async function undoAppend(staging: string, entry: string): Promise<void> {
  const marker = await readMarker(entry);
  if (marker?.size === undefined) return;
  const handle = await open(path.resolve(staging, marker.file), 'r+').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined; // removed since: nothing to cut
    throw err;
  });
  if (!handle) return;
  try {
    const info = await handle.stat({ bigint: true });
    // Only the file the marker names (a write may have replaced it since), and only a longer one.
    if (String(info.dev) === marker.dev && String(info.ino) === marker.ino && info.size > BigInt(marker.size)) {
      await handle.truncate(marker.size);
      await handle.sync();
    }
  } finally {
    await handle.close();
  }
}

/** Removes the temp file beside its target that a dead gateway's write was filling. */
async function undoWrite(staging: string, entry: string): Promise<void> {
  const marker = await readMarker(entry);
  if (!marker?.file.endsWith('.upload')) return;
  await unlink(path.resolve(staging, marker.file)).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

/**
 * Undoes what uploads of gateways that are gone left in `project`; run when a gateway opens it,
 * before it takes uploads. Temp files are removed; appends are cut back to the size recorded
 * before their first byte. An entry is a gone gateway's when `exclusive` (this process holds the
 * project's index lock: no other gateway writes here), when its owner is a dead process of this
 * host, or when its lease ran out (not renewed for LIMITS.uploadLeaseMs: a gateway elsewhere,
 * sharing the folder through PostgreSQL). Best effort: what cannot be undone now stays for the next
 * start. Costs one readdir of the staging folder, whatever the number of interfaces.
 */
export async function recoverUploads(project: string, { exclusive }: { exclusive: boolean }): Promise<void> {
  const staging = stagingDir(project);
  let undone = false;
  for (const name of await readdir(staging).catch(() => [] as string[])) {
    const entry = path.join(staging, name);
    try {
      if (!(await abandoned(entry, exclusive))) continue;
      if (name.endsWith('.append')) await undoAppend(staging, entry);
      else if (name.endsWith('.write')) await undoWrite(staging, entry);
      await unlink(entry);
      undone = true;
    } catch {
      // left for the next start
    }
  }
  if (undone) await syncPath(staging).catch(() => undefined);
}
