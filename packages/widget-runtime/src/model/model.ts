/**
 * The widget model: anywidget's AnyModel over Portico's widget frames, with no transport in it.
 * It owns the state a widget sees and the bookkeeping that keeps it equal to the server's:
 *
 * - `confirmed`: the last state the gateway reported (widget_state, widget_change): the truth.
 * - `dirty`: keys `set()` locally and not yet saved.
 * - `queued`: saved changes not sent yet (offline, or unacknowledged when the socket dropped),
 *   merged into one object so they go out as one `widget_set`.
 * - `inflight`: each sent `widget_set` by frame id, until its `widget_change` (ack) or `error`.
 *
 * A key with a local write in any of the three keeps its local value when the server reports
 * another one, so the echo of an older set never flickers over a newer one; once the last write
 * of a key is settled the visible value is the server's (normalized) one. A rejected set rolls
 * its keys back to the confirmed values and emits change events for them.
 *
 * Values may be binary (ArrayBuffer, DataView, typed arrays), as in anywidget: they leave as
 * buffers with `buffer_paths` and come back as DataViews (the session places them).
 */
import type { AnyModel } from '@anywidget/types';
import { bytesOf, removeBuffers } from './buffers.js';
import { WidgetRuntimeError } from '../errors.js';
import { DEFAULT_LIMITS } from '../limits.js';
import type { FrameId, JsonObject } from '@portico/protocol';
import type { ModelFrame } from '../protocol.js';
import { deepEqual } from './equal.js';
import { Events, type EventHandler } from './events.js';

/** Where the model's frames go; the session implements it. */
export interface ModelOutbox {
  /** Sends now and returns the frame's id, or returns undefined when not connected. */
  send(frame: ModelFrame): FrameId | undefined;
}

export type WidgetManager = AnyModel['widget_manager'];

/** What widget code receives: AnyModel plus Jupyter's `model_id`. */
export interface PorticoModel extends AnyModel {
  readonly model_id: string;
}

export interface WidgetModelOptions {
  outbox: ModelOutbox;
  widgetManager: WidgetManager;
  /** `send()` calls kept while offline (default LIMITS.offlineQueueMessages). */
  offlineQueueMessages?: number;
}

export class WidgetModel implements PorticoModel {
  /** The interface uuid; `widget_manager.get_model(model_id)` finds this model. */
  readonly model_id: string;
  readonly widget_manager: WidgetManager;

  readonly #events = new Events(this);
  readonly #outbox: ModelOutbox;
  readonly #maxQueuedMessages: number;
  #state: JsonObject = {};
  #confirmed: JsonObject = {};
  readonly #dirty = new Set<string>();
  #queued: JsonObject = {};
  readonly #inflight = new Map<FrameId, JsonObject>();
  readonly #queuedMessages: ModelFrame[] = [];

  constructor(uuid: string, options: WidgetModelOptions) {
    this.model_id = uuid;
    this.#outbox = options.outbox;
    this.widget_manager = options.widgetManager;
    this.#maxQueuedMessages = options.offlineQueueMessages ?? DEFAULT_LIMITS.offlineQueueMessages;
  }

  // ---- AnyModel ------------------------------------------------------------------------------

  get(key: string): any {
    return this.#state[key];
  }

  /**
   * Local update: emits `change:<key>` per changed key, then `change`, synchronously (as
   * Backbone does in Jupyter). Every key set is saved by the next `save_changes()`, equal or not
   * (as marimo does): a widget that mutates the object `get()` returned in place and sets it back
   * has changed it, though no comparison can tell. Also accepts Backbone's `set({key: value, …})`.
   */
  set(key: string | JsonObject, value?: unknown): void {
    const attrs = typeof key === 'string' ? { [key]: value } : key;
    const changed = this.#assign(attrs);
    for (const k of Object.keys(attrs)) {
      this.#state[k] = attrs[k]; // the caller's object, even when equal: later in-place edits are its
      this.#dirty.add(k);
    }
    this.#emitChanges(changed);
  }

