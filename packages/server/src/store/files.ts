/**
 * Small durable-file helpers for the store: atomic writes (temp file, fsync, rename, fsync of the
 * directory), the per-interface record file that `reindex` rebuilds from, and the lock that keeps
 * one process at a time writing a project's index.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, realpath, rename, rm, unlink } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LIMITS } from '../config/constants.js';
import { PorticoError } from '../errors.js';
import { makeOnThread } from './record-file-thread.js';
import { upgradeRecord } from './record-upgrade.js';
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

/** Where an atomic write of `file` puts its content first: a dot name, since a crash may leave it behind and listings skip dotfiles. */
const tempBeside = (file: string) => path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);

/** Writes a file so that readers and crashes see the old or the new content, never a mix. */
export async function writeAtomic(file: string, data: string | Buffer, { durable = true } = {}): Promise<void> {
  const tmp = tempBeside(file);
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

/** Throws `invalid_argument` unless `uuid` can name an interface directory (isSafeName). */
export function checkSafeName(uuid: string): void {
  if (!isSafeName(uuid)) throw new PorticoError('invalid_argument', `uuid '${uuid}' must be 1-128 of A-Z a-z 0-9 _ . -`);
}

export function interfaceDir(project: string, uuid: string): string {
  checkSafeName(uuid);
  return path.join(project, STORE_DIR, INTERFACES_DIR, uuid);
}

/**
 * Writes the record file an interface directory carries (so the directory can travel and be
 * reindexed): `text` is the record's compact JSON (record-json.ts), on one line. Files written
 * indented by earlier gateways read the same (readRecordFile).
 */
export async function writeRecordFile(project: string, uuid: string, text: string): Promise<void> {
  const dir = interfaceDir(project, uuid);
  await mkdir(dir, { recursive: true });
  // Not fsync'd: the journal is the durable copy; this one is for reindex and for travel.
  await writeAtomic(path.join(dir, RECORD_FILE), `${text}\n`, { durable: false });
}

/**
 * writeRecordFile for the record a create just made, the fast way: on the record-file thread
 * (record-file-thread.ts), many creates' files per hand-off, its folder made there (not
 * `recursive`) and, when that made it, the file written straight into it, without the temporary
 * name and the rename: nobody else writes into a folder this call just made, so the atomic replace
 * guards nothing there. Every other case (the interfaces folder not made yet, a folder already
 * there, as one with data a deleted record left or one copied in, the thread not up yet,
 * lagging or lost) goes the reference way, writeRecordFile. Both leave the same folder and file, or
 * fail with the same code. True when the folder was made here, so that nothing was in it before
 * (the record file thread made it); false when it went the reference way, which does not say.
 */
export async function writeNewRecordFile(project: string, uuid: string, text: string): Promise<boolean> {
  const dir = interfaceDir(project, uuid);
  const outcome = await makeOnThread(dir, path.join(dir, RECORD_FILE), `${text}\n`);
  if (outcome === true) return true;
  if (outcome !== false) throw Object.assign(new Error(outcome.message), { code: outcome.code });
  await writeRecordFile(project, uuid, text);
  return false;
}

/** The records whose create made their folder just now (writeNewRecordFile answered true). */
const inFreshFolders = new WeakSet<object>();

/** Notes that `record`'s create made its folder: nothing else (no cached marker, no data) is in it. */
export function noteFreshFolder(record: object): void {
  inFreshFolders.add(record);
}

/** Whether `record` is one whose create made its folder just now (noteFreshFolder). */
export function madeInFreshFolder(record: object): boolean {
  return inFreshFolders.has(record);
}

export async function removeInterfaceDir(project: string, uuid: string): Promise<void> {
  await rm(interfaceDir(project, uuid), { recursive: true, force: true });
}

export async function readRecordFile(dir: string): Promise<InterfaceRecord | undefined> {
  try {
    const record = JSON.parse(await readFile(path.join(dir, RECORD_FILE), 'utf8')) as InterfaceRecord;
    if (typeof record?.uuid !== 'string' || typeof record.module !== 'string') return undefined;
    // Written by an earlier gateway: read as this one means it.
    upgradeRecord(record);
    return record;
  } catch {
    return undefined;
  }
}

/** Every record file under a project's interface directories (what `portico reindex` rebuilds from). */
export async function readRecordFiles(project: string): Promise<InterfaceRecord[]> {
  const root = path.join(project, STORE_DIR, INTERFACES_DIR);
  const names = await readdir(root).catch(() => [] as string[]);
  const found = await Promise.all(names.map((name) => readRecordFile(path.join(root, name))));
  return found.filter((record): record is InterfaceRecord => record !== undefined);
}

/**
 * The single-writer guard of a project's index, released by the kernel the moment its holder dies
 * (killed, crashed, a zombie its parent has not reaped yet), never inferred from a pid: the holder
 * listens on a unix socket named after the index directory. On Linux that is an abstract socket
 * (no file: binding it is atomic, and it vanishes with the process); elsewhere a socket file in the
 * temp folder whose stale copy is recognized by a refused connect. Whoever cannot bind asks the
 * holder, which answers with its pid and URL, so the refusal can say how to reach it.
 */
const heldLocks = new Set<string>();

/** What the holder of a lock tells a process it refuses: where the index is served, and whether it is stopping. */
export interface LockHolder {
  url?: string | undefined;
  /** Set once a shutdown began: a process that asks then waits for the lock instead of giving up. */
  stopping?: boolean;
}

interface HolderAnswer {
  pid: number;
  url: string | null;
  stopping?: boolean;
}

function lockAddress(dir: string): string {
  const id = createHash('sha256').update(dir).digest('hex').slice(0, 32);
  return process.platform === 'linux' ? `\0portico-index-${id}` : path.join(tmpdir(), `portico-index-${id}.sock`);
}

/** The holder's answer (pid and URL), or undefined when nothing listens there any more. */
function askHolder(address: string): Promise<HolderAnswer | undefined> {
  return new Promise((resolve) => {
    let text = '';
    const socket = connect(address);
    const done = (value: HolderAnswer | undefined) => {
      socket.destroy();
      resolve(value);
    };
    socket.setTimeout(LIMITS.indexLockProbeMs, () => done({ pid: 0, url: null })); // alive but silent: still held
    socket.on('data', (d) => (text += d));
    socket.on('end', () => {
      try {
        done(JSON.parse(text));
      } catch {
        done({ pid: 0, url: null });
      }
    });
    socket.on('error', () => done(undefined));
  });
}

/** Who holds the lock of `dir` now (its pid, and its URL when a gateway does), or undefined when no process does. */
export async function lockHolder(dir: string): Promise<HolderAnswer | undefined> {
  const real = await realpath(dir).catch(() => undefined);
  return real === undefined ? undefined : askHolder(lockAddress(real));
}

function listen(server: Server, address: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(address, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/**
 * Takes the index lock of `dir` for this process; refuses at once while another live process
 * serves from it, naming how to reach that one (a holder that is shutting down is waited for,
 * up to LIMITS.indexLockWaitMs). Resolves to the release function.
 */
export async function acquireLock(dir: string, holder: LockHolder = {}): Promise<() => Promise<void>> {
  const address = lockAddress(await realpath(dir));
  if (heldLocks.has(address)) throw new PorticoError('conflict', `The index at ${dir} is already open in this process`);
  // A holder that is stopping (flushing its index) is waited for: a restart right after SIGTERM
  // then succeeds as soon as the old gateway is done, within a bound.
  const waitUntil = Date.now() + LIMITS.indexLockWaitMs;
  for (let attempt = 0; attempt < 3; attempt++) {
    const server = createServer((socket) => socket.end(`${JSON.stringify({ pid: process.pid, url: holder.url ?? null, stopping: holder.stopping === true })}\n`));
    try {
      await listen(server, address);
      server.unref(); // the lock never keeps a process alive
      heldLocks.add(address);
      return async () => {
        heldLocks.delete(address);
        await new Promise<void>((resolve) => server.close(() => resolve()));
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      const answer = await askHolder(address);
      if (answer?.stopping && Date.now() < waitUntil) {
        await new Promise((resolve) => setTimeout(resolve, LIMITS.indexLockRetryMs));
        attempt -= 1;
        continue;
      }
      const holder = answer;
      if (holder) {
        const who = holder.url ? `the gateway at ${holder.url}` : 'another process (portico get or reindex?)';
        const reach = holder.url ? `use it (portico get --url ${holder.url}, or its REST API)` : 'wait for it to finish';
        throw new PorticoError('conflict', `The index at ${dir} is in use by ${who}${holder.pid ? `, process ${holder.pid}` : ''}: ${reach}, or stop it first`);
      }
      // Nothing answers: the holder just died (an abstract name is free again) or left a stale socket file.
      if (!address.startsWith('\0')) await unlink(address).catch(() => undefined);
    }
  }
  throw new PorticoError('conflict', `Could not lock the index at ${dir}`);
}
