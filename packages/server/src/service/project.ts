/**
 * Project reflection: the interface modules of a project (ProjectIndex), one module's schema
 * (ModuleSchema: the Config field by field and as JSON Schema, versions, methods, widget) and its
 * declared remotes.
 */
import type { KernelPool } from '../kernel/pool.js';
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
    const worker = await this.pool.get(ctx.project.dir, ctx.python);
    return { project: ctx.project.dir, modules: await worker.modules() };
  }

  /**
   * The module's ModuleSchema. The worker reflects the class; the gateway adds what only it knows
   * or what is derived: the version expressions a client offers (`~name`) and the asset URLs.
   */
  async schema(ctx: RequestContext, module: string): Promise<Record<string, unknown>> {
    await this.remotes.ensure(ctx.project.dir, module);
    const worker = await this.pool.get(ctx.project.dir, ctx.python);
    const { version_methods, widget, ...schema } = await worker.schema(module);
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