  /** Sends the keys set since the last save as one `widget_set` (queued while offline). */
  save_changes(): void {
    if (this.#dirty.size === 0) return;
    for (const key of this.#dirty) this.#queued[key] = this.#state[key];
    this.#dirty.clear();
    this.flush();
  }

  on(eventName: string, callback: EventHandler, context?: unknown): void {
    this.#events.on(eventName, callback, context);
  }

  off(eventName?: string | null, callback?: EventHandler | null, context?: unknown): void {
    this.#events.off(eventName, callback, context);
  }

  /**
   * Custom message to the interface (`widget_msg`); `buffers` (ArrayBuffers or any views) go as
   * binary frames, raw. `callbacks` (Jupyter kernel-message callbacks) has no meaning here and is
   * ignored, as in marimo. While offline, messages are kept with a copy of their buffers (up to
   * the limit, then `queue_full` is thrown) and sent after resync.
   */
  send(content: unknown, _callbacks?: unknown, buffers?: ArrayBuffer[] | ArrayBufferView[]): void {
    const views = (buffers ?? []).map((buffer) => bytesOf(buffer));
    const frame: ModelFrame = views.length > 0 ? { type: 'widget_msg', content, buffers: views } : { type: 'widget_msg', content };
    if (this.#queuedMessages.length === 0 && this.#outbox.send(frame) !== undefined) return;
    if (this.#queuedMessages.length >= this.#maxQueuedMessages) {
      throw new WidgetRuntimeError('queue_full', `${this.#maxQueuedMessages} messages are already waiting for the connection`);
    }
    // The widget may reuse its buffers once send() returns, as it may in Jupyter: keep the bytes as they are now.
    this.#queuedMessages.push(views.length > 0 ? { ...frame, buffers: views.map((view) => view.slice()) } : frame);
  }

  /**
   * @internal The model as one view (or one initialize) sees it: listeners it registers are
   * removed when `signal` aborts, and its `off()` only reaches its own listeners, so a view
   * cleaning up with `model.off()` cannot unsubscribe its siblings.
   */
  scoped(signal: AbortSignal): PorticoModel {
    const scope = {};
    const events = this.#events;
    signal.addEventListener('abort', () => events.off(null, null, undefined, scope), { once: true });
    return {
      model_id: this.model_id,
      widget_manager: this.widget_manager,
      get: (key: string) => this.get(key),
      set: ((key: string | JsonObject, value?: unknown) => this.set(key, value)) as PorticoModel['set'],
      save_changes: () => this.save_changes(),
      send: (content: unknown, callbacks?: unknown, buffers?: ArrayBuffer[] | ArrayBufferView[]) => this.send(content, callbacks, buffers),
      on: (name: string, callback: EventHandler, context?: unknown) => {
        if (!signal.aborted) events.on(name, callback, context, scope);
      },
      off: (name?: string | null, callback?: EventHandler | null, context?: unknown) => events.off(name, callback, context, scope),
    };
  }

  // ---- sync, driven by the session -----------------------------------------------------------

  /** @internal The full state from `widget_state` (first load and every resync). */
  resync(state: JsonObject): void {
    this.#confirmed = { ...state };
    this.#update(this.#withoutPending(state));
  }

  /**
   * @internal A `widget_change`: `id` is set on the setter's own copy, which acknowledges that
   * `widget_set`. Keys of the acknowledged set the server left out keep the confirmed value.
   */
  applyChanges(changes: JsonObject, id?: FrameId): void {
    const acked = id === undefined ? undefined : this.#inflight.get(id);
    if (acked) this.#inflight.delete(id!);
    Object.assign(this.#confirmed, changes);
    const visible = this.#withoutPending(changes);
    for (const key of Object.keys(acked ?? {})) {
      if (!(key in changes) && !this.#isPending(key)) visible[key] = this.#confirmed[key];
    }
    this.#update(visible);
  }

  /** @internal An `error` answering frame `id`: rolls back that set. False if `id` was no set. */
  reject(id: FrameId): boolean {
    const changes = this.#inflight.get(id);
    if (!changes) return false;
    this.#inflight.delete(id);
    const restored: JsonObject = {};
    for (const key of Object.keys(changes)) {
      if (!this.#isPending(key)) restored[key] = this.#confirmed[key];
    }
    this.#update(restored);
    return true;
  }

  /** @internal A `widget_msg` from the interface: `msg:custom` with DataView buffers. */
  receiveMessage(content: unknown, buffers: DataView[]): void {
    this.#events.trigger('msg:custom', content, buffers);
  }

  /**
   * @internal The socket dropped: sets still unacknowledged may or may not have been applied,
   * so they are queued again (older first) and resent after the resync; resending a value
   * the server already has is a no-op.
   */
  disconnected(): void {
    if (this.#inflight.size === 0) return;
    this.#queued = Object.assign({}, ...this.#inflight.values(), this.#queued) as JsonObject;
    this.#inflight.clear();
  }

  /** @internal Sends what was queued: the changes as one `widget_set`, then the messages. */
  flush(): void {
    if (Object.keys(this.#queued).length > 0) {
      const changes = this.#queued;
      const { value, paths, buffers } = removeBuffers(changes);
      const id = this.#outbox.send(paths.length > 0 ? { type: 'widget_set', changes: value, buffer_paths: paths, buffers } : { type: 'widget_set', changes });
      if (id === undefined) return;
      this.#queued = {};
      this.#inflight.set(id, changes);
    }
    while (this.#queuedMessages.length > 0) {
      if (this.#outbox.send(this.#queuedMessages[0]!) === undefined) return;
      this.#queuedMessages.shift();
    }
  }

  // ---- internals -----------------------------------------------------------------------------

  #isPending(key: string): boolean {
    if (this.#dirty.has(key) || key in this.#queued) return true;
    for (const changes of this.#inflight.values()) if (key in changes) return true;
    return false;
  }

  #withoutPending(values: JsonObject): JsonObject {
    const kept: JsonObject = {};
    for (const [key, value] of Object.entries(values)) if (!this.#isPending(key)) kept[key] = value;
    return kept;
  }

  /** Writes the values that differ and returns their keys. */
  #assign(values: JsonObject): string[] {
    const changed: string[] = [];
    for (const [key, value] of Object.entries(values)) {
      if (deepEqual(this.#state[key], value)) continue;
      this.#state[key] = value;
      changed.push(key);
    }
    return changed;
  }

  #update(values: JsonObject): void {
    this.#emitChanges(this.#assign(values));
  }

  /** Backbone's order: `change:<key>` (model, value) for each key, then one `change` (model). */
  #emitChanges(keys: string[]): void {
    if (keys.length === 0) return;
    for (const key of keys) this.#events.trigger(`change:${key}`, this, this.#state[key]);
    this.#events.trigger('change', this);
  }
}
