/**
 * Widgets, transport-free. The Python instance is the source of truth for a widget's state:
 * a client's changes go through its `widget_update`, and the normalized changes it returns reach
 * every client attached to the interface. Binary values of state and changes travel apart as
 * raw buffers with `buffer_paths` (where each goes), message buffers as raw buffers, as in
 * anywidget; every widget frame's buffers are bounded together by `--widget-buffer-max`. The front-end module (anywidget ES module) and its
 * stylesheet are served with strong ETags, and a change of either file on disk tells every
 * attached client to hot-reload.
 */
import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { LIMITS } from '../config/constants.js';
import { PorticoError } from '../errors.js';
import { withoutEffects, type KernelPool } from '../kernel/pool.js';
import type { CallOutcome, CallTarget, WidgetAsset, WidgetRequest } from '../kernel/worker.js';
import type { WaitListener } from '../kernel/waiting.js';
import type { RequestContext } from './context.js';
import { explainUnknownModule } from './project.js';
import type { Listener, Project } from './projects.js';
import type { RemoteModules } from './remotes.js';

/** The widget hooks a `call` may name: the widget service answers them (`callHook`), not the method table. */
export const WIDGET_HOOKS: ReadonlySet<string> = new Set(['widget_state', 'widget_update', 'widget_message']);

export type AssetName = 'esm' | 'css';

export const ASSET_TYPES: Record<AssetName, string> = {
  esm: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};

export interface WidgetAssetBody {
  body: Buffer;
  /** Strong entity tag: the quoted SHA-256 of the body (first 32 hex characters). */
  etag: string;
  contentType: string;
  /** For `esm`: whether the widget also has a stylesheet (clients fetch it only then). */
  hasStylesheet: boolean;
}

/** Binary buffers of a widget frame; for state and changes, `buffer_paths` says where each one goes. */
export interface WidgetBuffers {
  buffer_paths?: unknown[];
  buffers: Buffer[];
}

export type WidgetState = { state: Record<string, unknown> } & WidgetBuffers;
export type WidgetChanges = { changes: Record<string, unknown> } & WidgetBuffers;
export type WidgetReply = { reply: unknown; has_reply: boolean; buffers: Buffer[] };

/**
 * Throws `payload_too_large` when `buffers` hold more than `max` bytes (or more than
 * LIMITS.widgetBuffersMax buffers) together; `what` names the frame for the message.
 */
export function checkWidgetBuffers(buffers: readonly { byteLength: number }[], max: number, what: string): void {
  const total = buffers.reduce((sum, b) => sum + b.byteLength, 0);
  if (total > max) throw new PorticoError('payload_too_large', `${what} carries ${total} bytes of buffers; at most ${max} are allowed (--widget-buffer-max)`);
  if (buffers.length > LIMITS.widgetBuffersMax) throw new PorticoError('payload_too_large', `${what} carries ${buffers.length} buffers; at most ${LIMITS.widgetBuffersMax} are allowed`);
}

/**
 * Throws `invalid_argument` unless `paths` (a frame's buffer_paths) place its `count` buffers in
 * `changes`: one path per buffer, each leading through existing keys and list indices to a key of
 * an object or an index of a list. The worker checks the same (`put_buffers`); checking here tells
 * the client what is wrong before anything reaches Python.
 */
function checkBufferPaths(changes: Record<string, unknown>, paths: readonly unknown[] | undefined, count: number): void {
  const given = paths?.length ?? 0;
  if (given !== count) {
    const buffers = `${count} buffer${count === 1 ? '' : 's'}`;
    const message = !paths
      ? `widget_set carries ${buffers} but no buffer_paths: give one path per buffer saying where it goes in changes, e.g. [["image"]]`
      : `widget_set has ${given} buffer_paths for ${buffers}: give one path per buffer, in buffer order`;
    throw new PorticoError('invalid_argument', message);
  }
  for (const path of paths ?? []) {
    if (!leadsInto(changes, path)) throw new PorticoError('invalid_argument', `widget_set buffer path ${JSON.stringify(path)} does not lead into its changes`);
  }
}

/** Whether `path` (keys and list indices) ends at a key of an object or an index of a list inside `value`. */
function leadsInto(value: unknown, path: unknown): boolean {
  if (!Array.isArray(path) || path.length === 0) return false;
  let node = value;
  for (const [i, step] of path.entries()) {
    const last = i === path.length - 1;
    if (Array.isArray(node)) {
      if (typeof step !== 'number' || !Number.isInteger(step) || step < 0 || step >= node.length) return false;
    } else if (typeof node === 'object' && node !== null) {
      if (typeof step !== 'string' || (!last && !Object.hasOwn(node, step))) return false;
    } else {
      return false;
    }
    if (!last) node = (node as Record<string | number, unknown>)[step];
  }
  return true;
}

