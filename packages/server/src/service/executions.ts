/**
 * Executions, transport-free: dispatch (materialize the interfaces with their contexts folded
 * into the predicate, write the run directory, start `python -m portico.run` detached so a
 * gateway restart never stops it), listing, output windows, cancel and lifecycle.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';
import { LIMITS } from '../config/constants.js';
import type { DispatchRequest, ExecutionInfo, OutputQuery } from '../contract/executions.js';
import { PorticoError } from '../errors.js';
import { PYTHON_DIR } from '../kernel/worker.js';
import type { RunInterface, RunStore } from '../store/runs.js';
import type { RequestContext } from './context.js';
import type { InterfaceInfo, InterfaceService } from './interfaces.js';

export interface ListFilters {
  active?: boolean | undefined;
  incomplete?: boolean | undefined;
  pending?: boolean | undefined;
  parent?: string | undefined;
  /** Only runs of this interface. */
  interface?: string | undefined;
  limit: number;
}

export type Lifecycle = 'draft' | 'running' | 'cached' | 'failed';

export class ExecutionService {
  /** Run processes this gateway started and that are still running, by run directory. */
  private readonly children = new Map<string, ChildProcess>();

  constructor(
    private readonly interfaces: InterfaceService,
    private readonly log: (line: string) => void,
  ) {}

  /** Materializes each interface (contexts folded into its predicate) and starts one run of them all. */
  async dispatch(ctx: RequestContext, request: DispatchRequest): Promise<ExecutionInfo> {
    const planned: RunInterface[] = [];
    for (const item of request.interfaces) {
      const contexts: InterfaceInfo[] = [];
      for (const ref of item.context) contexts.push(await this.interfaces.create(ctx, ref));
      const record = await this.interfaces.create(ctx, {
        target: item.target,
        version: item.version,
        predicate: contexts.length ? { context: contexts.map((c) => c.uuid) } : {},
      });
      planned.push({
        uuid: record.uuid,
        module: record.module,
        config: record.config,
        contexts: contexts.map((c) => ({ uuid: c.uuid, module: c.module, config: c.config })),
      });
    }
    const runs = ctx.project.runs;
    const spec = {
      uuid: randomBytes(12).toString('hex'),
      project: ctx.project.dir,
      created_at: new Date().toISOString(),
      created_by: ctx.user,
      parent: request.parent ?? null,
      interfaces: planned,
    };
    await runs.create(spec);
    this.start(ctx, runs, spec.uuid);
    return this.info(ctx, spec.uuid);
  }

  async list(ctx: RequestContext, filters: ListFilters): Promise<ExecutionInfo[]> {
    const out: ExecutionInfo[] = [];
    for (const spec of await ctx.project.runs.all()) {
      if (filters.parent !== undefined && spec.parent !== filters.parent) continue;
      if (filters.interface !== undefined && !spec.interfaces.some((i) => i.uuid === filters.interface)) continue;
      const info = await this.info(ctx, spec.uuid);
      if (filters.active !== undefined && info.is_active !== filters.active) continue;
      if (filters.incomplete !== undefined && info.is_incomplete !== filters.incomplete) continue;
      if (filters.pending !== undefined && (info.status === 'pending') !== filters.pending) continue;
      out.push(info);
      if (out.length >= filters.limit) break;
    }
    return out;
  }

  async info(ctx: RequestContext, uuid: string): Promise<ExecutionInfo> {
    const runs = ctx.project.runs;
    const spec = await runs.get(uuid);
    if (!spec) throw new PorticoError('not_found', `Execution '${uuid}' not found`);
    const child = this.children.get(runs.dir(uuid));
    return runs.info(spec, child ? { alive: child.exitCode === null && child.signalCode === null, pid: child.pid } : undefined);
  }

  async output(ctx: RequestContext, uuid: string, query: OutputQuery) {
    await this.info(ctx, uuid); // 404 for an unknown run
    const limit = Math.min(query.limit ?? LIMITS.outputWindowDefault, LIMITS.outputWindowMax);
    return ctx.project.runs.output(uuid, { offset: query.offset, tail: query.tail, limit });
  }

  /** Writes the cancel marker; the run's watcher interrupts it within a second. */
  async cancel(ctx: RequestContext, uuid: string): Promise<void> {
    await this.info(ctx, uuid);
    await ctx.project.runs.cancel(uuid);
  }

  /** draft (no usable run), running, cached (a run finished) or failed (the latest run did not). */
  async lifecycle(ctx: RequestContext, record: { uuid: string } | undefined): Promise<{ status: Lifecycle; execution_uuid: string | null }> {
    if (!record) return { status: 'draft', execution_uuid: null };
    const [latest] = await this.list(ctx, { interface: record.uuid, limit: 1 });
    if (latest?.is_active || latest?.status === 'pending') return { status: 'running', execution_uuid: latest.uuid };
    if (await ctx.project.runs.cached(record.uuid)) return { status: 'cached', execution_uuid: latest?.uuid ?? null };
    if (latest && latest.status !== 'finished') return { status: 'failed', execution_uuid: latest.uuid };
    return { status: 'draft', execution_uuid: latest?.uuid ?? null };
  }

  /**
   * A search page with each item's runs summed up (include_status): its lifecycle status, its
   * newest execution and how many executions ran it.
   */
  async withRunStatus<T extends { uuid: string }>(ctx: RequestContext, items: T[]): Promise<Array<T & { status: Lifecycle; execution_uuid: string | null; run_count: number }>> {
    return Promise.all(
      items.map(async (item) => {
        const [lifecycle, runs] = await Promise.all([this.lifecycle(ctx, item), this.list(ctx, { interface: item.uuid, limit: Infinity })]);
        return { ...item, ...lifecycle, run_count: runs.length };
      }),
    );
  }

  private start(ctx: RequestContext, runs: RunStore, uuid: string): void {
    const dir = runs.dir(uuid);
    const log = openSync(path.join(dir, 'output.log'), 'a');
    let child: ChildProcess;
    try {
      child = spawn(ctx.python, ['-m', 'portico.run', dir], {
        cwd: ctx.project.dir,
        // Its own session: a gateway restart (or Ctrl-C in its terminal) does not stop the run.
        detached: true,
        stdio: ['ignore', log, log],
        env: { ...process.env, PYTHONPATH: PYTHON_DIR, PYTHONUNBUFFERED: '1', PYTHONSAFEPATH: '1' },
      });
    } finally {
      closeSync(log);
    }
    this.children.set(dir, child);
    child.unref();
    child.on('error', (err) => this.log(`execution ${uuid}: cannot start ${ctx.python}: ${err.message}`));
    child.on('exit', (code, signal) => {
      this.children.delete(dir);
      if (code === 0) return;
      const why = signal ? `The run process was killed by ${signal}` : `The run process exited with code ${code}`;
      // Only records a death the run itself did not describe (status.json wins).
      runs.markDied(uuid, why).catch((err) => this.log(`execution ${uuid}: ${err.message}`));
    });
  }
}
