/**
 * The source API, transport-free: list, read, write, delete and move a project's source files,
 * confined to the project directory (paths.ts), with strong ETags and conditional writes
 * (etag.ts). A write compares and replaces under a per-file lock (locks.ts) and replaces the file
 * atomically (temp file, fsync, rename, fsync of the folder), so of concurrent writes with the
 * same If-Match exactly one wins and the file always holds one writer's content whole. Every
 * change is answered only after what it made stale was invalidated (invalidate.ts).
 *
 * Opt-in (`enableSourceApi`; disabled, every source route is 404) and, for writes, gated by the
 * source token (`X-Service-Source-Token`, compared in constant time) besides Authorization.
 */
import { chmod, readFile, readdir, rename, rmdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { safeEqual } from '../auth/credentials.js';
import { LIMITS } from '../config/constants.js';
import type { GatewayOptions } from '../config/options.js';
import { PorticoError } from '../errors.js';
import type { KernelPool } from '../kernel/pool.js';
import type { RequestContext } from './context.js';
import type { WidgetService } from './widgets.js';
import { syncPath, writeAtomic } from '../store/files.js';
import { checkPreconditions, fileEtag, notModified, sourceEtag, type Preconditions } from '../source/etag.js';
import { SourceInvalidation } from './source-invalidation.js';
import { listSources, type SourceFileEntry } from '../source/listing.js';
import { locate, moduleOf, type Located } from '../source/paths.js';
import { withLocks } from '../source/locks.js';

export type { Preconditions };

export interface SourceList {
  base_dir: string;
  files: SourceFileEntry[];
  truncated: boolean;
}

export interface SourceContent {
  path: string;
  module: string | null;
  content: string;
  /** MD5 hex, unquoted. */
  etag: string;
  size: number;
}

export interface SourceWritten {
  path: string;
  module: string | null;
  /** MD5 hex of the file now on disk, unquoted. */
  etag: string;
  created: boolean;
}

/** Strict: a file that is not UTF-8 is not text the API can hand out (and write back unchanged). The BOM is kept. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export class SourceService {
  private readonly invalidation: SourceInvalidation;

  constructor(
    private readonly options: Pick<GatewayOptions, 'enableSourceApi' | 'sourceToken'>,
    pool: KernelPool,
    widgets: WidgetService,
    log: (line: string) => void,
  ) {
    this.invalidation = new SourceInvalidation(pool, widgets, log);
  }

  /** Whether a read's If-None-Match names the file's current tag (answer 304, RFC 9110 §13.1.2). */
  notModified(ifNoneMatch: string | undefined, etag: string): boolean {
    return notModified(ifNoneMatch, etag);
  }

  /** Throws `not_found` when the gateway was started without --enable-source-api. */
  ensureEnabled(): void {
    if (!this.options.enableSourceApi) {
      throw new PorticoError('not_found', 'The source API is disabled on this gateway; start it with --enable-source-api and --source-token');
    }
  }

  /** Admits a write carrying `token` (X-Service-Source-Token), or throws `source_token_required`. */
  authorizeWrite(token: string | undefined): void {
    this.ensureEnabled();
    const expected = this.options.sourceToken;
    if (!expected) throw new PorticoError('source_token_required', 'This gateway has no source token, so it accepts no source writes');
    if (!token) throw new PorticoError('source_token_required', 'Source writes need the X-Service-Source-Token header besides Authorization');
    if (!safeEqual(token, expected)) throw new PorticoError('source_token_required', 'The X-Service-Source-Token is not the source token');
  }

  async list(ctx: RequestContext): Promise<SourceList> {
    this.ensureEnabled();
    return { base_dir: ctx.project.dir, ...(await listSources(ctx.project.dir)) };
  }

  async read(ctx: RequestContext, relative: string): Promise<SourceContent> {
    this.ensureEnabled();
    const found = await locate(ctx.project.dir, relative);
    if (!found.info?.isFile()) throw new PorticoError('not_found', `Source file '${found.path}' not found`);
    if (found.info.size > LIMITS.sourceFileMax) throw tooLarge(found.path);
    const bytes = await readFile(found.file).catch(() => {
      throw new PorticoError('not_found', `Source file '${found.path}' not found`);
    });
    if (bytes.length > LIMITS.sourceFileMax) throw tooLarge(found.path);
    let content: string;
    try {
      content = UTF8.decode(bytes);
    } catch {
      throw new PorticoError('not_source_file', `Source file '${found.path}' is not UTF-8 text`);
    }
    return { path: found.path, module: moduleOf(found.path), content, etag: sourceEtag(bytes), size: bytes.length };
  }

  /** Creates or replaces a file with `content` (UTF-8) if the preconditions hold. */
  async write(ctx: RequestContext, relative: string, content: string, pre: Preconditions = {}): Promise<SourceWritten> {
    const bytes = Buffer.from(content, 'utf8');
    const target = await locate(ctx.project.dir, relative);
    if (bytes.length > LIMITS.sourceFileMax) throw tooLarge(target.path);
    const written = await withLocks([target.file], async () => {
      const current = await this.current(target);
      checkPreconditions(pre, current?.etag ?? null, target.path);
      // Missing folders are made only now that the write will happen.
      const { file } = current ? target : await locate(ctx.project.dir, relative, { create: true });
      await writeAtomic(file, bytes);
      if (current) await chmod(file, current.mode & 0o7777); // keeps the permissions (the temp file had the default ones)
      return { path: target.path, module: moduleOf(target.path), etag: sourceEtag(bytes), created: !current };
    });
    await this.invalidation.changed(ctx, [{ path: target.path, file: target.file }]);
    return written;
  }

  /** Deletes a file if the preconditions hold (If-Match); a folder it leaves empty goes too. */
  async remove(ctx: RequestContext, relative: string, pre: Preconditions = {}): Promise<void> {
    const target = await locate(ctx.project.dir, relative);
    await withLocks([target.file], async () => {
      const current = await this.current(target);
      if (!current) throw new PorticoError('not_found', `Source file '${target.path}' not found`);
      checkPreconditions({ ifMatch: pre.ifMatch }, current.etag, target.path);
      await unlink(target.file);
      await syncPath(path.dirname(target.file));
      await removeEmptyFolders(ctx.project.dir, path.dirname(target.file));
    });
    await this.invalidation.changed(ctx, [{ path: target.path, file: target.file }]);
  }

  /**
   * Renames `from` to `to` (which must not exist) in one atomic rename, creating missing folders;
   * a folder `from` leaves empty goes. This is how an interface becomes a package and back:
   * `foo.py` → `foo/__init__.py`, `foo/__init__.py` → `foo.py`. If-Match applies to `from`.
   */
  async move(ctx: RequestContext, from: string, to: string, pre: Preconditions = {}): Promise<SourceWritten> {
    const source = await locate(ctx.project.dir, from);
    const destination = await locate(ctx.project.dir, to);
    const moved = await withLocks([source.file, destination.file], async () => {
      const current = await this.current(source);
      if (!current) throw new PorticoError('not_found', `Source file '${source.path}' not found`);
      checkPreconditions({ ifMatch: pre.ifMatch }, current.etag, source.path);
      if (await stat(destination.file).then(() => true, () => false)) {
        throw new PorticoError('conflict', `Destination '${destination.path}' already exists`);
      }
      const { file } = await locate(ctx.project.dir, to, { create: true });
      await rename(source.file, file);
      await syncPath(path.dirname(file));
      if (path.dirname(file) !== path.dirname(source.file)) {
        await syncPath(path.dirname(source.file));
        await removeEmptyFolders(ctx.project.dir, path.dirname(source.file));
      }
      return { path: destination.path, module: moduleOf(destination.path), etag: current.etag, created: false };
    });
    await this.invalidation.changed(ctx, [
      { path: source.path, file: source.file },
      { path: destination.path, file: destination.file },
    ]);
    return moved;
  }

  /** The file's tag and mode now (under its lock), or null when there is none. */
  private async current(target: Located): Promise<{ etag: string; mode: number } | null> {
    // Stat again: the one `locate` took may be stale by the time the lock is held.
    const info = await stat(target.file).catch(() => undefined);
    if (!info) return null;
    if (!info.isFile()) throw new PorticoError('conflict', `'${target.path}' is a folder, not a file`);
    return { etag: await fileEtag(target.file), mode: info.mode };
  }
}

function tooLarge(shown: string): PorticoError {
  return new PorticoError('payload_too_large', `Source file '${shown}' exceeds ${LIMITS.sourceFileMax} bytes, the bound of the source API`);
}

/**
 * Removes `dir` and its parents up to (not including) `base` while they hold nothing, or only a
 * `__pycache__` folder (bytecode of the files that were there).
 */
async function removeEmptyFolders(base: string, dir: string): Promise<void> {
  while (dir !== base && dir.startsWith(base + path.sep)) {
    const names = await readdir(dir).catch(() => undefined);
    if (!names || names.some((name) => name !== '__pycache__')) return;
    if (names.length) {
      const cache = path.join(dir, '__pycache__');
      const cached = await readdir(cache).catch(() => undefined);
      if (!cached) return;
      await Promise.all(cached.filter((name) => name.endsWith('.pyc')).map((name) => unlink(path.join(cache, name)).catch(() => undefined)));
      if (await rmdir(cache).then(() => false, () => true)) return;
    }
    if (await rmdir(dir).then(() => false, () => true)) return;
    dir = path.dirname(dir);
  }
}