/** How long a burst of file events is gathered before one reload goes out (editors write in steps). */
const RELOAD_DEBOUNCE_MS = 50;

interface Watched {
  watcher: FSWatcher;
  /** File name in the folder → what it serves and its last served hash. */
  files: Map<string, Array<{ project: Project; module: string; asset: AssetName; etag: string }>>;
  timers: Map<string, NodeJS.Timeout>;
}

export class WidgetService {
  /** Folders watched for hot reload, one watcher per folder (renames of a file are seen too). */
  private readonly watched = new Map<string, Watched>();

  constructor(
    private readonly pool: KernelPool,
    private readonly remotes: RemoteModules,
    /** Most bytes of buffers one widget frame carries (`--widget-buffer-max`). */
    readonly bufferMax: number = LIMITS.widgetBufferMaxDefault,
  ) {}

  /**
   * The widget's full state (its `widget_state()`), binary values as buffers. Here and in `update`
   * and `message`, `onWaiting` hears where the worker's placement stands while it starts (a
   * pending Slurm job: the state read again after `allocation_ended` waits for a new allocation).
   */
  async state(ctx: RequestContext, record: CallTarget, signal?: AbortSignal, onWaiting?: WaitListener): Promise<WidgetState> {
    const { payload, buffers } = await this.run(ctx, record, 'widget_get', {}, signal, onWaiting);
    return { ...(payload as { state: Record<string, unknown>; buffer_paths?: unknown[] }), buffers };
  }

  /**
   * Applies a client's changes through `widget_update`; the normalized changes go to every
   * other attached client (`except` is the caller, which answers its own client) and are returned.
   * Changes run after every set and message to this instance that came before (one lane per instance).
   */
  async update(ctx: RequestContext, record: CallTarget, changes: WidgetChanges, except?: Listener, signal?: AbortSignal, onWaiting?: WaitListener): Promise<WidgetChanges> {
    checkWidgetBuffers(changes.buffers, this.bufferMax, 'widget_set');
    checkBufferPaths(changes.changes, changes.buffer_paths, changes.buffers.length);
    const { payload, buffers } = await this.run(ctx, record, 'widget_set', changes, signal, onWaiting);
    const normalized = { ...(payload as { changes: Record<string, unknown>; buffer_paths?: unknown[] }), buffers };
    const { buffers: _, ...fields } = normalized;
    ctx.project.push(record.uuid, { type: 'widget_change', payload: fields, buffers }, except);
    return normalized;
  }

  /**
   * A custom message from a front end, with its buffers; the reply (when `widget_message`
   * returns one, with buffers when it is a WidgetReply) goes back to it.
   */
  async message(ctx: RequestContext, record: CallTarget, content: unknown, buffers: Buffer[], signal?: AbortSignal, onWaiting?: WaitListener): Promise<WidgetReply> {
    checkWidgetBuffers(buffers, this.bufferMax, 'widget_msg');
    const outcome = await this.run(ctx, record, 'widget_msg', { content, buffers }, signal, onWaiting);
    return { ...(outcome.payload as { reply: unknown; has_reply: boolean }), buffers: outcome.buffers };
  }

  /**
   * A widget hook called by name (WIDGET_HOOKS), as a client of the reference server calls them
   * with `call`, over REST or WebSocket: `widget_state()` (its state), `widget_update(changes)`
   * (the normalized changes, pushed to every attached client) and `widget_message(content)` (its
   * reply). No buffers travel this way: binary values read as null.
   */
  async callHook(ctx: RequestContext, record: CallTarget, method: string, args: unknown[], kwargs: Record<string, unknown>, signal?: AbortSignal): Promise<unknown> {
    const arg = (name: string) => (args.length ? args[0] : kwargs[name]);
    switch (method) {
      case 'widget_state':
        return (await this.state(ctx, record, signal)).state;
      case 'widget_update': {
        const changes = arg('changes');
        if (!changes || typeof changes !== 'object' || Array.isArray(changes)) {
          throw new PorticoError('invalid_argument', 'widget_update takes one object of changes (args: [{…}] or kwargs: {changes: {…}})');
        }
        return (await this.update(ctx, record, { changes: changes as Record<string, unknown>, buffers: [] }, undefined, signal)).changes;
      }
      case 'widget_message':
        return (await this.message(ctx, record, arg('content'), [], signal)).reply ?? null;
      default:
        throw new PorticoError('not_found', `'${method}' is not a widget hook`);
    }
  }

