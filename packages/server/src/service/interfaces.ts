/**
 * Interface operations, transport-free: create or attach (content-addressed, idempotent in
 * uuid), get, list, delete, and remote calls (plain or streaming). REST and WebSocket are thin
 * adapters over these functions.
 */
import type { LogLine } from '../ops/logger.js';
import { LIMITS } from '../config/constants.js';
import { PorticoError, toPorticoError } from '../errors.js';
import type { Metrics } from '../ops/metrics.js';
import { withoutEffects, type KernelPool } from '../kernel/pool.js';
import type { WaitListener } from '../kernel/waiting.js';

// A request that waits for a pending Slurm job hears where it stands (ws/session.ts sends it as `waiting`).
export type { WaitListener, WaitNotice } from '../kernel/waiting.js';
import { Worker, type CallOutcome, type Display, type ItemSink, type OutputSink, type Settled } from '../kernel/worker.js';

export type { CallOutcome };
import { withCanonicalSort, type FindRequest, type SearchItemsResponse } from '../contract/search.js';
import { interfaceUuid } from '../store/identity.js';
import { madeInFreshFolder } from '../store/files.js';
import { INTERFACE_KIND, type InterfaceRecord, type RecordPatch } from '../store/store.js';
import { cliLine } from './cli-line.js';
import { explainUnknownModule } from './project.js';
import type { RemoteModules } from './remotes.js';
import type { RequestContext } from './context.js';
import { WIDGET_HOOKS, type WidgetService } from './widgets.js';

/**
 * A record as clients see it. Where the spec is silent it follows the reference server:
 * `predicate` is null when nothing was folded in (a reference client shows `predicate ?? config`
 * as the identity), and `cli` is a `portico get …` line that, pasted into a shell, gives back this
 * very interface: its module and version when they are its whole identity, else its uuid.
 */
export type InterfaceInfo = Omit<InterfaceRecord, 'predicate'> & { predicate: Record<string, unknown> | null; cli: string };

/**
 * What clients see of a record, per record object. A REST call attaches to its record on every
 * request: hashing it again to know whether its uuid is its content (canonical JSON + SHA-256)
 * was the largest share of the gateway's allocations per call, and the copy with its `cli` line
 * a visible share of its busy time. Safe to keep per object: a stored record never changes (an
 * update makes a new object), nothing changes the answer it is given (the handlers read it and
 * serialize it), and a store that hands out fresh objects simply never hits.
 */
const infos = new WeakMap<InterfaceRecord, InterfaceInfo>();

/**
 * The content uuid of a resolution with nothing folded in, per resolution object: the worker
 * hands back the same object for a cached resolution until a source edit invalidates it, so
 * an invalidated resolution takes its uuid along.
 */
const contentUuids = new WeakMap<object, string>();

function contentUuid(resolved: { module: string; config: Record<string, unknown> }, predicate: Record<string, unknown>): string {
  if (Object.keys(predicate).length > 0) return interfaceUuid(resolved.module, resolved.config, predicate);
  let uuid = contentUuids.get(resolved);
  if (uuid === undefined) contentUuids.set(resolved, (uuid = interfaceUuid(resolved.module, resolved.config, predicate)));
  return uuid;
}

/** The answers of creates that made their record's folder (InterfaceService.inFreshFolder). */
const madeFresh = new WeakSet<object>();

function publicInfo(record: InterfaceRecord): InterfaceInfo {
  let info = infos.get(record);
  if (info === undefined) infos.set(record, (info = describe(record)));
  return info;
}

/** `byContent`: whether the uuid is the record's content hash, when the caller knows it (else it is hashed). */
function describe(record: InterfaceRecord, byContent?: boolean): InterfaceInfo {
  const folded = Object.keys(record.predicate).length > 0;
  byContent ??= !folded && record.uuid === interfaceUuid(record.module, record.config, record.predicate);
  return { ...record, predicate: folded ? record.predicate : null, cli: byContent ? cliLine(record.module, record.version) : cliLine(record.uuid, []) };
}

