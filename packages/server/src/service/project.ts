/**
 * Project reflection: the interface modules of a project (ProjectIndex), one module's schema
 * (ModuleSchema: Config as JSON Schema, versions, methods) and its declared remotes.
 */
import type { KernelPool } from '../kernel/pool.js';
import type { RequestContext } from './context.js';
import type { RemoteInfo, RemoteModules } from './remotes.js';

export class ProjectService {
  constructor(
    private readonly pool: KernelPool,
    private readonly remotes: RemoteModules,
  ) {}

  async index(ctx: RequestContext): Promise<{ project: string; modules: unknown[] }> {
    const worker = await this.pool.get(ctx.project.dir, ctx.python);
    return { project: ctx.project.dir, modules: await worker.modules() };
  }

  async schema(ctx: RequestContext, module: string): Promise<Record<string, unknown>> {
    await this.remotes.ensure(ctx.project.dir, module);
    const worker = await this.pool.get(ctx.project.dir, ctx.python);
    return worker.schema(module);
  }

  async listRemotes(ctx: RequestContext): Promise<{ remotes: Record<string, Omit<RemoteInfo, 'module'>> }> {
    const list = await this.remotes.list(ctx.project.dir);
    return { remotes: Object.fromEntries(list.map(({ module, ...info }) => [module, info])) };
  }
}
