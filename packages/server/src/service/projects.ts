/**
 * Project binding: which directories a request may target (the launch project, or anything
 * under a `--project-roots` entry) and the per-project state (its store and the clients
 * attached to its interfaces). A refused path is never read.
 */
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { PorticoError } from '../errors.js';
import type { IndexBackend } from '../store/backends.js';
import type { LockHolder } from '../store/files.js';
import { instrumentStore } from '../store/instrumented.js';
import { LowdbStore } from '../store/lowdb-store.js';
import type { Metrics } from '../ops/metrics.js';
import { RunStore } from '../store/runs.js';
import type { Store } from '../store/store.js';
import type { Push } from '../kernel/worker.js';
import { isWithin } from '../source/relative-path.js';
import { recoverUploads } from '../store/upload-staging.js';

/** Receives what an interface pushes to the clients attached to it. */
export type Listener = (push: Push) => void;

export class Project {
  /** uuid → the clients attached to that interface. */
  private readonly attached = new Map<string, Set<Listener>>();
  /** uuid → its module, for pushes to every instance of a module (widget hot reload). */
  private readonly modules = new Map<string, string>();
  /** The project's run directories. */
  readonly runs: RunStore;

  constructor(
    readonly dir: string,
    readonly store: Store,
    log?: (line: string) => void,
  ) {
    this.runs = new RunStore(dir, log);
  }

  /** Attaches a client to an interface of `module`; returns the detach function (true: it was the last). */
  attach(uuid: string, module: string, listener: Listener): () => boolean {
    let set = this.attached.get(uuid);
    if (!set) this.attached.set(uuid, (set = new Set()));
    set.add(listener);
    this.modules.set(uuid, module);
    return () => {
      set.delete(listener);
      if (set.size === 0) {
        this.attached.delete(uuid);
        this.modules.delete(uuid);
      }
      return set.size === 0;
    };
  }

  /** Sends a push to every client attached to `uuid` (but `except`, which gets its own answer). */
  push(uuid: string, push: Push, except?: Listener): void {
    for (const listener of this.attached.get(uuid) ?? []) if (listener !== except) listener(push);
  }

  /** Sends a push to every client attached to any interface of `module`. */
  pushToModule(module: string, push: Push): void {
    for (const [uuid, of] of this.modules) if (of === module) this.push(uuid, push);
  }

  /** Whether a client is attached to `uuid`. */
  isAttached(uuid: string): boolean {
    return this.attached.has(uuid);
  }

  get hasAttachments(): boolean {
    return this.attached.size > 0;
  }
}


export class ProjectRegistry {
  private readonly open = new Map<string, Promise<Project>>();
  private readonly ready = new Map<string, Project>();
  private readonly roots: string[];
  /** What the index lock tells a process it refuses: where this gateway serves, and whether it is stopping. */
  readonly holder: LockHolder = {};

  constructor(
    readonly defaultDir: string,
    roots: string[],
    /** Where the projects' indexes live (embedded or PostgreSQL). */
    private readonly backend: IndexBackend,
    private readonly metrics?: Metrics,
    private readonly log?: (line: string) => void,
  ) {
    this.roots = roots.map((root) => path.resolve(root));
  }

  /** The configured roots, absolute. */
  get projectRoots(): string[] {
    return [...this.roots];
  }

  /** Directories with live state (opened stores), the default first. */
  get openDirs(): string[] {
    return [...new Set([this.defaultDir, ...this.open.keys()])];
  }

  /**
   * The project a request binds to. `requested` (header, query or connect field) must be the
   * launch project or lie under a root, both before and after symlinks are resolved.
   */
  async bind(requested?: string | null): Promise<Project> {
    const dir = requested ? await this.check(requested) : this.defaultDir;
    let project = this.open.get(dir);
    if (!project) {
      project = this.backend.open(dir, this.holder).then(async (store) => {
        // What uploads of a killed gateway left is undone before this one takes any; the embedded
        // store's lock makes this gateway the project's only writer.
        await recoverUploads(dir, { exclusive: store instanceof LowdbStore });
        const opened = new Project(dir, this.metrics ? instrumentStore(store, this.metrics) : store, this.log);
        this.ready.set(dir, opened);
        return opened;
      });
      this.open.set(dir, project);
      project.catch(() => this.open.delete(dir));
    }
    return project;
  }

  /** Every opened project (for event routing and shutdown). */
  async all(): Promise<Project[]> {
    await Promise.allSettled(this.open.values());
    return [...this.ready.values()];
  }

  /** The project at `dir` if it is open already (synchronous, for routing pushes in order). */
  peek(dir: string): Project | undefined {
    return this.ready.get(dir);
  }

  private allowed(dir: string): boolean {
    return dir === this.defaultDir || this.roots.some((root) => isWithin(dir, root));
  }

  private async check(requested: string): Promise<string> {
    const lexical = path.resolve(requested);
    const refuse = () =>
      new PorticoError('forbidden', `Project '${lexical}' is not permitted; start the gateway with --project-roots to allow it`);
    if (!this.allowed(lexical)) throw refuse();
    let real: string;
    try {
      real = await realpath(lexical);
      if (!(await stat(real)).isDirectory()) throw new Error('not a directory');
    } catch {
      throw new PorticoError('not_found', `Project directory '${lexical}' does not exist`);
    }
    if (!this.allowed(real)) throw refuse();
    return real;
  }
}