export interface CreateInput {
  target: string;
  version?: unknown[];
  /** What context interfaces fold into the identity (dispatch sets it). */
  predicate?: Record<string, unknown>;
  uuid?: string | null;
  label?: string | null;
  meta?: Record<string, unknown>;
}

export interface CallInput {
  method: string;
  args?: unknown[];
  kwargs?: Record<string, unknown>;
}

export interface CallOptions {
  signal?: AbortSignal | undefined;
  /** Streaming calls deliver items here; without it a streaming method is refused. */
  onItem?: ItemSink | undefined;
  /** What the call prints or logs, as it happens (also written to the gateway log). */
  onOutput?: OutputSink | undefined;
  /** While the call waits for its worker's pending Slurm job: where the job stands, on every change. */
  onWaiting?: WaitListener | undefined;
  timeoutMs?: number | undefined;
}

export interface ResolveResult {
  module: string;
  /** The normalized version list. */
  version: unknown[];
  config: Record<string, unknown>;
  /** What contexts folded in; null when nothing was (as in InterfaceInfo). */
  predicate: Record<string, unknown> | null;
  /** The uuid `create` would give it (nothing is materialized). */
  uuid: string;
  /** A `portico get …` line that creates exactly this uuid. */
  cli: string;
}


/**
 * The records clients used lately through this gateway, by project and uuid, the most recent last: what a
 * call or connect finds its record in while the index database cannot be reached, so that calls
 * to live instances go on (docs/operating/several-gateways.md). Consulted only then; bounded.
 */
class RecentRecords {
  private readonly records = new Map<string, InterfaceInfo>();
  private last: InterfaceInfo | undefined;

  constructor(private readonly max: number) {}

  note(project: string, info: InterfaceInfo): InterfaceInfo {
    // Already the most recent (a run of calls on one interface): nothing to move.
    if (this.last !== info) {
      const key = `${project}\0${info.uuid}`;
      this.records.delete(key);
      this.records.set(key, info);
      this.last = info;
      if (this.records.size > this.max) this.records.delete(this.records.keys().next().value!);
    }
    return info;
  }

  get(project: string, uuid: string): InterfaceInfo | undefined {
    return this.records.get(`${project}\0${uuid}`);
  }
}

export class InterfaceService {
  private readonly recent = new RecentRecords(LIMITS.recentRecords);

  constructor(
    private readonly pool: KernelPool,
    private readonly remotes: RemoteModules,
    private readonly widgets: WidgetService,
    private readonly metrics?: Metrics,
    /** Where a call's printed output is written besides its caller: the gateway log, with interface and method. */
    private readonly log?: LogLine,
  ) {}

  /**
   * Resolves a version against a module's Config; materializes nothing. Every failure to resolve
   * is a 400 with issues (the spec's resolve contract), an unknown module too.
   */
  async resolve(ctx: RequestContext, target: string, version: unknown[], predicate: Record<string, unknown> = {}): Promise<ResolveResult> {
    await this.remotes.ensure(ctx.project.dir, target);
    const resolved = await withoutEffects(this.pool, ctx.project.dir, ctx.python, (worker) => worker.resolve(target, version).catch((err: unknown) => explainUnknownModule(worker, target, err)));
    return {
      module: resolved.module,
      version: resolved.version,
      config: resolved.config,
      predicate: Object.keys(predicate).length ? predicate : null,
      uuid: interfaceUuid(resolved.module, resolved.config, predicate),
      cli: cliLine(resolved.module, resolved.version),
    };
  }

