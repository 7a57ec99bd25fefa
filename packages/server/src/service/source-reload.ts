/**
 * `portico serve --reload`: the launch project's Python files are watched, and when some change
 * (settled for RELOAD_DEBOUNCE_MS) the project's workers start again on the code now on disk
 * (`KernelPool.restartProject`: live instances are made again on their next use, with their saved
 * widget state, and their clients get `instance_restarted` with reason `source_changed`).
 *
 * - **Which files.** `*.py` in the folders the source API walks (paths.ts): not hidden ones
 *   (`.portico/`, `.git/`, `.venv/`), `__pycache__`, `node_modules`, `site-packages`, `venv` or a
 *   folder that holds an environment. Hidden files (editor swap and lock files) do not count.
 * - **How.** One `fs.watch` per folder (a recursive watch would walk `.portico/` and environments
 *   too); a folder made later is watched from then on, and the `.py` files already in it count as
 *   changed. The changed files' bytecode goes first (invalidate.ts, `dropBytecode`).
 * - **One at a time.** Changes during a restart start another one after it.
 */
import { watch, type Dirent, type FSWatcher } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { KernelPool } from '../kernel/pool.js';
import type { LogLine } from '../ops/logger.js';
import { dropBytecode } from '../source/bytecode.js';
import { isEnvironment, walkableDirName } from '../source/paths.js';

/** Changes are gathered until none came for this long (ms): a save that writes several files, or writes one twice, is one restart. */
export const RELOAD_DEBOUNCE_MS = 200;

/** Whether a file name is a Python file whose change reloads (hidden ones, editor lock files like `.#x.py`, do not). */
function reloads(name: string): boolean {
  return name.endsWith('.py') && !name.startsWith('.');
}

export class SourceReloader {
  private readonly watchers = new Map<string, FSWatcher>();
  private readonly changed = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  /** The restart under way, if any; the next one starts after it. */
  private restarting: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly project: string,
    private readonly pool: KernelPool,
    private readonly log: LogLine,
  ) {}

  /** Watches `project` (an absolute, resolved directory) until `close()`. */
  static async start(project: string, pool: KernelPool, log: LogLine): Promise<SourceReloader> {
    const reloader = new SourceReloader(project, pool, log);
    await reloader.watchTree(project, false);
    log(`reload: watching the .py files of ${project} (${reloader.watchers.size} folder${reloader.watchers.size === 1 ? '' : 's'})`);
    return reloader;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
  }

  /** Watches `dir` and the folders below it that hold source; `fresh`: a folder made since, whose .py files count as changed. */
  private async watchTree(dir: string, fresh: boolean): Promise<void> {
    if (this.closed || this.watchers.has(dir) || (dir !== this.project && (await isEnvironment(dir)))) return;
    let watcher: FSWatcher;
    try {
      watcher = watch(dir, { persistent: false }, (_event, name) => name && this.noticed(dir, name.toString()));
    } catch (err) {
      // ENOSPC: the inotify watches ran out (fs.inotify.max_user_watches); the rest is still watched.
      this.log(`reload: cannot watch ${dir}: ${(err as Error).message}`, 'warn');
      return;
    }
    watcher.on('error', () => this.unwatch(dir)); // the folder went away
    this.watchers.set(dir, watcher);
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => [] as Dirent[]);
    for (const entry of entries) {
      if (entry.isDirectory() && walkableDirName(entry.name)) await this.watchTree(path.join(dir, entry.name), fresh);
      else if (fresh && reloads(entry.name)) this.mark(path.join(dir, entry.name));
    }
  }

  private unwatch(dir: string): void {
    this.watchers.get(dir)?.close();
    this.watchers.delete(dir);
  }

  /** An event in `dir` about `name`: a .py file changed, or a folder came or went. */
  private noticed(dir: string, name: string): void {
    const full = path.join(dir, name);
    if (reloads(name)) {
      this.mark(full);
      return;
    }
    if (!walkableDirName(name)) return;
    void stat(full).then(
      async (info) => {
        if (info.isDirectory()) await this.watchTree(full, true);
      },
      () => {
        // Gone: a folder of modules that was removed or renamed away takes its modules along.
        for (const watched of [...this.watchers.keys()]) {
          if (watched === full || watched.startsWith(full + path.sep)) {
            this.unwatch(watched);
            this.mark(full);
          }
        }
      },
    );
  }

  private mark(file: string): void {
    if (this.closed) return;
    this.changed.add(file);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.restart(), RELOAD_DEBOUNCE_MS);
    this.timer.unref();
  }

  private restart(): void {
    const files = [...this.changed];
    this.changed.clear();
    this.restarting = this.restarting.then(async () => {
      if (this.closed) return;
      await Promise.all(files.filter((file) => file.endsWith('.py')).map((file) => dropBytecode(file)));
      const names = files.map((file) => path.relative(this.project, file));
      const shown = names.length > 3 ? `${names.slice(0, 3).join(', ')} and ${names.length - 3} more` : names.join(', ');
      await this.pool.restartProject(this.project, `${shown} changed on disk (--reload)`).catch((err: Error) => this.log(`reload: restarting the workers failed: ${err.message}`, 'error'));
    });
  }
}
