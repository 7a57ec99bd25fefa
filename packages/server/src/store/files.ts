/**
 * Small durable-file helpers for the store: atomic writes (temp file, fsync, rename, fsync of the
 * directory), the per-interface record file that `reindex` rebuilds from, and the lock that keeps
 * one process at a time writing a project's index.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PorticoError } from '../errors.js';
import type { InterfaceRecord } from './store.js';

/** The store's folder inside a project. */
export const STORE_DIR = '.portico';
/** Where an interface's data (and its record file) lives: `<project>/.portico/interfaces/<uuid>/`. */
export const INTERFACES_DIR = 'interfaces';
export const RECORD_FILE = 'interface.json';

/**
 * fsyncs a file's content, or (for a directory) the entries created, renamed or unlinked in it.
 */
export async function syncPath(file: string): Promise<void> {
  const handle = await open(file, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes a file so that readers and crashes see the old or the new content, never a mix. */
export async function writeAtomic(file: string, data: string | Buffer, { durable = true } = {}): Promise<void> {
  // A dot name: a crash may leave it behind, and listings skip dotfiles.
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(tmp, 'w');
  try {
    await handle.writeFile(data);
    if (durable) await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(tmp, file);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  if (durable) await syncPath(path.dirname(file));
}

/**
 * A uuid becomes a directory name, and clients may choose their own uuid: only plain names
 * (no separators, no dot segments) are accepted for the file system.
 */
export function isSafeName(uuid: string): boolean {
  return /^[A-Za-z0-9_.-]{1,128}$/.test(uuid) && uuid !== '.' && uuid !== '..';
}

export function interfaceDir(project: string, uuid: string): string {
  if (!isSafeName(uuid)) throw new PorticoError('invalid_argument', `uuid '${uuid}' must be 1-128 of A-Z a-z 0-9 _ . -`);
  return path.join(project, STORE_DIR, INTERFACES_DIR, uuid);
}

/** Writes the record file an interface directory carries (so the directory can travel and be reindexed). */
export async function writeRecordFile(project: string, record: InterfaceRecord): Promise<void> {
  const dir = interfaceDir(project, record.uuid);
  await mkdir(dir, { recursive: true });
  // Not fsync'd: the journal is the durable copy; this one is for reindex and for travel.
  await writeAtomic(path.join(dir, RECORD_FILE), `${JSON.stringify(record, null, 2)}\n`, { durable: false });
}

export async function removeInterfaceDir(project: string, uuid: string): Promise<void> {
  await rm(interfaceDir(project, uuid), { recursive: true, force: true });
}

export async function readRecordFile(dir: string): Promise<InterfaceRecord | undefined> {
  try {
    const record = JSON.parse(await readFile(path.join(dir, RECORD_FILE), 'utf8')) as InterfaceRecord;
    return typeof record?.uuid === 'string' && typeof record.module === 'string' ? record : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Takes the project's index lock for this process: refuses when another live process holds it,
 * takes it over from a dead one (a crashed gateway must not lock its project forever).
 */
export async function acquireLock(file: string): Promise<() => Promise<void>> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await writeFile(file, `${process.pid}\n`, { flag: 'wx' });
      return async () => {
        await unlink(file).catch(() => undefined);
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number((await readFile(file, 'utf8').catch(() => '')).trim());
      if (pid === process.pid || (pid > 0 && isAlive(pid))) {
        throw new PorticoError(
          'conflict',
          pid === process.pid
            ? `The index at ${path.dirname(file)} is already open in this process`
            : `The index at ${path.dirname(file)} is in use by process ${pid} (a running gateway?); use its REST API instead`,
        );
      }
      await unlink(file).catch(() => undefined); // stale: its owner died
    }
  }
  throw new PorticoError('conflict', `Could not lock the index at ${path.dirname(file)}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