  /**
   * Materializes an interface, or returns the existing one unchanged: `uuid` (client-supplied)
   * or `target` naming an existing record attaches to it; otherwise `target` is a module whose
   * version is resolved by Python and whose uuid is the content hash of the result. While that
   * waits for a worker whose Slurm job is pending, `onWaiting` hears where the job stands.
   */
  async create(ctx: RequestContext, input: CreateInput, onWaiting?: WaitListener): Promise<InterfaceInfo> {
    try {
      return this.recent.note(ctx.project.dir, await this.createOrFind(ctx, input, onWaiting));
    } catch (err) {
      // The index away: an interface used lately is still known here (its calls go on); a new one waits.
      if (!(err instanceof PorticoError && err.code === 'store_unavailable')) throw err;
      const known = this.recent.get(ctx.project.dir, input.uuid ?? input.target) ?? (await this.recentByContent(ctx, input, onWaiting));
      if (!known) throw err;
      return known;
    }
  }

  /** The recently used interface `input` resolves to, by its content uuid (the worker resolves without the index). */
  private async recentByContent(ctx: RequestContext, input: CreateInput, onWaiting?: WaitListener): Promise<InterfaceInfo | undefined> {
    if (input.uuid) return undefined;
    try {
      const resolved = await withoutEffects(this.pool, ctx.project.dir, ctx.python, (worker) => worker.resolve(input.target, input.version ?? []), onWaiting);
      return this.recent.get(ctx.project.dir, contentUuid(resolved, input.predicate ?? {}));
    } catch {
      return undefined;
    }
  }

  private async createOrFind(ctx: RequestContext, input: CreateInput, onWaiting?: WaitListener): Promise<InterfaceInfo> {
    const { store } = ctx.project;
    const named = input.uuid ? await store.get(input.uuid) : undefined;
    if (named) return publicInfo(named);
    const version = input.version ?? [];
    const predicate = input.predicate ?? {};
    // A version the worker resolved before (a REST call by module name, every time after its
    // first) with nothing of the caller's own to store (no uuid, no label, meta {}): the record
    // its content names is looked up beside the target, in one round trip on PostgreSQL, and is
    // the answer, with no record built, checked or offered to insert. A version new to the worker
    // is most likely a new record: it goes straight to insert.
    const remembered = this.pool.peek(ctx.project.dir, ctx.python)?.resolvedNow(input.target, version);
    const ownless = input.uuid == null && input.label == null && (input.meta === undefined || Object.keys(input.meta).length === 0);
    const [existing, attached] = await Promise.all([store.get(input.target), remembered && ownless ? store.existing(contentUuid(remembered, predicate)) : undefined]);
    if (existing) return publicInfo(existing);
    if (attached) return publicInfo(attached);

    // What is known already is taken without a promise (no remotes to fetch, a remembered resolution).
    const ensuring = this.remotes.ensure(ctx.project.dir, input.target);
    if (ensuring) await ensuring;
    const resolved =
      remembered ??
      (await withoutEffects(
        this.pool,
        ctx.project.dir,
        ctx.python,
        (worker) => worker.resolve(input.target, version).catch((err: unknown) => explainUnknownModule(worker, input.target, err)),
        onWaiting,
      ));
    const uuid = input.uuid ?? contentUuid(resolved, predicate);
    const record: InterfaceRecord = {
      uuid,
      module: resolved.module,
      kind: INTERFACE_KIND,
      // The worker names the class `kind`, as the records did before class_name.
      class_name: resolved.kind,
      config: resolved.config,
      predicate,
      version: resolved.version,
      label: input.label ?? null,
      meta: input.meta ?? {},
      created_by: ctx.user,
      created_at: new Date().toISOString(),
      archived: false,
    };
    const { record: stored, created } = await store.insert(record);
    if (!created) return publicInfo(stored);
    // Described here, where whether its uuid is its content hash is known (unless the client chose
    // it), and not kept: a description kept for each record created through this gateway would
    // hold one more object per record for as long as the record lives. An attach to it later
    // describes it once.
    const info = describe(stored, input.uuid == null ? Object.keys(predicate).length === 0 : undefined);
    if (madeInFreshFolder(stored)) madeFresh.add(info);
    return info;
  }

  /**
   * Whether `info` is the answer of a create that made its record's folder just now: nothing else
   * is in that folder (no cached marker), which the create's answer then need not ask the disk.
   */
  inFreshFolder(info: object): boolean {
    return madeFresh.has(info);
  }

