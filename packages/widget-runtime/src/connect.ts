/**
 * `connect(options)`: the interface without its widget, for pages that only call methods and move
 * files (a form posting to an interface, an upload page). One socket, the same reconnect rules as
 * `mount()`, no model and no module fetched, so it works for interfaces without a widget too.
 *
 * @example
 *   const conn = await connect({ url: 'https://gw.example.org', target: 'files' });
 *   await conn.upload('in/data.bin', file, { onProgress: (sent, total) => bar.value = sent / total });
 *   const blob = await conn.read({ name: 'out.csv' });
 *   conn.close();
 */
import type { WidgetRuntimeError } from './errors.js';
import { withDefaults, type Limits } from './limits.js';
import { Session, type ConnectOptions, type ConnectionStatus, type SessionEvents } from './net/session.js';
import type { WebSocketConstructor } from './net/socket.js';
import { DataPlane, type InterfaceCalls } from './net/transfers.js';
import type { InterfaceInfo } from '@portico/protocol';

/**
 * Events a connection (or a widget handle) reports; `on` returns the function that unsubscribes.
 * `instance_restarted`: the live instance died with its Python worker (payload `{uuid, reason:
 * 'worker_crashed' | 'worker_wedged' | 'source_changed', message}`); the socket stays open, the next call makes the
 * instance again, and a widget's state is read again at once.
 */
export type ConnectionEvents = Pick<SessionEvents, 'status' | 'event' | 'error' | 'instance_restarted'>;

export interface Connection extends InterfaceCalls {
  /** The interface uuid (what `target` resolved to). */
  readonly uuid: string;
  /** The gateway's InterfaceInfo from `connected` (module, config, label, …). */
  readonly info: InterfaceInfo;
  /** `open`, `reconnecting` while the socket is down, `closed` once closed for good. */
  readonly status: ConnectionStatus;
  on<K extends keyof ConnectionEvents>(event: K, callback: (...args: ConnectionEvents[K]) => void): () => void;
  /** Closes the socket for good; calls and transfers still waiting reject with `closed`. */
  close(): void;
}

/** Opens a connection to an interface; rejects (a WidgetRuntimeError) when the first handshake fails. */
export function connect(options: ConnectOptions): Promise<Connection> {
  return connectWith(options, {});
}

/** @internal connect() with an injectable WebSocket and limits. */
export async function connectWith(options: ConnectOptions, deps: { WebSocket?: WebSocketConstructor; limits?: Partial<Limits>; random?: () => number }): Promise<Connection> {
  const limits = withDefaults(deps.limits);
  const session = new Session(options, { WebSocket: deps.WebSocket, limits, random: deps.random, widget: false });
  session.events.on('status', (status: ConnectionStatus, error: WidgetRuntimeError | undefined) => {
    if (status === 'closed' && error) console.error(`[portico-widget] ${error.code}: ${error.message}`);
  });
  await session.open();
  const calls = new DataPlane(session, limits);
  return {
    uuid: session.info.uuid,
    get info() {
      return session.info;
    },
    get status() {
      return session.status;
    },
    call: (method, args, kwargs, callOptions) => calls.call(method, args, kwargs, callOptions),
    upload: (path, data, uploadOptions) => calls.upload(path, data, uploadOptions),
    read: (params, readOptions) => calls.read(params, readOptions),
    on: (event, callback) => session.events.on(event, callback as never),
    close: () => session.close(),
  };
}
