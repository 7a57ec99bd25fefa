/**
 * A hosted widget: one interface's session, model and module binding, shared by every mount of
 * that interface in the page (same gateway, token, project and uuid), with one view per mount.
 * Sharing gives anywidget's semantics: one model, `initialize` once, `render` once per view, and
 * one socket. Mounts by module name connect first and join an existing hosted widget when the
 * gateway answers with a uuid that is already mounted.
 *
 * DOM of a view, inside the mounted element:
 *   <style data-portico-css>  the widget's stylesheet (one copy per view; like Jupyter's
 *                             <style> it applies page-wide, there is no shadow root)
 *   <div class="portico-widget-view">   the `el` handed to render()
 */
import { WidgetRuntimeError, toRuntimeError } from '../errors.js';
import { withDefaults, type Limits } from '../limits.js';
import { Session, type ConnectOptions, type FirstConnectRetry } from '../net/session.js';
import type { WebSocketConstructor } from '../net/socket.js';
import { DataPlane } from '../net/transfers.js';
import { fetchStylesheet, fetchWidgetModule, importSource, type FetchLike, type WidgetModuleSource } from '../net/assets.js';
import { gatewayUrls, type WidgetAsset } from '../net/urls.js';
import { createExperimental } from '../widget/invoke.js';
import { WidgetBinding, type View } from '../widget/lifecycle.js';
import type { WidgetRegistry } from '../widget/registry.js';
import { clearNotice, flashNotice, showNotice } from './notice.js';
import { explainFailure } from '../net/diagnose.js';
import type { InstanceRestart, WaitNotice } from '@portico/protocol';

export interface HostDeps {
  registry: WidgetRegistry;
  WebSocket?: WebSocketConstructor;
  fetch?: FetchLike;
  limits?: Partial<Limits>;
}

export interface HostView {
  readonly host: HTMLElement;
  readonly style: HTMLStyleElement;
  readonly container: HTMLElement;
  view: View | undefined;
}

const shared = new Map<string, Promise<HostedWidget>>();

function shareKey(options: ConnectOptions, uuid: string): string {
  return JSON.stringify([gatewayUrls(options.url, options.project).socket, options.token ?? '', uuid]);
}

/**
 * The hosted widget for `options`, shared when the same interface is already mounted; retained
 * once. `onRetry` hears each retry of the first connect (the gateway not listening yet),
 * `onWaiting` each `waiting` notice meanwhile (its worker's Slurm job is pending).
 */
export async function acquireHosted(options: ConnectOptions, deps: HostDeps, onRetry?: (retry: FirstConnectRetry) => void, onWaiting?: (notice: WaitNotice) => void): Promise<HostedWidget> {
  if (options.uuid) {
    const existing = await shared.get(shareKey(options, options.uuid))?.catch(() => undefined);
    if (existing?.retain()) return existing;
  }
  const limits = withDefaults(deps.limits);
  const explain = (error: WidgetRuntimeError) => explainFailure(options.url, error, deps.fetch);
  const session = new Session(options, { widgetManager: deps.registry.widgetManager, WebSocket: deps.WebSocket, limits, explain });
  const unsubscribe = [onRetry && session.events.on('retrying', onRetry), onWaiting && session.events.on('waiting', onWaiting)];
  try {
    await session.open();
  } finally {
    for (const off of unsubscribe) off?.();
  }
  const key = shareKey(options, session.info.uuid);
  const existing = await shared.get(key)?.catch(() => undefined);
  if (existing?.retain()) {
    session.close();
    return existing;
  }
  const starting = HostedWidget.start(session, options, deps, limits, () => shared.get(key) === starting && shared.delete(key));
  shared.set(key, starting);
  starting.catch(() => shared.get(key) === starting && shared.delete(key));
  const hosted = await starting;
  hosted.retain();
  return hosted;
}

export class HostedWidget {
  readonly session: Session;
  /** call / upload / read on the interface; one transfer queue for the socket. */
  readonly calls: DataPlane;
  readonly #binding: WidgetBinding;
  readonly #options: ConnectOptions;
  readonly #fetch: FetchLike | undefined;
  readonly #restartNoticeMs: number;
  readonly #views = new Set<HostView>();
  readonly #cleanups: Array<() => void> = [];
  #esm: string;
  #css: string | null;
  #refs = 0;
  #disposed = false;
  #reloading: Promise<void> = Promise.resolve();

  private constructor(session: Session, binding: WidgetBinding, options: ConnectOptions, deps: HostDeps, limits: Limits, esm: string, css: string | null) {
    this.session = session;
    this.calls = new DataPlane(session, limits);
    this.#binding = binding;
    this.#options = options;
    this.#fetch = deps.fetch;
    this.#restartNoticeMs = limits.restartNoticeMs;
    this.#esm = esm;
    this.#css = css;
  }

