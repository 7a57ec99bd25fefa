/**
 * The anywidget front-end module lifecycle over one model, with no DOM or network in it:
 *
 * - the module's default export is `{initialize?, render?}` or a (possibly async) factory
 *   returning one; a bare named `render` export still works, with anywidget's deprecation warning;
 * - `initialize({model, signal, experimental})` runs once per model (per module generation); it
 *   may return a cleanup, or an exports object for `host.getWidget(ref).exports`;
 * - `render({model, el, signal, host, experimental})` runs once per view; it may return a
 *   cleanup, sync or async;
 * - every initialize and every view has its own AbortController: aborting removes the listeners
 *   it registered, then its cleanup is awaited; a cleanup that throws is logged, never breaks teardown;
 * - `reload(module)` (hot reload): the new module is resolved first (a broken one leaves the old
 *   widget running), then view cleanups, initialize cleanup, initialize, and render again into
 *   the same elements, emptied first.
 *
 * Steps run one at a time (a reload waits for a render in progress, and the other way round).
 */
import type { Experimental, Host, Initialize, Render } from '@anywidget/types';
import { WidgetRuntimeError, toRuntimeError } from '../errors.js';
import type { WidgetModel } from '../model/model.js';

export interface WidgetDef {
  initialize?: Initialize;
  render?: Render;
}

type Cleanup = () => unknown;

/** One rendered view; pass it back to `removeView`. */
export interface View {
  readonly el: HTMLElement;
}

interface ViewState extends View {
  controller: AbortController;
  cleanup: Cleanup | undefined;
}

export interface BindingOptions {
  model: WidgetModel;
  host: Host;
  experimental: Experimental;
  /** Failures with no caller to throw to: a view that fails to render again after a hot reload. */
  onViewError?: (error: WidgetRuntimeError, el: HTMLElement) => void;
}

/** Turns an imported module namespace into a widget definition, the way anywidget does. */
export async function resolveWidget(namespace: unknown): Promise<WidgetDef> {
  const ns = (namespace ?? {}) as { default?: unknown; render?: unknown };
  let def: unknown = ns.default;
  if (typeof def === 'function') {
    try {
      def = await (def as () => unknown)();
    } catch (error) {
      throw new WidgetRuntimeError('render_failed', `The widget factory threw: ${messageOf(error)}`, { cause: error });
    }
  }
  if (def === undefined && typeof ns.render === 'function') {
    console.warn('[portico-widget] a named `render` export is deprecated; use `export default { render }`');
    def = { render: ns.render };
  }
  if (typeof def !== 'object' || def === null) {
    throw new WidgetRuntimeError('invalid_module', 'The widget module must export a default function or object');
  }
  const { initialize, render } = def as Record<string, unknown>;
  for (const [name, hook] of [['initialize', initialize], ['render', render]] as const) {
    if (hook !== undefined && typeof hook !== 'function') {
      throw new WidgetRuntimeError('invalid_module', `The widget's \`${name}\` must be a function`);
    }
  }
  return { initialize: initialize as Initialize | undefined, render: render as Render | undefined };
}

export class WidgetBinding {
  readonly #options: BindingOptions;
  readonly #views = new Set<ViewState>();
  #def: WidgetDef | undefined;
  #init: { controller: AbortController; cleanup: Cleanup | undefined } | undefined;
  #exports: unknown;
  #queue: Promise<unknown> = Promise.resolve();
  #disposed = false;

  constructor(options: BindingOptions) {
    this.#options = options;
  }

  /** What `initialize` returned when it returned an object (anywidget 0.11 exports). */
  get exports(): unknown {
    return this.#exports;
  }

  /** Resolves the module's widget and runs `initialize` once. */
  start(namespace: unknown): Promise<void> {
    return this.#serial(async () => {
      if (this.#def) throw new Error('WidgetBinding.start() was already called; use reload()');
      await this.#initialize(await resolveWidget(namespace));
    });
  }

  /** Renders one view into `el`; rejects with `render_failed` if `render` throws. */
  render(el: HTMLElement): Promise<View> {
    return this.#serial(async () => {
      if (!this.#def || this.#disposed) throw new WidgetRuntimeError('closed', 'The widget is not running');
      const view: ViewState = { el, controller: new AbortController(), cleanup: undefined };
      await this.#render(view);
      this.#views.add(view);
      return view;
    });
  }

  /** Aborts the view at once (its listeners go), then runs its cleanup. */
  removeView(view: View): Promise<void> {
    const state = view as ViewState;
    state.controller.abort();
    return this.#serial(async () => {
      if (!this.#views.delete(state)) return;
      await safeCleanup(state.cleanup);
    });
  }

  /**
   * Hot reload with a freshly imported module. Rejects (leaving the old widget running) when the
   * module is not a widget, and rejects after teardown when the new `initialize` throws; a view
   * whose new `render` throws goes to `onViewError`.
   */
  reload(namespace: unknown): Promise<void> {
    return this.#serial(async () => {
      if (this.#disposed) return;
      const def = await resolveWidget(namespace);
      await this.#teardown();
      await this.#initialize(def);
      for (const view of this.#views) {
        view.controller = new AbortController();
        view.el.replaceChildren();
        try {
          await this.#render(view);
        } catch (error) {
          this.#options.onViewError?.(toRuntimeError(error, 'render_failed'), view.el);
        }
      }
    });
  }

  /** Runs every cleanup: views first, then initialize's. */
  dispose(): Promise<void> {
    for (const view of this.#views) view.controller.abort();
    return this.#serial(async () => {
      if (this.#disposed) return;
      this.#disposed = true;
      await this.#teardown();
      this.#views.clear();
    });
  }

  async #initialize(def: WidgetDef): Promise<void> {
    const controller = new AbortController();
    const { model, experimental } = this.#options;
    let result: unknown;
    try {
      result = await def.initialize?.({ model: model.scoped(controller.signal), signal: controller.signal, experimental });
    } catch (error) {
      controller.abort();
      throw new WidgetRuntimeError('render_failed', `initialize() threw: ${messageOf(error)}`, { cause: error });
    }
    this.#def = def;
    this.#init = { controller, cleanup: typeof result === 'function' ? (result as Cleanup) : undefined };
    this.#exports = typeof result === 'object' && result !== null ? result : undefined;
  }

  async #render(view: ViewState): Promise<void> {
    const { signal } = view.controller;
    const { model, host, experimental } = this.#options;
    let result: unknown;
    try {
      result = await this.#def?.render?.({ model: model.scoped(signal), el: view.el, signal, host, experimental });
    } catch (error) {
      view.controller.abort();
      throw new WidgetRuntimeError('render_failed', `render() threw: ${messageOf(error)}`, { cause: error });
    }
    view.cleanup = typeof result === 'function' ? (result as Cleanup) : undefined;
  }

  async #teardown(): Promise<void> {
    for (const view of this.#views) {
      view.controller.abort();
      await safeCleanup(view.cleanup);
      view.cleanup = undefined;
    }
    const init = this.#init;
    this.#init = undefined;
    this.#exports = undefined;
    if (init) {
      init.controller.abort();
      await safeCleanup(init.cleanup);
    }
  }

  #serial<T>(step: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(step, step);
    this.#queue = run.catch(() => undefined);
    return run;
  }
}

async function safeCleanup(cleanup: Cleanup | undefined): Promise<void> {
  if (!cleanup) return;
  try {
    await cleanup();
  } catch (error) {
    console.error('[portico-widget] a widget cleanup threw', error);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