  private async run(
    ctx: RequestContext,
    record: CallTarget,
    op: 'widget_get' | 'widget_set' | 'widget_msg',
    extra: Partial<WidgetRequest>,
    signal?: AbortSignal,
    onWaiting?: WaitListener,
  ): Promise<{ payload: unknown; buffers: Buffer[] }> {
    const worker = await this.pool.getFor(ctx.project.dir, ctx.python, record.module, onWaiting);
    const outcome: CallOutcome = await worker.widget(op, { uuid: record.uuid, module: record.module, config: record.config, ...extra }, signal);
    if (!outcome.ok) throw outcome.error;
    const buffers = outcome.buffers ?? [];
    checkWidgetBuffers(buffers, this.bufferMax, `The answer of ${op === 'widget_get' ? 'widget_state' : op === 'widget_set' ? 'widget_update' : 'widget_message'}()`);
    return { payload: outcome.payload, buffers };
  }

  /**
   * The module's widget front end (`esm`) or stylesheet (`css`): inline source or a file next
   * to the module, read fresh on every request so that edits show without a restart.
   */
  async asset(ctx: RequestContext, module: string, asset: AssetName): Promise<WidgetAssetBody> {
    await this.remotes.ensure(ctx.project.dir, module);
    const sources = await withoutEffects(this.pool, ctx.project.dir, ctx.python, (worker) =>
      worker.widgetAssets(module).catch((err: unknown) => explainUnknownModule(worker, module, err)),
    );
    const source: WidgetAsset | null = sources[asset];
    if (!source) throw new PorticoError('not_found', `Module '${module}' has no widget ${asset === 'esm' ? 'module' : 'stylesheet'}`);
    let body: Buffer;
    if ('inline' in source) {
      body = Buffer.from(source.inline, 'utf8');
    } else {
      body = await readFile(source.path).catch(() => {
        throw new PorticoError('not_found', `The widget ${asset} file of '${module}' is missing`);
      });
    }
    const etag = entityTag(body);
    if ('path' in source) this.watch(ctx.project, module, asset, source.path, etag);
    return { body, etag, contentType: ASSET_TYPES[asset], hasStylesheet: sources.css !== null };
  }

  /** Stops every watcher (gateway shutdown). */
  close(): void {
    for (const watched of this.watched.values()) {
      watched.watcher.close();
      for (const timer of watched.timers.values()) clearTimeout(timer);
    }
    this.watched.clear();
  }

  private watch(project: Project, module: string, asset: AssetName, file: string, etag: string): void {
    const dir = path.dirname(file);
    const name = path.basename(file);
    let watched = this.watched.get(dir);
    if (!watched) {
      let watcher: FSWatcher;
      try {
        watcher = watch(dir, { persistent: false }, (_event, changed) => changed && this.changed(dir, changed.toString()));
      } catch {
        return; // no hot reload on a file system without watch support; serving still works
      }
      watcher.on('error', () => undefined);
      watched = { watcher, files: new Map(), timers: new Map() };
      this.watched.set(dir, watched);
    }
    const entries = watched.files.get(name) ?? [];
    const known = entries.find((e) => e.project === project && e.module === module && e.asset === asset);
    if (known) known.etag = etag;
    else entries.push({ project, module, asset, etag });
    watched.files.set(name, entries);
  }

  private changed(dir: string, name: string): void {
    const watched = this.watched.get(dir);
    if (!watched?.files.has(name)) return;
    clearTimeout(watched.timers.get(name));
    watched.timers.set(
      name,
      setTimeout(async () => {
        watched.timers.delete(name);
        const body = await readFile(path.join(dir, name)).catch(() => undefined);
        if (!body) return; // mid-save (renamed away): the rename back fires again
        const etag = entityTag(body);
        for (const entry of watched.files.get(name) ?? []) {
          if (entry.etag === etag) continue;
          entry.etag = etag;
          entry.project.pushToModule(entry.module, { type: 'widget_reload', payload: { asset: entry.asset, etag } });
        }
      }, RELOAD_DEBOUNCE_MS),
    );
  }
}

function entityTag(body: Buffer): string {
  return `"${createHash('sha256').update(body).digest('hex').slice(0, 32)}"`;
}