  async get(ctx: RequestContext, uuid: string): Promise<InterfaceInfo> {
    const record = await ctx.project.store.get(uuid);
    if (!record) throw new PorticoError('not_found', `Interface '${uuid}' not found`);
    return publicInfo(record);
  }

  /** The newest non-archived interfaces. */
  async list(ctx: RequestContext, limit: number = LIMITS.listDefault): Promise<InterfaceInfo[]> {
    return (await ctx.project.store.search({ limit })).items.map(publicInfo);
  }

  /** One page of matches, each record with the reference's `id` and `created_at_ns` beside it. */
  async search(ctx: RequestContext, request: FindRequest): Promise<SearchItemsResponse> {
    const page = await ctx.project.store.search(withCanonicalSort(request));
    return { ...page, items: page.items.map((record) => ({ ...publicInfo(record), id: record.uuid, created_at_ns: Date.parse(record.created_at) * 1e6 })) };
  }

  /** Sets or clears (null) the label; last write wins, nothing else changes. */
  async setLabel(ctx: RequestContext, uuid: string, label: string | null): Promise<InterfaceInfo> {
    return this.patch(ctx, uuid, { label });
  }

  /** Archives (hides from search) or, with `restore`, brings back. */
  async archive(ctx: RequestContext, uuid: string, restore: boolean): Promise<InterfaceInfo> {
    return this.patch(ctx, uuid, { archived: !restore });
  }

  private async patch(ctx: RequestContext, uuid: string, patch: RecordPatch): Promise<InterfaceInfo> {
    const record = await ctx.project.store.update(uuid, patch);
    if (!record) throw new PorticoError('not_found', `Interface '${uuid}' not found`);
    return publicInfo(record);
  }

  /** Removes the record and drops its live instance. */
  async delete(ctx: RequestContext, uuid: string): Promise<void> {
    if (!(await ctx.project.store.delete(uuid))) throw new PorticoError('not_found', `Interface '${uuid}' not found`);
    this.pool.release(ctx.project.dir, uuid);
  }

  /**
   * Drops the live Python instance, in every worker of the project (its record and saved widget
   * state stay: the next use makes it again). Whether one was live; `not_found` without a record.
   */
  async release(ctx: RequestContext, uuid: string): Promise<{ uuid: string; released: boolean }> {
    if (!(await ctx.project.store.get(uuid))) throw new PorticoError('not_found', `Interface '${uuid}' not found`);
    return { uuid, released: this.pool.release(ctx.project.dir, uuid) };
  }

  /**
   * Calls a public method of an interface, or one of its widget hooks by name (WIDGET_HOOKS:
   * the widget service runs those, for REST and WebSocket alike, as a client of the reference
   * server calls them). The one call path: the outcome (the result, the end of a stream whose
   * items went to `onItem`, or the error) goes to `onSettled`, synchronously with the worker's
   * terminal frame, and the request leaves before this returns when the worker runs. A call that
   * outlives `timeoutMs` (default LIMITS.callTimeoutMs) is cancelled and fails with `timeout`;
   * aborting `signal` cancels it. `callForResult` is the promise of it, for those who want one.
   */
  call(ctx: RequestContext, record: InterfaceInfo, input: CallInput, options: CallOptions & { onSettled: Settled }): void {
    if (WIDGET_HOOKS.has(input.method)) return this.callHook(ctx, record, input, options);
    const started = performance.now();
    const metrics = this.metrics;
    const { onSettled } = options;
    const log = this.log;
    const onOutput = options.onOutput;
    const handlers = {
      signal: options.signal,
      timeoutMs: options.timeoutMs ?? LIMITS.callTimeoutMs,
      onItem: options.onItem,
      // The gateway's log has every line a call prints, with its interface and method; the caller gets it too.
      onOutput: (stream: 'stdout' | 'stderr', text: string) => {
        log?.(`${record.module}.${input.method} ${stream}: ${text.replace(/\n$/, '')}`, 'info');
        onOutput?.(stream, text);
      },
      // Counted after the client's frame is sent.
      onSettled: (outcome: CallOutcome) => {
        onSettled(outcome);
        metrics?.call(input.method, outcome.ok ? 'ok' : outcome.error.code, (performance.now() - started) / 1000);
      },
    };
    const request = { target: record, method: input.method, args: input.args ?? [], kwargs: input.kwargs ?? {} };
    // The running worker is taken without an await: calls are the hot path.
    const worker = this.pool.peekFor(ctx.project.dir, ctx.python, record.module);
    if (worker) return worker.call(request, handlers);
    void this.startWorker(ctx, record.module, handlers.onSettled, options.onWaiting).then((started) => {
      if (!(started instanceof Worker)) return;
      try {
        started.call(request, handlers);
      } catch (err) {
        // Thrown before anything was sent (a request JSON cannot carry): with nobody awaiting
        // this chain, the outcome is the only way to say so.
        handlers.onSettled({ ok: false, error: toPorticoError(err) });
      }
    });
  }

