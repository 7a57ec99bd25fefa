/**
 * Backbone-style events, the subset anywidget modules rely on: `on(name, callback, context?)`,
 * `off(name?, callback?, context?)` with Backbone's wildcard rules, space-separated names, and
 * synchronous dispatch with `this` bound to the context (or the owner).
 */

export type EventHandler = (...args: any[]) => void;

interface Listener {
  callback: EventHandler;
  context: unknown;
  /** Tag of the view or initialize() that registered it, so its teardown can remove exactly its own. */
  scope: object | undefined;
}

export class Events {
  readonly #owner: unknown;
  readonly #listeners = new Map<string, Listener[]>();

  constructor(owner: unknown) {
    this.#owner = owner;
  }

  on(names: string, callback: EventHandler, context?: unknown, scope?: object): void {
    if (typeof callback !== 'function') return;
    for (const name of split(names)) {
      // Copy on write: a dispatch in progress keeps iterating the list it started with.
      this.#listeners.set(name, [...(this.#listeners.get(name) ?? []), { callback, context, scope }]);
    }
  }

  /** `off()` removes everything; a missing name, callback, context or scope matches any. */
  off(names?: string | null, callback?: EventHandler | null, context?: unknown, scope?: object): void {
    const matches = (l: Listener) =>
      (callback == null || l.callback === callback) &&
      (context === undefined || l.context === context) &&
      (scope === undefined || l.scope === scope);
    for (const name of names ? split(names) : [...this.#listeners.keys()]) {
      const kept = (this.#listeners.get(name) ?? []).filter((l) => !matches(l));
      if (kept.length > 0) this.#listeners.set(name, kept);
      else this.#listeners.delete(name);
    }
  }

  /**
   * Calls every listener of `name` in registration order. A listener that throws is logged and
   * does not stop the others, nor the sync step that triggered it.
   */
  trigger(name: string, ...args: unknown[]): void {
    for (const { callback, context } of this.#listeners.get(name) ?? []) {
      try {
        callback.apply(context ?? this.#owner, args);
      } catch (error) {
        console.error(`[portico-widget] a '${name}' listener threw`, error);
      }
    }
  }
}

function split(names: string): string[] {
  return names.split(/\s+/).filter(Boolean);
}

/** Typed events for the runtime's own objects (session, handle); `on` returns its unsubscribe. */
export class TypedEvents<Map extends Record<string, unknown[]>> {
  readonly #events = new Events(this);

  on<K extends keyof Map & string>(name: K, callback: (...args: Map[K]) => void): () => void {
    const handler = (...args: unknown[]) => callback(...(args as Map[K]));
    this.#events.on(name, handler);
    return () => this.#events.off(name, handler);
  }

  emit<K extends keyof Map & string>(name: K, ...args: Map[K]): void {
    this.#events.trigger(name, ...args);
  }
}
