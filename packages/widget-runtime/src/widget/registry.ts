/**
 * The models and widgets this runtime hosts in the page, by interface uuid. It backs
 * `widget_manager.get_model(id)` and anywidget's `host.getModel(ref)` / `host.getWidget(ref)`:
 * a lookup waits (up to getModelTimeoutMs, 10 s like anywidget) for the uuid to be mounted, so a
 * parent may ask for a child that is still connecting. Widgets that are not mounted in this page
 * are not fetched on demand; the lookup times out with `timeout`.
 */
import type { Host, ResolvedWidget } from '@anywidget/types';
import { WidgetRuntimeError } from '../errors.js';
import { DEFAULT_LIMITS } from '../limits.js';
import type { PorticoModel, WidgetManager } from '../model/model.js';

/** A key → value map whose readers can wait for a key to appear. */
class WaitMap<T> {
  readonly #values = new Map<string, T>();
  readonly #waiters = new Map<string, Set<(value: T) => void>>();

  set(key: string, value: T): () => void {
    this.#values.set(key, value);
    const waiters = this.#waiters.get(key);
    this.#waiters.delete(key);
    for (const wake of waiters ?? []) wake(value);
    return () => {
      if (this.#values.get(key) === value) this.#values.delete(key);
    };
  }

  wait(key: string, timeoutMs: number, what: string): Promise<T> {
    const value = this.#values.get(key);
    if (value !== undefined) return Promise.resolve(value);
    return new Promise((resolve, reject) => {
      const waiters = this.#waiters.get(key) ?? new Set();
      this.#waiters.set(key, waiters);
      const wake = (found: T) => {
        clearTimeout(timer);
        resolve(found);
      };
      const timer = setTimeout(() => {
        waiters.delete(wake);
        if (waiters.size === 0) this.#waiters.delete(key);
        reject(new WidgetRuntimeError('timeout', `No ${what} '${key}' is mounted in this page (waited ${timeoutMs} ms)`));
      }, timeoutMs);
      waiters.add(wake);
    });
  }
}

/** Accepts a bare uuid, anywidget's `anywidget:<id>` and ipywidgets' `IPY_MODEL_<id>`. */
export function refToUuid(ref: string): string {
  return ref.replace(/^(anywidget:|IPY_MODEL_)/, '');
}

export class WidgetRegistry {
  readonly #models = new WaitMap<PorticoModel>();
  readonly #widgets = new WaitMap<ResolvedWidget>();
  readonly #timeoutMs: number;

  constructor(timeoutMs: number = DEFAULT_LIMITS.getModelTimeoutMs) {
    this.#timeoutMs = timeoutMs;
  }

  /** Registers a model; returns the function that unregisters it. */
  addModel(model: PorticoModel): () => void {
    return this.#models.set(model.model_id, model);
  }

  /** Registers an initialized widget (what `host.getWidget` resolves to). */
  addWidget(uuid: string, widget: ResolvedWidget): () => void {
    return this.#widgets.set(uuid, widget);
  }

  getModel(ref: string): Promise<PorticoModel> {
    return this.#models.wait(refToUuid(ref), this.#timeoutMs, 'model');
  }

  readonly widgetManager: WidgetManager = {
    get_model: (id: string) => this.getModel(id) as Promise<any>,
  };

  readonly host: Host = {
    getModel: (ref: string) => this.getModel(ref) as Promise<any>,
    getWidget: (ref: string) => this.#widgets.wait(refToUuid(ref), this.#timeoutMs, 'widget') as Promise<any>,
  };
}
