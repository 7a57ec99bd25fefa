/**
 * Follows one run live over the gateway's /v1/executions/ws: its ExecutionInfo on attach and on
 * every status change, and the output appended to its output.log, in order. A dropped socket is
 * reopened (from the byte after the last output received) until the run has ended; aborting the
 * signal closes it.
 */
import { GatewayError, type GatewayConnection } from './client.js';
import { ENDED_STATUSES, type ExecutionClientFrames, type ExecutionInfo, type ExecutionServerFrames, type RunEvent } from '@portico/protocol';

export type FollowState = 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface FollowHandlers {
  /** The run's info: once attached, then whenever its status changes. */
  info?(info: ExecutionInfo): void;
  /** Output text appended to the log; `offset` is the byte it starts at, `size` the log size now. */
  output?(chunk: { output: string; offset: number; size: number }): void;
  /**
   * What the run passed to emit(), each event once and in order (a reconnect replays the run's
   * events from the first; those already reported are skipped).
   */
  event?(event: RunEvent): void;
  /** The socket's state; `closed` carries the reason when it ended on an error. */
  state?(state: FollowState, error?: GatewayError): void;
}

/** Reconnect delays: doubling from the first, capped; after the last attempt the follow ends. */
export const FOLLOW_LIMITS = {
  reconnectFirstMs: 1_000,
  reconnectMaxMs: 15_000,
  reconnectAttempts: 8,
} as const;

/** Refusals after which reconnecting cannot help. */
const FATAL_CODES = new Set(['unauthorized', 'forbidden', 'not_found', 'invalid_argument']);

type SocketFactory = (url: string, protocols?: string[]) => WebSocket;

/** The `ws(s)://…/v1/executions/ws` URL of a gateway, with `?project=`. */
export function executionSocketUrl(connection: GatewayConnection): string {
  const url = new URL(connection.url, globalThis.location?.href);
  url.protocol = url.protocol === 'https:' || url.protocol === 'wss:' ? 'wss:' : 'ws:';
  url.pathname = url.pathname.replace(/\/+$/, '') + '/v1/executions/ws';
  url.search = '';
  url.hash = '';
  if (connection.project) url.searchParams.set('project', connection.project);
  return url.href;
}

const utf8 = new TextEncoder();

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * An `event` frame as a RunEvent: its payload is the events.jsonl line; display fields on the
 * frame itself (beside the line) count too.
 */
function runEvent(frame: { payload?: unknown; display?: unknown; metadata?: unknown }): RunEvent {
  const line = isObject(frame.payload) ? frame.payload : {};
  const event: RunEvent = {
    at: typeof line.at === 'string' ? line.at : '',
    interface: typeof line.interface === 'string' ? line.interface : null,
    payload: 'payload' in line ? line.payload : frame.payload,
  };
  const display = isObject(frame.display) ? frame.display : line.display;
  const metadata = isObject(frame.metadata) ? frame.metadata : line.metadata;
  if (isObject(display)) event.display = display;
  if (isObject(display) && isObject(metadata)) event.metadata = metadata;
  return event;
}

/**
 * Starts following `execution`; returns at once. Handlers are called until `signal` aborts or
 * the follow ends (`state('closed')`).
 */
export function followExecution(
  connection: GatewayConnection,
  execution: string,
  handlers: FollowHandlers,
  signal: AbortSignal,
  createSocket: SocketFactory = (url, protocols) => new WebSocket(url, protocols),
): void {
  let nextOffset: number | undefined; // undefined: let the gateway start at the last 64 KiB
  let eventsSeen = 0; // events reported so far
  let eventIndex = 0; // events received on the current socket (each socket starts at the first)
  let ended = false; // the run has ended: no more reconnects
  let done = false; // the follow has ended and said so
  let attempt = 0;
  let socket: WebSocket | undefined;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;

  const finish = (error?: GatewayError) => {
    if (signal.aborted || done) return;
    done = true;
    handlers.state?.('closed', error);
    socket?.close(1000);
  };

  const open = () => {
    if (signal.aborted) return;
    handlers.state?.(attempt === 0 ? 'connecting' : 'reconnecting');
    // The token rides as the subprotocol pair `bearer, <token>`: a browser socket cannot send headers.
    try {
      socket = createSocket(executionSocketUrl(connection), connection.token ? ['bearer', connection.token] : undefined);
    } catch (err) {
      // A token with characters a subprotocol cannot carry (`=` padding, spaces) throws SyntaxError here.
      return finish(new GatewayError('invalid_argument', `Cannot open the output socket: ${(err as Error).message}`));
    }
    socket.onopen = () => {
      const connect: ExecutionClientFrames['connect'] = { type: 'connect', id: 'follow', target: execution, offset: nextOffset };
      socket?.send(JSON.stringify(connect));
    };
    socket.onmessage = (message) => {
      let frame: { type?: string; id?: unknown; payload?: any; display?: unknown; metadata?: unknown };
      try {
        frame = JSON.parse(String(message.data));
      } catch {
        return;
      }
      switch (frame.type) {
        case 'connected':
          attempt = 0;
          eventIndex = 0;
          handlers.state?.('open');
        // falls through: `connected` carries the ExecutionInfo too
        case 'status': {
          const info = frame.payload as ExecutionInfo;
          if (ENDED_STATUSES.includes(info.status)) ended = true;
          handlers.info?.(info);
          break;
        }
        case 'output': {
          const { output, offset, size } = frame.payload as ExecutionServerFrames['output']['payload'];
          nextOffset = Math.min(size, offset + utf8.encode(output).length);
          handlers.output?.({ output, offset, size });
          break;
        }
        case 'event': {
          eventIndex += 1;
          if (eventIndex <= eventsSeen) break;
          eventsSeen = eventIndex;
          handlers.event?.(runEvent(frame));
          break;
        }
        case 'error': {
          const { code, message: text } = (frame.payload ?? {}) as { code?: string; message?: string };
          const error = new GatewayError(code ?? 'error', text ?? 'error');
          if (frame.id === 'follow' || FATAL_CODES.has(error.code)) finish(error);
          break;
        }
      }
    };
    socket.onclose = () => {
      if (signal.aborted || done) return;
      if (ended) return finish();
      attempt += 1;
      if (attempt > FOLLOW_LIMITS.reconnectAttempts) {
        return finish(new GatewayError('unreachable', `Lost the live output of ${execution} after ${FOLLOW_LIMITS.reconnectAttempts} reconnects`));
      }
      const delay = Math.min(FOLLOW_LIMITS.reconnectMaxMs, FOLLOW_LIMITS.reconnectFirstMs * 2 ** (attempt - 1));
      handlers.state?.('reconnecting');
      retryTimer = setTimeout(open, delay);
    };
  };

  signal.addEventListener(
    'abort',
    () => {
      clearTimeout(retryTimer);
      socket?.close(1000);
    },
    { once: true },
  );
  open();
}
