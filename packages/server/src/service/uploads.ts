/**
 * Binary uploads into an interface's data folder, transport-free. Bytes stream to disk as they
 * arrive (written in order, batched with writev), with bounded memory: `buffered` tells the
 * transport when to stop reading its socket. Nothing is ever half-done under the final name, and
 * nothing an upload leaves while it runs outlives a crash of its gateway:
 *
 * - `write` streams into a temp file in the project's staging folder (`.portico/uploads/`, on the
 *   same file system, so the rename stays atomic); `finish` fsyncs it, renames it over the target
 *   and fsyncs the target's folder. An aborted upload only removes the temp file.
 * - `append` to an existing file first records the file's size (and identity) in a marker in the
 *   staging folder, fsynced before the first byte goes to the end of the file; an aborted upload
 *   truncates it back to that size; `finish` fsyncs the file, then removes the marker. O(1)
 *   whatever the file's size. An append to a file that does not exist is a write.
 * - Whatever a killed gateway left is therefore in one folder: `recoverUploads` (store/upload-staging.ts), run when a
 *   gateway opens the project, removes the temp files and cuts the appends of gateways that are
 *   gone back to their recorded size (one readdir, however many interfaces the project has).
 *
 * Staging entries are named `<pid>-<pid namespace>@<host>.<random>.<kind>` after the gateway that
 * owns them, which renews their mtime while the upload lives (the lease other hosts go by). A
 * target on another file system than the staging folder gets its temp file beside it instead
 * (`.<name>.<random>.upload`), named by a `.write` entry in the staging folder.
 *
 * Paths are confined to the folder: plain relative segments only, intermediate symlinks and the
 * target itself followed only when they stay inside, the record file off limits.
 */