  /** Loads the module and stylesheet of a connected session and runs `initialize`. */
  static async start(session: Session, options: ConnectOptions, deps: HostDeps, limits: Limits, forget: () => void): Promise<HostedWidget> {
    const { model, info } = session;
    const unregisterModel = deps.registry.addModel(model);
    try {
      const source = await fetchWidgetModule(options, info.module, deps.fetch);
      if (source === null) throw new WidgetRuntimeError('not_found', `The module '${info.module}' has no widget`);
      const { esm } = source;
      const [namespace, css] = await Promise.all([importSource(esm), fetchStylesheet(options, source, deps.fetch).catch(warnAndSkip)]);
      let hosted: HostedWidget | undefined;
      const binding = new WidgetBinding({
        model,
        host: deps.registry.host,
        experimental: createExperimental(model, limits.invokeTimeoutMs),
        onViewError: (error, el) => hosted && hosted.#showError(error, el),
      });
      await binding.start(namespace);
      hosted = new HostedWidget(session, binding, options, deps, limits, esm, css);
      hosted.#cleanups.push(
        unregisterModel,
        forget,
        deps.registry.addWidget(model.model_id, {
          get exports() {
            return binding.exports;
          },
          async render({ el, signal }) {
            const view = await binding.render(el);
            if (signal?.aborted) await binding.removeView(view);
            else signal?.addEventListener('abort', () => void binding.removeView(view), { once: true });
          },
        }),
        session.events.on('reload', (asset) => void hosted!.#reload(asset)),
        session.events.on('resynced', () => void hosted!.#reload('esm', 'css')),
        session.events.on('instance_restarted', (restart) => hosted!.#restarted(restart)),
      );
      return hosted;
    } catch (error) {
      unregisterModel();
      session.close();
      throw error;
    }
  }

  /** Counts one more mount; false once disposed (the caller must acquire anew). */
  retain(): boolean {
    if (this.#disposed) return false;
    this.#refs += 1;
    return true;
  }

  /** One mount fewer; the last one closes the session and runs every cleanup. */
  async release(): Promise<void> {
    this.#refs -= 1;
    if (this.#refs > 0 || this.#disposed) return;
    this.#disposed = true;
    for (const cleanup of this.#cleanups.splice(0)) cleanup();
    this.session.close();
    await this.#binding.dispose();
  }

  /** Adds the view DOM to `host` and renders into it. */
  async addView(host: HTMLElement): Promise<HostView> {
    const doc = host.ownerDocument;
    const style = doc.createElement('style');
    style.setAttribute('data-portico-css', this.session.info.module);
    style.textContent = this.#css ?? '';
    const container = doc.createElement('div');
    container.className = 'portico-widget-view';
    host.append(style, container);
    const hostView: HostView = { host, style, container, view: undefined };
    try {
      hostView.view = await this.#binding.render(container);
    } catch (error) {
      style.remove();
      container.remove();
      throw error;
    }
    this.#views.add(hostView);
    return hostView;
  }

  async removeView(hostView: HostView): Promise<void> {
    this.#views.delete(hostView);
    if (hostView.view) await this.#binding.removeView(hostView.view);
    hostView.style.remove();
    hostView.container.remove();
  }

  /**
   * Hot reload: fetches the assets again and applies those that changed (the gateway pushes
   * `widget_reload`; after a reconnect both are checked, since a push may have been missed).
   * The module is fetched either way (a revalidation, usually 304): its Link header says whether
   * there still is a stylesheet, and where.
   */
  #reload(...assets: WidgetAsset[]): Promise<void> {
    const step = async () => {
      if (this.#disposed) return;
      let source: WidgetModuleSource | null;
      try {
        source = await fetchWidgetModule(this.#options, this.session.info.module, this.#fetch);
        if (source === null) throw new WidgetRuntimeError('not_found', `The module '${this.session.info.module}' no longer has a widget`);
      } catch (error) {
        this.#showError(toRuntimeError(error, 'load_failed'));
        return;
      }
      for (const asset of assets) {
        if (this.#disposed) return;
        try {
          await (asset === 'css' ? this.#reloadCss(source) : this.#reloadEsm(source.esm));
        } catch (error) {
          this.#showError(toRuntimeError(error, 'load_failed'));
        }
      }
    };
    this.#reloading = this.#reloading.then(step);
    return this.#reloading;
  }

  async #reloadEsm(esm: string): Promise<void> {
    if (esm === this.#esm) return;
    const namespace = await importSource(esm);
    this.#esm = esm;
    for (const { host } of this.#views) clearNotice(host);
    await this.#binding.reload(namespace);
  }

  async #reloadCss(source: WidgetModuleSource): Promise<void> {
    const css = await fetchStylesheet(this.#options, source, this.#fetch);
    if (css === this.#css) return;
    this.#css = css;
    for (const { style } of this.#views) style.textContent = css ?? '';
  }

  /**
   * The instance died with its worker: every view says so for a while (the session is already
   * reading the state again, and the views follow it through change events).
   */
  #restarted(restart: InstanceRestart): void {
    const why =
      restart.reason === 'worker_wedged'
        ? 'stopped answering and was restarted'
        : restart.reason === 'allocation_ended'
          ? 'lost its Slurm allocation and was restarted'
          : restart.reason === 'source_changed'
            ? 'was restarted on its changed source'
            : 'crashed and was restarted';
    const text = `the interface restarted (its Python worker ${why}) and its state was read again.`;
    console.warn(`[portico-widget] instance_restarted ${restart.uuid} (${restart.reason}): ${restart.message}`);
    for (const { host } of this.#views) flashNotice(host, text, restart.message, this.#restartNoticeMs);
  }

  /** Shows `error` in the view holding `el`, or in every view. */
  #showError(error: WidgetRuntimeError, el?: HTMLElement): void {
    console.error(`[portico-widget] ${error.code}: ${error.message}`, error.cause ?? '');
    for (const { host, container } of this.#views) if (!el || el === container) showNotice(host, error);
  }
}


function warnAndSkip(error: unknown): null {
  console.warn('[portico-widget] the widget stylesheet could not be loaded; rendering without it', error);
  return null;
}
