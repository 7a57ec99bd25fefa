/**
 * `mount(el, options)`: the one entry point for pages and for the JupyterLab extension. It
 * connects (or joins an already hosted interface), renders one view into `el`, and returns a
 * handle. Failures reject and are shown in `el` (see notice.ts) and logged.
 */
import type { ConnectionEvents } from '../connect.js';
import { WidgetRuntimeError, toRuntimeError } from '../errors.js';
import type { PorticoModel } from '../model/model.js';
import type { ConnectOptions, ConnectionStatus, FirstConnectRetry } from '../net/session.js';
import { withDefaults } from '../limits.js';
import type { InterfaceCalls } from '../net/transfers.js';
import type { InterfaceInfo } from '@portico/protocol';
import { WidgetRegistry } from '../widget/registry.js';
import { acquireHosted, type HostDeps, type HostedWidget, type HostView } from './hosted.js';
import { explainFailure } from '../net/diagnose.js';
import { clearAllNotices, clearPassingNotice, flashNotice, showNotice } from './notice.js';

export type MountOptions = ConnectOptions;

/** Events a handle reports; `on` returns the function that unsubscribes. */
export type WidgetHandleEvents = ConnectionEvents;

/**
 * A mounted view, plus `call`, `upload` and `read` on its interface (over the widget's socket,
 * whose transfers queue one at a time, shared by every mount of that interface).
 */
export interface WidgetHandle extends InterfaceCalls {
  /** The interface uuid this view is bound to. */
  readonly uuid: string;
  /** The gateway's InterfaceInfo from `connected` (module, config, label, …). */
  readonly info: InterfaceInfo;
  /** The shared anywidget model (also what the widget's code sees). */
  readonly model: PorticoModel;
  /** `connecting` → `open`, `reconnecting` while the socket is down, `closed` when it ended. */
  readonly status: ConnectionStatus;
  on<K extends keyof WidgetHandleEvents>(event: K, callback: (...args: WidgetHandleEvents[K]) => void): () => void;
  /** Runs the view's cleanup and removes what the runtime added to `el`; the last view of an interface closes its socket. */
  unmount(): Promise<void>;
}

/** The page's registry: `widget_manager.get_model` and `host.getWidget` see every mounted interface. */
export const pageRegistry = new WidgetRegistry();
const handles = new WeakMap<HTMLElement, WidgetHandle>();
/** The tooltip of a notice that a request waits for a Slurm allocation. */
const WAITING_DETAIL = 'The gateway waits for Slurm to start the job of the Python worker (--workers slurm).';

/**
 * Mounts the widget of an interface into `el`.
 *
 * @example
 *   const handle = await mount(document.querySelector('#counter'), { url: 'https://gw.example.org', target: 'counter' });
 *   handle.on('status', (status) => console.log(status));
 *   await handle.unmount();
 */
export function mount(el: HTMLElement, options: MountOptions): Promise<WidgetHandle> {
  return mountWith(el, options, { registry: pageRegistry });
}

/** @internal mount() with injectable WebSocket, fetch and limits. */
export async function mountWith(el: HTMLElement, options: MountOptions, deps: HostDeps): Promise<WidgetHandle> {
  await handles.get(el)?.unmount();
  clearAllNotices(el);
  el.setAttribute('data-portico-status', 'connecting');
  let hosted: HostedWidget | undefined;
  let hostView: HostView;
  try {
    hosted = await acquireHosted(
      options,
      deps,
      (retry) => showRetry(el, retry, withDefaults(deps.limits).handshakeTimeoutMs),
      // Until the connect is answered: a pending allocation can last minutes, and nothing else says why.
      (notice) => flashNotice(el, `connecting… ${notice.message}`, WAITING_DETAIL, Infinity),
    );
    clearAllNotices(el);
    hostView = await hosted.addView(el);
  } catch (caught) {
    await hosted?.release();
    const error = await explainFailure(options.url, toRuntimeError(caught, 'connection_failed'), deps.fetch);
    el.setAttribute('data-portico-status', 'closed');
    clearAllNotices(el); // a retry's notice gives way to why it failed
    showNotice(el, error);
    console.error(`[portico-widget] ${error.code}: ${error.message}`, error.cause ?? '');
    throw error;
  }
  return createHandle(el, hosted, hostView);
}

/**
 * The first connect failed and is tried again: said in the element until the next try has had
 * its time (a later retry replaces it; mounting clears it).
 */
function showRetry(el: HTMLElement, { attempt, attempts, delayMs, error }: FirstConnectRetry, handshakeMs: number): void {
  const seconds = Math.max(1, Math.round(delayMs / 1000));
  flashNotice(el, `connecting… retrying in ${seconds} s (attempt ${attempt} of ${attempts})`, error.message, delayMs + handshakeMs);
}

function createHandle(el: HTMLElement, hosted: HostedWidget, hostView: HostView): WidgetHandle {
  const { session } = hosted;
  const showStatus = (status: ConnectionStatus, error: WidgetRuntimeError | undefined) => {
    el.setAttribute('data-portico-status', status);
    if (status === 'closed' && error) {
      showNotice(el, error);
      console.error(`[portico-widget] ${error.code}: ${error.message}`);
    }
  };
  const subscriptions = [
    session.events.on('status', showStatus),
    // A request that waits for a new allocation (the re-read after allocation_ended, a call) says why, until it is answered.
    session.events.on('waiting', (notice) => flashNotice(el, `waiting for the Python worker… ${notice.message}`, WAITING_DETAIL, Infinity)),
    session.events.on('waited', () => clearPassingNotice(el)),
  ];
  showStatus(session.status, undefined);
  let unmounting: Promise<void> | undefined;
  const live = <T>(run: () => Promise<T>): Promise<T> =>
    unmounting ? Promise.reject(new WidgetRuntimeError('closed', 'The widget was unmounted')) : run();
  const handle: WidgetHandle = {
    uuid: session.info.uuid,
    get info() {
      return session.info;
    },
    model: session.model,
    get status() {
      return session.status;
    },
    call: (method, args, kwargs, callOptions) => live(() => hosted.calls.call(method, args, kwargs, callOptions)),
    upload: (path, data, options) => live(() => hosted.calls.upload(path, data, options)),
    read: (params, options) => live(() => hosted.calls.read(params, options)),
    on(event, callback) {
      const unsubscribe = session.events.on(event, callback as never);
      subscriptions.push(unsubscribe);
      return unsubscribe;
    },
    unmount() {
      unmounting ??= (async () => {
        for (const unsubscribe of subscriptions.splice(0)) unsubscribe();
        if (handles.get(el) === handle) handles.delete(el);
        await hosted.removeView(hostView);
        await hosted.release();
        clearAllNotices(el);
        el.removeAttribute('data-portico-status');
      })();
      return unmounting;
    },
  };
  handles.set(el, handle);
  return handle;
}
