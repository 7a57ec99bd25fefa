/**
 * Executions, transport-free: dispatch (materialize the interfaces with their contexts folded
 * into the predicate, write the run directory, hand it to the executor: a detached local process
 * by default, a Slurm job with --executor slurm), listing, output windows, cancel and lifecycle.
 */
import { randomBytes } from 'node:crypto';
import { LIMITS } from '../config/constants.js';
import type { DispatchRequest, ExecutionInfo, OutputQuery } from '../contract/executions.js';
import type { LifecycleRequest, LifecycleResponse } from '../contract/rest.js';
import type { FindRequest } from '../contract/search.js';
import { PorticoError } from '../errors.js';
import type { Executor } from '../executors/executor.js';
import type { RunInterface } from '../store/runs.js';
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
  constructor(
    private readonly interfaces: InterfaceService,
    readonly executor: Executor,
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
      resources: request.resources ?? null,
    };
    await runs.create(spec);
    try {
      await this.executor.start({ uuid: spec.uuid, runs, project: ctx.project.dir, python: ctx.python, resources: request.resources });
    } catch (err) {
      // The run directory says so too: a run that could not start is failed, never pending forever.
      const why = err instanceof Error ? err.message : String(err);
      await runs.markDied(spec.uuid, why, { status: 'failed', exception: 'SubmitFailed' }).catch((e) => this.log(`execution ${spec.uuid}: ${e}`));
      throw err;
    }
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
    // Known, or read from its folder at once: a run another gateway dispatched is found the same.
    const spec = await runs.lookup(uuid);
    if (!spec) throw new PorticoError('not_found', `Execution '${uuid}' not found`);
    if ('unreadable' in spec) throw new PorticoError('execution_unreadable', `Execution '${uuid}' cannot be read: ${spec.unreadable}`);
    if (await runs.hasEnded(uuid)) return runs.info(spec);
    // The engine first, then the files: a run that ends in between is read with its status.json.
    const engine = await this.executor.observe(runs, uuid);
    const info = await runs.info(spec, engine);
    if (engine?.kind === 'job' && (engine.phase === 'ended' || engine.phase === 'unknown') && (info.status === 'failed' || info.status === 'interrupted') && info.error) {
      // The scheduler ended the job (or forgot it) before the run recorded its end: record it in the
      // run directory, which stays the truth once the scheduler forgets the job.
      await runs.markDied(uuid, info.error.message, { status: info.status, exception: info.error.exception });
      this.executor.forget(runs, uuid);
      return runs.info(spec, engine);
    }
    if (info.finished_at !== null) this.executor.forget(runs, uuid);
    return info;
  }

  async output(ctx: RequestContext, uuid: string, query: OutputQuery) {
    await this.info(ctx, uuid); // 404 for an unknown run
    const limit = Math.min(query.limit ?? LIMITS.outputWindowDefault, LIMITS.outputWindowMax);
    return ctx.project.runs.output(uuid, { offset: query.offset, tail: query.tail, limit });
  }

  /**
   * Writes the cancel marker in the run folder, whichever gateway dispatched the run; the run's
   * watcher interrupts it within a second. A run that has ended is left as it is. The executor adds
   * what its engine needs (Slurm: scancel of a queued job at once, of a running one after a grace).
   */
  async cancel(ctx: RequestContext, uuid: string): Promise<void> {
    await this.info(ctx, uuid);
    await ctx.project.runs.cancel(uuid);
    if (!(await ctx.project.runs.hasEnded(uuid))) await this.executor.cancel(ctx.project.runs, uuid);
  }

  /**
   * POST /v1/interfaces/lifecycle: the lifecycle of a config, its contexts folded in as a dispatch
   * folds them, without creating anything (an unknown config is a draft).
   */
  async ofConfig(ctx: RequestContext, request: LifecycleRequest): Promise<LifecycleResponse> {
    const contexts: string[] = [];
    for (const ref of request.context) contexts.push((await this.interfaces.resolve(ctx, ref.target, ref.version)).uuid);
    const resolved = await this.interfaces.resolve(ctx, request.target, request.version, contexts.length ? { context: contexts } : {});
    const lifecycle = await this.lifecycle(ctx, await ctx.project.store.get(resolved.uuid));
    return { target: request.target, module: resolved.module, uuid: resolved.uuid, ...lifecycle, cached: lifecycle.status === 'cached' };
  }

  /** POST /v1/interfaces/search: a page of records, each with its runs summed up when `include_status` asks. */
  async search(ctx: RequestContext, request: FindRequest) {
    const page = await this.interfaces.search(ctx, request);
    return request.include_status ? { ...page, items: await this.withRunStatus(ctx, page.items) } : page;
  }

  /** The run's events (events.jsonl lines: emit() payloads and their bundles) from a byte offset, and where the next read starts. */
  async events(ctx: RequestContext, uuid: string, offset: number): Promise<{ events: unknown[]; next: number }> {
    return ctx.project.runs.events(uuid, offset);
  }

  /** draft (no usable run), running, cached (a run finished) or failed (the latest run did not). */
  async lifecycle(ctx: RequestContext, record: { uuid: string } | undefined): Promise<{ status: Lifecycle; execution_uuid: string | null }> {
    if (!record) return { status: 'draft', execution_uuid: null };
    return this.lifecycleAfter(ctx, record.uuid, (await this.newestRuns(ctx, [record.uuid])).get(record.uuid));
  }

  /**
   * Records (InterfaceInfo answers) with `cached`: whether the lifecycle says `cached` (its newest
   * run finished and left the cached marker, and no newer run is under way), by the one rule
   * lifecycleAfter. One pass over the runs for the whole page, so a listing costs one pass, not one
   * per record.
   */
  async withCached<T extends { uuid: string }>(ctx: RequestContext, items: T[]): Promise<Array<T & { cached: boolean }>> {
    const newest = await this.newestRuns(ctx, items.map((item) => item.uuid));
    // A record whose folder its create made just now has no cached marker in it: no stat of the
    // disk for it (a failed stat through the thread pool was a tenth of a create's gateway CPU).
    return Promise.all(
      items.map(async (item) => ({
        ...item,
        cached: (await this.lifecycleAfter(ctx, item.uuid, newest.get(item.uuid), this.interfaces.inFreshFolder(item))).status === 'cached',
      })),
    );
  }

  /** The newest run of each of these interfaces that has one, as `list` orders them (RunStore.newestOf: one pass, no sort). */
  private async newestRuns(ctx: RequestContext, uuids: string[]): Promise<Map<string, ExecutionInfo>> {
    const found = new Map<string, ExecutionInfo>();
    await Promise.all([...(await ctx.project.runs.newestOf(uuids))].map(async ([uuid, run]) => found.set(uuid, await this.info(ctx, run.uuid))));
    return found;
  }

  /** The lifecycle of an interface whose newest run is `latest` (undefined: it never ran); `unmarked`: its folder is known to hold no cached marker. */
  private async lifecycleAfter(ctx: RequestContext, uuid: string, latest: ExecutionInfo | undefined, unmarked = false): Promise<{ status: Lifecycle; execution_uuid: string | null }> {
    if (latest?.is_active || latest?.status === 'pending') return { status: 'running', execution_uuid: latest.uuid };
    if (!unmarked && (await ctx.project.runs.cached(uuid))) return { status: 'cached', execution_uuid: latest?.uuid ?? null };
    if (latest && latest.status !== 'finished') return { status: 'failed', execution_uuid: latest.uuid };
    return { status: 'draft', execution_uuid: latest?.uuid ?? null };
  }

  /**
   * A search page with each item's runs summed up (include_status): its lifecycle status (and
   * `cached`, as InterfaceInfo has it), its newest execution and how many executions ran it.
   */
  async withRunStatus<T extends { uuid: string }>(
    ctx: RequestContext,
    items: T[],
  ): Promise<Array<T & { status: Lifecycle; execution_uuid: string | null; run_count: number; cached: boolean }>> {
    return Promise.all(
      items.map(async (item) => {
        const runs = await this.list(ctx, { interface: item.uuid, limit: Infinity });
        const lifecycle = await this.lifecycleAfter(ctx, item.uuid, runs[0]);
        return { ...item, ...lifecycle, cached: lifecycle.status === 'cached', run_count: runs.length };
      }),
    );
  }
}
