import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { executionSocketUrl, FOLLOW_LIMITS, followExecution, type FollowState } from './follow.js';

/** A WebSocket stand-in: records what is sent; the test plays the gateway. */
class FakeSocket {
  sent: any[] = [];
  closed = false;
  onopen: (() => void) | null = null;
  onmessage: ((message: { data: string }) => void) | null = null;
  onclose: (() => void) | null = null;
  constructor(
    readonly url: string,
    readonly protocols?: string[],
  ) {}
  send(text: string) {
    this.sent.push(JSON.parse(text));
  }
  close() {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }
  frame(frame: unknown) {
    this.onmessage?.({ data: JSON.stringify(frame) });
  }
}

const run = (status: string) => ({ uuid: 'e1', status, is_active: status === 'running', cancelled: false });

let sockets: FakeSocket[];
const createSocket = (url: string, protocols?: string[]) => {
  const socket = new FakeSocket(url, protocols);
  sockets.push(socket);
  return socket as unknown as WebSocket;
};

beforeEach(() => {
  sockets = [];
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('followExecution', () => {
  it('socket URL: ws(s), the path prefix kept, ?project=', () => {
    expect(executionSocketUrl({ url: 'https://gw/p/', project: '/srv' })).toBe('wss://gw/p/v1/executions/ws?project=%2Fsrv');
    expect(executionSocketUrl({ url: 'http://127.0.0.1:8000' })).toBe('ws://127.0.0.1:8000/v1/executions/ws');
  });

  it('attaches, then reports info, output and status changes in order', () => {
    const seen: string[] = [];
    followExecution(
      { url: 'http://gw', token: 'tok' },
      'e1',
      {
        info: (info) => seen.push(`info ${info.status}`),
        output: ({ output, offset }) => seen.push(`output@${offset} ${output}`),
        state: (state) => seen.push(`state ${state}`),
      },
      new AbortController().signal,
      createSocket,
    );
    const socket = sockets[0]!;
    expect(socket.protocols).toEqual(['bearer', 'tok']);
    socket.onopen?.();
    expect(socket.sent).toEqual([{ type: 'connect', id: 'follow', target: 'e1' }]);
    socket.frame({ type: 'connected', id: 'follow', payload: run('running') });
    socket.frame({ type: 'output', payload: { output: 'epoch 1\n', offset: 0, size: 8 } });
    socket.frame({ type: 'status', payload: run('finished') });
    expect(seen).toEqual(['state connecting', 'state open', 'info running', 'output@0 epoch 1\n', 'info finished']);
  });

  it('a dropped socket reconnects from the byte after the last output, with backoff', () => {
    const states: FollowState[] = [];
    followExecution({ url: 'http://gw' }, 'e1', { state: (state) => states.push(state) }, new AbortController().signal, createSocket);
    sockets[0]!.onopen?.();
    sockets[0]!.frame({ type: 'connected', payload: run('running') });
    sockets[0]!.frame({ type: 'output', payload: { output: 'héllo', offset: 100, size: 106 } }); // 6 bytes in UTF-8
    sockets[0]!.close();
    expect(states.at(-1)).toBe('reconnecting');
    vi.advanceTimersByTime(FOLLOW_LIMITS.reconnectFirstMs);
    expect(sockets).toHaveLength(2);
    sockets[1]!.onopen?.();
    expect(sockets[1]!.sent[0]).toMatchObject({ type: 'connect', target: 'e1', offset: 106 });
  });

  it('reports each event once, with its MIME bundle; a reconnect replaying the events from the first repeats none', () => {
    const events: unknown[] = [];
    followExecution({ url: 'http://gw' }, 'e1', { event: (event) => events.push(event) }, new AbortController().signal, createSocket);
    const figure = { at: 't2', interface: 'i1', payload: null, display: { 'image/png': 'iVBORw0KGgo=', 'text/plain': '<Figure>' }, metadata: { 'image/png': { width: 4 } } };
    sockets[0]!.onopen?.();
    sockets[0]!.frame({ type: 'connected', payload: run('running') });
    sockets[0]!.frame({ type: 'event', payload: { at: 't1', interface: 'i1', payload: { progress: 0.5 } } });
    sockets[0]!.frame({ type: 'event', payload: figure });
    sockets[0]!.close();
    vi.advanceTimersByTime(FOLLOW_LIMITS.reconnectFirstMs);
    sockets[1]!.onopen?.();
    sockets[1]!.frame({ type: 'connected', payload: run('running') });
    sockets[1]!.frame({ type: 'event', payload: { at: 't1', interface: 'i1', payload: { progress: 0.5 } } });
    sockets[1]!.frame({ type: 'event', payload: figure });
    // display fields on the frame itself, beside the line, count too
    sockets[1]!.frame({ type: 'event', payload: { at: 't3', interface: null, payload: 3 }, display: { 'text/plain': '3', 'text/html': '<b>3</b>' } });
    expect(events).toEqual([
      { at: 't1', interface: 'i1', payload: { progress: 0.5 } },
      figure,
      { at: 't3', interface: null, payload: 3, display: { 'text/plain': '3', 'text/html': '<b>3</b>' } },
    ]);
  });

  it('a refusal ends the follow with its reason; no reconnect', () => {
    const states: string[] = [];
    followExecution({ url: 'http://gw' }, 'e9', { state: (state, error) => states.push(error ? `${state} ${error.code}` : state) }, new AbortController().signal, createSocket);
    sockets[0]!.onopen?.();
    sockets[0]!.frame({ type: 'error', id: 'follow', payload: { code: 'not_found', message: 'No execution e9' } });
    vi.advanceTimersByTime(60_000);
    expect(sockets).toHaveLength(1);
    expect(states).toEqual(['connecting', 'closed not_found']);
  });

  it('after the run ended, a closed socket is the end, not a reason to reconnect', () => {
    const states: string[] = [];
    followExecution({ url: 'http://gw' }, 'e1', { state: (state) => states.push(state) }, new AbortController().signal, createSocket);
    sockets[0]!.onopen?.();
    sockets[0]!.frame({ type: 'connected', payload: run('failed') });
    sockets[0]!.close();
    vi.advanceTimersByTime(60_000);
    expect(sockets).toHaveLength(1);
    expect(states.at(-1)).toBe('closed');
  });

  it('aborting closes the socket and cancels a pending reconnect', () => {
    const abort = new AbortController();
    followExecution({ url: 'http://gw' }, 'e1', {}, abort.signal, createSocket);
    sockets[0]!.close(); // dropped: a reconnect is scheduled
    abort.abort();
    vi.advanceTimersByTime(60_000);
    expect(sockets).toHaveLength(1);
  });

  it('gives up after the last reconnect attempt', () => {
    const states: string[] = [];
    followExecution({ url: 'http://gw' }, 'e1', { state: (state, error) => states.push(error ? `${state} ${error.code}` : state) }, new AbortController().signal, createSocket);
    for (let i = 0; i <= FOLLOW_LIMITS.reconnectAttempts; i += 1) {
      sockets.at(-1)!.close();
      vi.advanceTimersByTime(FOLLOW_LIMITS.reconnectMaxMs);
    }
    expect(sockets).toHaveLength(FOLLOW_LIMITS.reconnectAttempts + 1);
    expect(states.at(-1)).toBe('closed unreachable');
  });

  it('a token a subprotocol cannot carry ends the follow instead of throwing', () => {
    const states: string[] = [];
    const throwing = () => {
      throw new SyntaxError("The subprotocol 'a=' is invalid");
    };
    followExecution({ url: 'http://gw', token: 'a=' }, 'e1', { state: (state, error) => states.push(error ? `${state} ${error.code}` : state) }, new AbortController().signal, throwing);
    expect(states).toEqual(['connecting', 'closed invalid_argument']);
  });
});
