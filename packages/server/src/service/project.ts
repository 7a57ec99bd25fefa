/**
 * Project reflection: the interface modules of a project (ProjectIndex), one module's schema
 * (ModuleSchema: the Config field by field and as JSON Schema, versions, methods, widget), its
 * declared remotes, and the one answer to a target that names none of its modules.
 */
import { PorticoError } from '../errors.js';
import { withoutEffects, type KernelPool } from '../kernel/pool.js';
import { withoutProjectPath, type Worker } from '../kernel/worker.js';
import type { RequestContext } from './context.js';
import type { RemoteInfo, RemoteModules } from './remotes.js';

/** WidgetInfo: the reference's relative asset URLs (no ?project=) beside Portico's flags. */
function widgetInfo(module: string, widget: { esm: boolean; css: boolean; meta: Record<string, unknown> }) {
  const base = `/v1/project/${encodeURIComponent(module)}/widget`;
  return { esm_url: `${base}/esm`, css_url: widget.css ? `${base}/css` : null, meta: widget.meta, esm: widget.esm, css: widget.css };
}

export class ProjectService {
  constructor(
    private readonly pool: KernelPool,
    private readonly remotes: RemoteModules,
  ) {}

  async index(ctx: RequestContext): Promise<{ project: string; modules: unknown[] }> {
    // A module's import error names paths as the worker's refusals do: relative to the project.
    const modules = (await withoutEffects(this.pool, ctx.project.dir, ctx.python, (worker) => worker.modules())) as Array<{ error?: unknown }>;
    return {
      project: ctx.project.dir,
      modules: modules.map((m) => (typeof m.error === 'string' ? { ...m, error: withoutProjectPath(m.error, ctx.project.dir) } : m)),
    };
  }

  /**
   * The module's ModuleSchema. The worker reflects the class; the gateway adds what only it knows
   * or what is derived: the version expressions a client offers (`~name`) and the asset URLs.
   */
  async schema(ctx: RequestContext, module: string): Promise<Record<string, unknown>> {
    await this.remotes.ensure(ctx.project.dir, module);
    const { version_methods, widget, ...schema } = await withoutEffects(this.pool, ctx.project.dir, ctx.python, (worker) =>
      worker.schema(module).catch((err: unknown) => explainUnknownModule(worker, module, err)),
    );
    const methods = version_methods as Array<{ name: string }>;
    return {
      ...schema,
      versions: methods.map((m) => `~${m.name}`),
      version_methods: methods,
      widget: widget ? widgetInfo(module, widget as { esm: boolean; css: boolean; meta: Record<string, unknown> }) : null,
    };
  }

  /** `remotes`: module → source, as the reference lists them; `details`: Portico's record of each. */
  async listRemotes(ctx: RequestContext): Promise<{ remotes: Record<string, string>; details: Record<string, Omit<RemoteInfo, 'module'>> }> {
    const list = await this.remotes.list(ctx.project.dir);
    return {
      remotes: Object.fromEntries(list.map(({ module, source }) => [module, source])),
      details: Object.fromEntries(list.map(({ module, ...info }) => [module, info])),
    };
  }
}

/** Module names an `unknown_module` answer lists at most (the first, sorted). */
const MODULES_NAMED = 20;
/** Nearest names it suggests at most. */
const SUGGESTIONS = 3;
/** Characters of the unknown target it repeats. */
const TARGET_SHOWN = 100;
/**
 * How long one listing of a worker's modules serves the unknown_module answers after it: a burst
 * of mistakes lists once. Listing imports the project's modules the first time (the worker keeps
 * them by mtime after that), so it is asked for only when a target names none of them.
 */
const LISTING_KEPT_MS = 2_000;
/** How long an unknown_module answer waits for the listing; past it, it names no modules. */
const LISTING_WAIT_MS = 2_000;

const listings = new WeakMap<Worker, { at: number; names: Promise<string[] | undefined> }>();

/**
 * Rethrows `err`; an `unknown_module` error (the worker found no module `target`) becomes the one
 * answer every endpoint and frame gives it: 400 `unknown_module` whose message and issue name the
 * nearest interface modules and the first MODULES_NAMED of them, sorted.
 *
 * @example "Unknown module 'countr': did you mean 'counter'? The interface modules of this project: counter, wave."
 */
export async function explainUnknownModule(worker: Worker, target: string, err: unknown): Promise<never> {
  if (!(err instanceof PorticoError) || err.code !== 'unknown_module') throw err;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), LISTING_WAIT_MS)));
  const names = await Promise.race([interfaceModules(worker), late]).finally(() => clearTimeout(timer));
  const message = unknownModuleMessage(target, names);
  throw new PorticoError('unknown_module', message, { issues: [{ path: null, message }] });
}

/** The project's interface modules, sorted (undefined when they cannot be listed). */
function interfaceModules(worker: Worker): Promise<string[] | undefined> {
  const kept = listings.get(worker);
  if (kept && performance.now() - kept.at < LISTING_KEPT_MS) return kept.names;
  const names = worker.modules().then(
    (modules) => (modules as Array<{ module: string; kind: string | null }>).filter((m) => m.kind !== null).map((m) => m.module).sort(),
    () => undefined,
  );
  listings.set(worker, { at: performance.now(), names });
  return names;
}

function unknownModuleMessage(target: string, names: string[] | undefined): string {
  const shown = target.length > TARGET_SHOWN ? `${target.slice(0, TARGET_SHOWN)}…` : target;
  const unknown = `Unknown module '${shown}'`;
  if (names === undefined) return `${unknown}.`;
  if (names.length === 0) return `${unknown}: this project has no interface modules.`;
  const near = nearestNames(target, names);
  const more = names.length > MODULES_NAMED ? ` and ${names.length - MODULES_NAMED} more` : '';
  const listed = `The interface modules of this project: ${names.slice(0, MODULES_NAMED).join(', ')}${more}.`;
  return near.length ? `${unknown}: did you mean ${alternatives(near)}? ${listed}` : `${unknown}. ${listed}`;
}

/**
 * The SUGGESTIONS names nearest to `target`, nearest first: within an edit distance of a third
 * of its length (at least 1), case aside, to the whole name or its last dotted part.
 */
function nearestNames(target: string, names: string[]): string[] {
  if (target.length > TARGET_SHOWN) return [];
  const wanted = target.toLowerCase();
  const most = Math.max(1, Math.floor(wanted.length / 3));
  return names
    .map((name) => {
      const lower = name.toLowerCase();
      return { name, distance: Math.min(editDistance(wanted, lower, most), editDistance(wanted, lower.slice(lower.lastIndexOf('.') + 1), most)) };
    })
    .filter(({ distance }) => distance <= most)
    .sort((a, b) => a.distance - b.distance || (a.name < b.name ? -1 : 1))
    .slice(0, SUGGESTIONS)
    .map(({ name }) => name);
}

/** Levenshtein distance with transpositions (optimal string alignment); `most + 1` once it is past `most`. */
function editDistance(a: string, b: string, most: number): number {
  if (Math.abs(a.length - b.length) > most) return most + 1;
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, before[j - 2]! + 1);
    }
    [before, previous] = [previous, row];
  }
  return Math.min(previous[b.length]!, most + 1);
}

/** 'a'; 'a' or 'b'; 'a', 'b' or 'c'. */
function alternatives(names: string[]): string {
  const quoted = names.map((name) => `'${name}'`);
  return quoted.length === 1 ? quoted[0]! : `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}`;
}