import { randomBytes } from 'node:crypto';
import { copyFile, lstat, mkdir, open, realpath, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { LIMITS } from '../config/constants.js';
import { PorticoError, toPorticoError } from '../errors.js';
import { RECORD_FILE, interfaceDir, syncPath } from '../store/files.js';
import { entryIn, hold, letGo, stagingDir, writeMarker } from '../store/upload-staging.js';
import type { RequestContext } from './context.js';
import { walkConfined } from '../source/confined-walk.js';
import { isWithin, plainSegments } from '../source/relative-path.js';

export type UploadMode = 'write' | 'append';

export interface UploadDone {
  /** The normalized path, relative to the interface folder. */
  path: string;
  bytes_written: number;
  mode: UploadMode;
}

/** Where an upload goes: the interface's folder, and the project's staging folder. */
export interface UploadPlace {
  /** The folder uploads of the interface land in (its `local_directory()`). */
  root: string;
  /** `<project>/.portico/uploads/`: temp files and append markers while uploads run. */
  staging: string;
}


/** Where uploads into interface `uuid` of the request's project go. */
export function uploadRoot(ctx: RequestContext, uuid: string): UploadPlace {
  return { root: interfaceDir(ctx.project.dir, uuid), staging: stagingDir(ctx.project.dir) };
}

/** Buffers handed to one writev (below every platform's IOV_MAX). */
const MAX_BATCH = 256;

/** Targets of uploads in progress, gateway-wide: two uploads never share a file. */
const active = new Set<string>();


/**
 * Checks `relative` and returns it normalized (`/`-separated segments). Backslashes count as
 * separators; absolute paths, drive letters, empty, `.` and `..` segments and NUL are refused.
 */
export function normalizeUploadPath(relative: string): string[] {
  const segments = plainSegments(relative, 'interface folder');
  if (segments.length === 1 && segments[0] === RECORD_FILE) {
    throw new PorticoError('forbidden', `'${RECORD_FILE}' is the interface's record file and cannot be uploaded to`);
  }
  return segments;
}

/**
 * Resolves the file an upload writes (source/confined-walk.ts), creating missing parent folders
 * one at a time so that a symlinked folder is checked before anything is created through it.
 */
async function confinedTarget(root: string, segments: string[], relative: string): Promise<string> {
  await mkdir(root, { recursive: true });
  const realRoot = await realpath(root);
  const escape = () => new PorticoError('forbidden', `Path '${relative}' leads outside the interface folder`);
  const { file, info } = await walkConfined(realRoot, segments, {
    create: true,
    linked: (real) => {
      if (!isWithin(real, realRoot)) throw escape();
    },
    broken: escape,
  });
  if (info && !info.isFile()) throw new PorticoError('conflict', `'${relative}' is not a regular file`);
  return file;
}

export interface UploadEvents {
  /** Largest upload, in bytes. */
  maxBytes: number;
  /** Queued bytes above which the transport should stop reading (see `overHighWater`). */
  highWater: number;
  /** The queue is below half the high-water mark (or the upload failed): read again if paused. Called often; must be idempotent. */
  onDrain: () => void;
  /** The upload failed (bad path, size bound, disk error) before or while bytes arrived; called once, after the rollback. */
  onFail: (error: PorticoError) => void;
}

interface Target {
  handle: FileHandle;
  /** The file the bytes go to (the temp file for `write`). */
  file: string;
  /** The final name. */
  final: string;
  /** The size an abort truncates `file` back to (an append); null when `file` is a temp file this upload made, which an abort removes. */
  baseSize: number | null;
  /** The project's staging folder, and this upload's entry in it: the temp file itself, or the marker naming what to undo. */
  staging: string;
  entry: string;
}

export class Upload {
  /** Bytes accepted so far (written or queued). */
  received = 0;
  private written = 0;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private writing = false;
  /** Bytes written since the last background flush started, and that flush while it runs. */
  private unsynced = 0;
  private syncing: Promise<void> | undefined;
  private target: Target | undefined;
  private readonly opened: Promise<void>;
  private failure: PorticoError | undefined;
  /** The rollback after the failure, once it is scheduled. */
  private undone: Promise<void> | undefined;
  private settled = false;
  private readonly idleWaiters: Array<() => void> = [];
  private readonly normalized: string;
  private lockKey: string | undefined;

  /**
   * Starts opening at once (`place` may still be on its way: the connect it depends on can be in
   * flight); bytes written before the file is open are queued in order.
   */
  constructor(
    place: Promise<UploadPlace>,
    relative: string | undefined,
    readonly mode: UploadMode,
    private readonly events: UploadEvents,
  ) {
    let segments: string[] = [];
    try {
      if (!relative) throw new PorticoError('invalid_argument', 'An upload needs a path: the file to write, relative to the interface folder');
      segments = normalizeUploadPath(relative);
    } catch (err) {
      this.fail(toPorticoError(err));
    }
    this.normalized = segments.join('/');
    // Refused already (bad path): the place is never used, and its failure (no connect yet) is not
    // this upload's to report, so it must not surface as an unhandled rejection.
    if (this.failure) place.catch(() => undefined);
    this.opened = this.failure ? Promise.resolve() : place.then((at) => this.open(at, segments, relative!)).then(
      (target) => {
        this.target = target;
        void this.pump();
      },
      (err) => this.fail(toPorticoError(err)),
    );
  }

  /** The path relative to the interface folder, normalized. */
  get path(): string {
    return this.normalized;
  }

  /** Bytes received but not yet on disk: the transport pauses reading above `highWater`. */
  get buffered(): number {
    return this.pendingBytes;
  }

  get overHighWater(): boolean {
    return this.pendingBytes > this.events.highWater;
  }

  /** The first error of this upload (it then discards further bytes), if any. */
  get error(): PorticoError | undefined {
    return this.failure;
  }

  /** Queues bytes (discarded once the upload failed). Past the size bound the upload fails. */
  write(chunk: Buffer): void {
    if (this.failure || this.settled) return;
    if (this.received + chunk.length > this.events.maxBytes) {
      return this.fail(new PorticoError('payload_too_large', `The upload exceeds the gateway's upload bound of ${this.events.maxBytes} bytes; nothing of it was kept`));
    }
    this.received += chunk.length;
    if (chunk.length === 0) return;
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    void this.pump();
  }

  /** Waits for every byte to reach disk, then makes the upload visible under its final name. */
  async finish(): Promise<UploadDone> {
    await this.opened;
    await this.idle();
    await this.syncing;
    if (this.failure) throw this.failure;
    const target = this.target!;
    this.settled = true;
    try {
      await target.handle.sync();
      if (target.baseSize !== null) {
        // The appended bytes are durable: the marker goes, durably, before chunk_done says so.
        await unlink(target.entry);
        await syncPath(target.staging);
        await target.handle.close();
      } else {
        await target.handle.close();
        await moveIntoPlace(target);
        await syncPath(path.dirname(target.final));
        if (target.entry !== target.file) await unlink(target.entry).catch(() => undefined);
      }
      letGo(target.entry);
    } catch (err) {
      await this.rollback();
      throw toPorticoError(err);
    } finally {
      this.unlock();
    }
    return { path: this.normalized, bytes_written: this.written, mode: this.mode };
  }

  /** Drops the upload: the target is left exactly as it was before chunk_start. */
  async abort(): Promise<void> {
    if (this.settled) return;
    this.fail(new PorticoError('cancelled', 'The upload was aborted'), false);
    await this.opened;
    await this.idle();
    await this.undone;
  }

  private async open(place: UploadPlace, segments: string[], relative: string): Promise<Target> {
    const final = await confinedTarget(place.root, segments, relative);
    if (active.has(final)) throw new PorticoError('conflict', `Another upload to '${relative}' is in progress`);
    active.add(final);
    this.lockKey = final;
    try {
      await mkdir(place.staging, { recursive: true });
      if (this.mode === 'append' && (await lstat(final).then(() => true, () => false))) return await openAppend(place.staging, final);
      const [staging, folder] = await Promise.all([stat(place.staging), stat(path.dirname(final))]);
      if (staging.dev !== folder.dev) return await openBeside(place.staging, final);
      const file = entryIn(place.staging, 'upload');
      const handle = await open(file, 'wx');
      hold(file);
      return { handle, file, final, baseSize: null, staging: place.staging, entry: file };
    } catch (err) {
      this.unlock();
      throw err;
    }
  }

  /** Writes queued bytes in order, as few system calls as the queue allows. */
  private async pump(): Promise<void> {
    if (this.writing || !this.target || this.failure) return;
    this.writing = true;
    try {
      while (this.pending.length && !this.failure) {
        const batch = this.pending.splice(0, MAX_BATCH);
        let size = 0;
        for (const b of batch) size += b.length;
        await writevAll(this.target.handle, batch, size);
        this.pendingBytes -= size;
        this.written += size;
        this.unsynced += size;
        if (this.unsynced >= LIMITS.uploadSyncEveryBytes && !this.syncing) this.flushInBackground(this.target.handle);
        // The transport may have paused at any point of this batch: it resumes (idempotently) once below half.
        if (this.pendingBytes <= this.events.highWater / 2) this.events.onDrain();
      }
    } catch (err) {
      this.fail(toPorticoError(err));
    } finally {
      this.writing = false;
      if (!this.pending.length || this.failure) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }

  /**
   * Starts an fdatasync while writes go on: the disk works during the transfer rather than all at
   * the end (the fsync before chunk_done took a fifth of a 1 GiB upload). Durability is unchanged:
   * chunk_done still waits for the final fsync.
   */
  private flushInBackground(handle: FileHandle): void {
    this.unsynced = 0;
    this.syncing = handle
      .datasync()
      .catch((err: unknown) => this.fail(toPorticoError(err)))
      .finally(() => {
        this.syncing = undefined;
      });
  }

  private idle(): Promise<void> {
    if (!this.writing && (!this.pending.length || this.failure || !this.target)) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Records the first failure, drops queued bytes and undoes what reached disk. */
  private fail(error: PorticoError, report = true): void {
    if (this.failure) return;
    this.failure = error;
    this.pending = [];
    this.pendingBytes = 0;
    this.events.onDrain();
    // Reported once the target is back as it was, so a client that sees the error sees no partial file.
    // `opened` is unset while the constructor itself fails (bad path): nothing to undo then.
    const undone = this.opened ? this.opened.then(() => this.idle()).then(() => this.rollback()) : Promise.resolve();
    this.undone = undone;
    if (report) void undone.then(() => this.events.onFail(error));
  }

  private async rollback(): Promise<void> {
    const target = this.target;
    if (!target) return;
    this.target = undefined;
    await this.syncing; // a background flush still holds the handle
    try {
      if (target.baseSize === null) {
        // The temp file of a write: remove it (and the marker naming it, when it lies beside the target).
        await target.handle.close().catch(() => undefined);
        await unlink(target.file).catch(() => undefined);
        if (target.entry !== target.file) await unlink(target.entry).catch(() => undefined);
      } else {
        await target.handle.truncate(target.baseSize).catch(() => undefined);
        await target.handle.sync().catch(() => undefined);
        await target.handle.close().catch(() => undefined);
        await unlink(target.entry).catch(() => undefined);
        await syncPath(target.staging).catch(() => undefined);
      }
    } finally {
      letGo(target.entry);
      this.unlock();
    }
  }

  private unlock(): void {
    if (this.lockKey) active.delete(this.lockKey);
    this.lockKey = undefined;
  }
}

/** An append to an existing file: its size and identity are on disk in a marker before any byte is. */
async function openAppend(staging: string, final: string): Promise<Target> {
  const handle = await open(final, 'a');
  const entry = entryIn(staging, 'append');
  try {
    const info = await handle.stat({ bigint: true });
    await writeMarker(staging, entry, { file: path.relative(staging, final), size: Number(info.size), dev: String(info.dev), ino: String(info.ino) });
    hold(entry);
    return { handle, file: final, final, baseSize: Number(info.size), staging, entry };
  } catch (err) {
    await handle.close().catch(() => undefined);
    await unlink(entry).catch(() => undefined);
    throw err;
  }
}

/** A write's temp file beside its target (a rename cannot leave the target's file system), named first by a marker. */
async function openBeside(staging: string, final: string): Promise<Target> {
  const entry = entryIn(staging, 'write');
  const file = path.join(path.dirname(final), `.${path.basename(final)}.${randomBytes(6).toString('hex')}.upload`);
  await writeMarker(staging, entry, { file: path.relative(staging, file) });
  try {
    const handle = await open(file, 'wx');
    hold(entry);
    return { handle, file, final, baseSize: null, staging, entry };
  } catch (err) {
    await unlink(entry).catch(() => undefined);
    throw err;
  }
}

/**
 * Renames a write's temp file over its target. A staged file on the same device but another mount
 * (a bind mount of the interfaces folder) cannot be renamed there: it is copied once beside the
 * target, and that copy renamed.
 */
async function moveIntoPlace(target: Target): Promise<void> {
  try {
    await rename(target.file, target.final);
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
  }
  const beside = await openBeside(target.staging, target.final);
  try {
    await beside.handle.close();
    await copyFile(target.file, beside.file);
    await syncPath(beside.file);
    await rename(beside.file, target.final);
  } catch (err) {
    await unlink(beside.file).catch(() => undefined);
    throw err;
  } finally {
    await unlink(beside.entry).catch(() => undefined);
    letGo(beside.entry);
  }
  await unlink(target.file).catch(() => undefined);
}

async function writevAll(handle: FileHandle, buffers: Buffer[], size: number): Promise<void> {
  let { bytesWritten } = await handle.writev(buffers);
  while (bytesWritten < size) {
    // A short write (rare on regular files): finish the rest from where it stopped.
    const rest = Buffer.concat(buffers).subarray(bytesWritten);
    const more = await handle.write(rest);
    bytesWritten += more.bytesWritten;
  }
}
