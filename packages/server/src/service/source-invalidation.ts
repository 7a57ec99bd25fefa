/**
 * What a source edit makes stale, and making it fresh again before the edit is answered:
 *
 * - a `.py` file: its bytecode in `__pycache__` is removed (Python trusts a `.pyc` whose source
 *   has the same size and whole-second mtime, which a quick edit can keep), and every worker of
 *   the project, whatever its interpreter, drops the module, its submodules and their live
 *   instances (bridge op `invalidate`, kernel/README.md); clients attached to a widget module get
 *   `widget_reload` for its front end;
 * - a widget front end (`.js`, `.mjs`, `.css`): clients attached to the modules of that folder
 *   that serve it (sibling `<module>.widget.js` or a declared `_esm`/`_css`) get `widget_reload`.
 *
 * Other files (`.json`, `.md`, `.txt`) invalidate nothing: a module that reads one at import
 * time sees the change once the module itself is edited or its worker restarts.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { LIMITS } from '../config/constants.js';
import type { KernelPool } from '../kernel/pool.js';
import type { RequestContext } from './context.js';
import type { AssetName, WidgetService } from './widgets.js';
import { dropBytecode } from '../source/bytecode.js';
import { moduleOf } from '../source/paths.js';

/** A file a source edit wrote, removed or moved (both names of a move). */
export interface ChangedFile {
  /** Normalized, relative to the project. */
  path: string;
  /** Absolute, symlinks resolved. */
  file: string;
}

/**
 * Modules of a folder asked whether they serve a changed front-end file (each costs the worker a
 * lookup, importing the module once). Front ends declared from another folder still reload
 * through the widget service's file watcher once they have been served.
 */
const ASSET_OWNER_CANDIDATES = 64;

const ASSET_OF_EXTENSION: Record<string, AssetName> = { '.js': 'esm', '.mjs': 'esm', '.css': 'css' };

export class SourceInvalidation {
  constructor(
    private readonly pool: KernelPool,
    private readonly widgets: WidgetService,
    private readonly log: (line: string) => void,
  ) {}

  /** Invalidates what `files` made stale in the request's project; never throws (failures are logged). */
  async changed(ctx: RequestContext, files: ChangedFile[]): Promise<void> {
    const modules = new Set<string>();
    const reloads = new Map<string, Set<AssetName>>();
    const reload = (module: string, asset: AssetName) => reloads.set(module, (reloads.get(module) ?? new Set()).add(asset));
    for (const { path: relative, file } of files) {
      if (!relative.endsWith('.py')) continue;
      await dropBytecode(file);
      const module = moduleOf(relative);
      if (module) modules.add(module);
    }
    if (modules.size > 0) await this.invalidateWorkers(ctx.project.dir, [...modules]);
    if (!ctx.project.hasAttachments) return; // nobody to tell
    for (const module of modules) reload(module, 'esm');
    for (const changed of files) {
      const asset = ASSET_OF_EXTENSION[path.extname(changed.path).toLowerCase()];
      if (asset) for (const owner of await this.assetOwners(ctx, changed, asset)) reload(owner, asset);
    }
    for (const [module, assets] of reloads) {
      for (const asset of assets) {
        // Also refreshes the tag the widget service's watcher compares, so it does not push again.
        const served = await this.widgets.asset(ctx, module, asset).catch(() => undefined);
        if (served) ctx.project.pushToModule(module, { type: 'widget_reload', payload: { asset, etag: served.etag } });
      }
    }
  }

  /** Tells every running worker of the project to drop `modules`. */
  private async invalidateWorkers(project: string, modules: string[]): Promise<void> {
    const workers = this.pool.sourceChanged(project);
    await Promise.all(
      workers.map((worker) =>
        worker?.invalidate(modules, LIMITS.sourceInvalidateTimeoutMs).catch((err: Error) => {
          // The module's own file still has a new mtime, which the worker checks on every lookup.
          this.log(`source: worker ${worker.pid ?? '?'} (${worker.python}) did not drop ${modules.join(', ')}: ${err.message}`);
        }),
      ),
    );
  }

  /** The modules in the changed file's folder whose widget `asset` is that file. */
  private async assetOwners(ctx: RequestContext, changed: ChangedFile, asset: AssetName): Promise<string[]> {
    const folder = path.posix.dirname(changed.path);
    const names = await readdir(path.dirname(changed.file)).catch(() => [] as string[]);
    const candidates = names
      .filter((name) => name.endsWith('.py'))
      .map((name) => moduleOf(folder === '.' ? name : `${folder}/${name}`))
      .filter((module): module is string => module !== null)
      .slice(0, ASSET_OWNER_CANDIDATES);
    if (candidates.length === 0) return [];
    const worker = await this.pool.get(ctx.project.dir, ctx.python).catch(() => undefined);
    if (!worker) return [];
    const owners: string[] = [];
    for (const module of candidates) {
      const sources = await worker.widgetAssets(module).catch(() => undefined);
      const source = sources?.[asset];
      if (source && 'path' in source && source.path === changed.file) owners.push(module);
    }
    return owners;
  }
}
