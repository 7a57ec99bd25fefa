/**
 * The harness of the Session unit suites (net/session*.test.ts): a WebSocket stand-in the test
 * drives, and a session on it with small, fixed limits. Test support only: not part of the build.
 */
import type { WidgetRuntimeError } from '../errors.js';
import type { Limits } from '../limits.js';
import { Session, type ConnectOptions, type ConnectionStatus } from '../net/session.js';
import type { WebSocketLike } from '../net/socket.js';
import { WidgetRegistry } from '../widget/registry.js';

/** A WebSocket stand-in driven by the test: it records frames and plays the gateway's answers. */
export function socketClass() {
  const sockets: FakeSocket[] = [];
  class FakeSocket implements WebSocketLike {
    readyState = 0;
    readonly sent: Array<Record<string, any>> = [];
    /** Binary frames sent, as bytes, with the number of text frames sent before each. */
    readonly binary: Array<{ after: number; bytes: number[] }> = [];
    closedWith: number | undefined;
    onopen: WebSocketLike['onopen'] = null;
    onmessage: WebSocketLike['onmessage'] = null;
    onclose: WebSocketLike['onclose'] = null;
    onerror: WebSocketLike['onerror'] = null;
    constructor(
      readonly url: string,
      readonly protocols?: string | string[],
    ) {
      sockets.push(this);
    }
    send(data: string | ArrayBufferView) {
      if (typeof data === 'string') this.sent.push(JSON.parse(data));
      else this.binary.push({ after: this.sent.length, bytes: [...new Uint8Array(data.buffer, data.byteOffset, data.byteLength)] });
    }
    close(code?: number) {
      this.readyState = 3;
      this.closedWith = code;
    }
    open() {
      this.readyState = 1;
      this.onopen?.({});
    }
    receive(frame: object) {
      this.onmessage?.({ data: JSON.stringify(frame) });
    }
    receiveBinary(bytes: number[]) {
      this.onmessage?.({ data: new Uint8Array(bytes).buffer });
    }
    drop(code = 1006) {
      this.readyState = 3;
      this.onclose?.({ code, reason: '' });
    }
    last(type: string) {
      return [...this.sent].reverse().find((f) => f.type === type)!;
    }
    /** Plays connect → connected → widget_get → widget_state. */
    handshake(state: Record<string, unknown>, uuid = 'uuid-1') {
      this.open();
      this.receive({ type: 'connected', id: this.last('connect').id, payload: { uuid, module: 'counter', config: {}, label: null } });
      this.receive({ type: 'widget_state', id: this.last('widget_get').id, payload: { state } });
    }
  }
  return { FakeSocket, sockets };
}

export function setupSession(options: Partial<ConnectOptions> = {}, limits: Partial<Limits> = {}) {
  const { FakeSocket, sockets } = socketClass();
  const session = new Session(
    { url: 'http://gw.test/base/', target: 'counter', ...options },
    {
      widgetManager: new WidgetRegistry().widgetManager,
      WebSocket: FakeSocket,
      limits: { reconnectBaseMs: 100, reconnectMaxMs: 1000, reconnectJitter: 0.5, pingIntervalMs: 10_000, handshakeTimeoutMs: 5_000, ...limits },
      random: () => 0,
    },
  );
  const statuses: string[] = [];
  const errors: WidgetRuntimeError[] = [];
  session.events.on('status', (status: ConnectionStatus, error) => statuses.push(error ? `${status} (${error.code})` : status));
  session.events.on('error', (error) => errors.push(error));
  return { session, sockets, statuses, errors, socket: () => sockets[sockets.length - 1]! };
}