  /** A widget hook called by name: its answer as a plain call's outcome. */
  private callHook(ctx: RequestContext, record: InterfaceInfo, input: CallInput, options: CallOptions & { onSettled: Settled }): void {
    this.widgets.callHook(ctx, record, input.method, input.args ?? [], input.kwargs ?? {}, options.signal).then(
      (payload) => options.onSettled({ ok: true, streamed: false, payload }),
      (err: unknown) => options.onSettled({ ok: false, error: toPorticoError(err) }),
    );
  }

  /**
   * Streams the interface's `read(params)` hook: chunks of at most LIMITS.readBlockBytes go to
   * `onChunk` (the worker waits for the returned promise before producing more than its window;
   * the chunk's Buffer is reused once that promise resolves, or at once when it returns nothing);
   * the outcome's payload is the number of bytes sent. Never rejects.
   */
  async read(
    ctx: RequestContext,
    record: InterfaceInfo,
    params: Record<string, unknown>,
    options: { signal?: AbortSignal; onChunk: (chunk: Buffer) => void | Promise<void>; onSettled?: (outcome: CallOutcome) => void },
  ): Promise<CallOutcome> {
    const worker = this.pool.peekFor(ctx.project.dir, ctx.python, record.module) ?? (await this.startWorker(ctx, record.module, options.onSettled));
    if (!(worker instanceof Worker)) return worker;
    return worker.read(
      { uuid: record.uuid, module: record.module, config: record.config, params, block: LIMITS.readBlockBytes },
      { signal: options.signal, onItem: options.onChunk, onSettled: options.onSettled },
    );
  }

  /** Starts the worker for instances of `module` in `ctx` (`onWaiting` hears a pending Slurm job); when it cannot start, the failure is the outcome (also given to `onSettled`). */
  private async startWorker(ctx: RequestContext, module: string, onSettled?: (outcome: CallOutcome) => void, onWaiting?: WaitListener): Promise<Worker | CallOutcome> {
    try {
      return await this.pool.getFor(ctx.project.dir, ctx.python, module, onWaiting);
    } catch (err) {
      const outcome: CallOutcome = { ok: false, error: toPorticoError(err) };
      onSettled?.(outcome);
      return outcome;
    }
  }

  /** The promise of a plain (non-streaming) `call` (REST): its result and display bundle (docs/writing/rich-results.md), or its error thrown. */
  async callForResult(ctx: RequestContext, record: InterfaceInfo, input: CallInput, signal?: AbortSignal): Promise<{ payload: unknown; display?: Display }> {
    const outcome = await new Promise<CallOutcome>((resolve) => this.call(ctx, record, input, { signal, onSettled: resolve }));
    if (!outcome.ok) throw outcome.error;
    return outcome.display ? { payload: outcome.payload, display: outcome.display } : { payload: outcome.payload };
  }
}
