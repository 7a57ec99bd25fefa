import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { connectWith, type Connection } from '../connect.js';
import type { WidgetRuntimeError } from '../errors.js';
import type { Limits } from '../limits.js';
import type { WebSocketLike } from './socket.js';

type Frame = Record<string, any>;

/**
 * A WebSocket stand-in: records text frames (parsed) and binary frames (copied), keeps a
 * `bufferedAmount` the test drains by hand when `autoDrain` is off, and plays the gateway.
 */
function socketClass() {
  const sockets: FakeSocket[] = [];
  class FakeSocket implements WebSocketLike {
    readyState = 0;
    bufferedAmount = 0;
    binaryType = 'blob';
    autoDrain = true;
    readonly sent: Array<Frame | Uint8Array> = [];
    closedWith: number | undefined;
    onopen: WebSocketLike['onopen'] = null;
    onmessage: WebSocketLike['onmessage'] = null;
    onclose: WebSocketLike['onclose'] = null;
    onerror: WebSocketLike['onerror'] = null;
    constructor(readonly url: string) {
      sockets.push(this);
    }
    send(data: string | ArrayBuffer | ArrayBufferView) {
      if (this.readyState !== 1) throw new Error('send on a socket that is not open');
      if (typeof data === 'string') return void this.sent.push(JSON.parse(data));
      const bytes = ArrayBuffer.isView(data) ? new Uint8Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength)) : new Uint8Array(data.slice(0));
      this.sent.push(bytes);
      if (!this.autoDrain) this.bufferedAmount += bytes.byteLength;
    }
    close(code?: number) {
      this.readyState = 3;
      this.closedWith = code;
    }
    drain(bytes = this.bufferedAmount) {
      this.bufferedAmount -= bytes;
    }
    receive(frame: object) {
      this.onmessage?.({ data: JSON.stringify(frame) });
    }
    receiveBinary(data: ArrayBuffer | Blob) {
      this.onmessage?.({ data });
    }
    drop(code = 1006) {
      this.readyState = 3;
      this.onclose?.({ code, reason: '' });
    }
    text(type?: string): Frame[] {
      return this.sent.filter((f): f is Frame => !(f instanceof Uint8Array) && (!type || f.type === type));
    }
    last(type: string): Frame {
      return this.text(type).at(-1)!;
    }
    binaries(): number[][] {
      return this.sent.filter((f): f is Uint8Array => f instanceof Uint8Array).map((b) => [...b]);
    }
    /** What went out, in order: frame types and binary frames as byte counts. */
    trace(): Array<string | number> {
      return this.sent.map((f) => (f instanceof Uint8Array ? f.byteLength : f.type === 'chunk_start' ? `chunk_start:${f.mode}` : f.type));
    }
    /** Plays connect → connected (a connection syncs no widget: no widget_get). */
    handshake(uuid = 'uuid-1') {
      this.readyState = 1;
      this.onopen?.({});
      this.receive({ type: 'connected', id: this.last('connect').id, payload: { uuid, module: 'files', config: {} } });
    }
  }
  return { FakeSocket, sockets };
}

const LIMITS: Partial<Limits> = {
  uploadChunkBytes: 4,
  uploadHighWaterBytes: 8,
  uploadPollMs: 1,
  reconnectBaseMs: 5,
  reconnectJitter: 0,
  pingIntervalMs: 60_000,
};

async function connected(limits: Partial<Limits> = {}) {
  const { FakeSocket, sockets } = socketClass();
  const socket = () => sockets.at(-1)!;
  const opening = connectWith({ url: 'http://gw.test', target: 'files', project: 'p' }, { WebSocket: FakeSocket, limits: { ...LIMITS, ...limits } });
  socket().handshake();
  const conn: Connection = await opening;
  return { conn, sockets, socket };
}

const bytes = (n: number, from = 0) => Uint8Array.from({ length: n }, (_, i) => (from + i) % 256);
const settled = <T>(promise: Promise<T>) => {
  const state: { value?: T; error?: WidgetRuntimeError; done: boolean } = { done: false };
  promise.then(
    (value) => Object.assign(state, { value, done: true }),
    (error) => Object.assign(state, { error, done: true }),
  );
  return state;
};

beforeEach(() => {
  vi.spyOn(console, 'warn').mockImplementation(() => undefined);
  vi.spyOn(console, 'error').mockImplementation(() => undefined);
});
afterEach(() => vi.restoreAllMocks());

describe('connect()', () => {
  it('connects without widget_get, asks for ArrayBuffers, and exposes the interface', async () => {
    const { conn, socket } = await connected();
    expect(socket().url).toBe('ws://gw.test/v1/interfaces/ws?project=p');
    expect(socket().trace()).toEqual(['connect']);
    expect(socket().binaryType).toBe('arraybuffer');
    expect(conn.uuid).toBe('uuid-1');
    expect(conn.info.module).toBe('files');
    expect(conn.status).toBe('open');
  });

  it('call() resolves with the result, rejects with the gateway error, and refuses streams', async () => {
    const { conn, socket } = await connected();
    const ok = conn.call('add', [1, 2], { extra: true });
    await vi.waitFor(() => expect(socket().last('call')).toBeDefined());
    const call = socket().last('call');
    expect(call).toEqual({ type: 'call', id: call.id, method: 'add', args: [1, 2], kwargs: { extra: true } });
    socket().receive({ type: 'result', id: call.id, payload: 3 });
    await expect(ok).resolves.toBe(3);

    const refused = conn.call('nope');
    await vi.waitFor(() => expect(socket().text('call')).toHaveLength(2));
    socket().receive({ type: 'error', id: socket().last('call').id, payload: { code: 'method_not_found', message: 'no method nope' } });
    await expect(refused).rejects.toMatchObject({ code: 'method_not_found', message: 'no method nope' });

    const streamed = conn.call('ticks');
    await vi.waitFor(() => expect(socket().text('call')).toHaveLength(3));
    const id = socket().last('call').id;
    socket().receive({ type: 'stream', id, payload: 1, final: false });
    await expect(streamed).rejects.toMatchObject({ code: 'stream_unsupported' });
    socket().receive({ type: 'stream', id, payload: null, final: true }); // the rest is ignored
    expect(conn.status).toBe('open');
  });
});

describe('upload()', () => {
  it('sends chunk_start, binary frames of uploadChunkBytes, chunk_end; progress reaches the total', async () => {
    const { conn, socket } = await connected();
    const progress: Array<[number, number]> = [];
    const upload = conn.upload('in/data.bin', bytes(10), { onProgress: (sent, total) => progress.push([sent, total]) });
    await vi.waitFor(() => expect(socket().last('chunk_end')).toBeDefined());
    const start = socket().last('chunk_start');
    expect(start).toEqual({ type: 'chunk_start', id: start.id, mode: 'write', path: 'in/data.bin' });
    expect(socket().last('chunk_end')).toEqual({ type: 'chunk_end', id: start.id });
    expect(socket().trace()).toEqual(['connect', 'chunk_start:write', 4, 4, 2, 'chunk_end']);
    expect(socket().binaries().flat()).toEqual([...bytes(10)]);
    socket().receive({ type: 'chunk_done', id: start.id, payload: { path: 'in/data.bin', bytes_written: 10, mode: 'write' } });
    await expect(upload).resolves.toEqual({ path: 'in/data.bin', bytes_written: 10, mode: 'write' });
    expect(progress).toEqual([
      [4, 10],
      [8, 10],
      [10, 10],
    ]);
  });

  it('reads a Blob one slice at a time, in append mode, from a view with an offset', async () => {
    const { conn, socket } = await connected();
    const slice = vi.spyOn(Blob.prototype, 'slice');
    const blob = new Blob([bytes(6)]);
    const upload = conn.upload('log.txt', blob, { mode: 'append' });
    await vi.waitFor(() => expect(socket().last('chunk_end')).toBeDefined());
    expect(slice.mock.calls).toEqual([
      [0, 4],
      [4, 6],
    ]);
    expect(socket().last('chunk_start').mode).toBe('append');
    expect(socket().binaries()).toEqual([
      [0, 1, 2, 3],
      [4, 5],
    ]);
    socket().receive({ type: 'chunk_done', id: socket().last('chunk_end').id, payload: { path: 'log.txt', bytes_written: 6, mode: 'append' } });
    await upload;

    const view = new Uint8Array(bytes(8).buffer, 3, 5); // 3 4 5 6 7
    const second = conn.upload('v.bin', view);
    await vi.waitFor(() => expect(socket().text('chunk_end')).toHaveLength(2));
    expect(socket().binaries().slice(2)).toEqual([[3, 4, 5, 6], [7]]);
    socket().receive({ type: 'chunk_done', id: socket().last('chunk_end').id, payload: { path: 'v.bin', bytes_written: 5, mode: 'write' } });
    await second;
  });

  it('an empty upload is chunk_start then chunk_end, with one progress call at 0 of 0', async () => {
    const { conn, socket } = await connected();
    const progress = vi.fn();
    const upload = conn.upload('empty', new ArrayBuffer(0), { onProgress: progress });
    await vi.waitFor(() => expect(socket().last('chunk_end')).toBeDefined());
    expect(socket().trace()).toEqual(['connect', 'chunk_start:write', 'chunk_end']);
    socket().receive({ type: 'chunk_done', id: socket().last('chunk_end').id, payload: { path: 'empty', bytes_written: 0, mode: 'write' } });
    await upload;
    expect(progress.mock.calls).toEqual([[0, 0]]);
  });

  it('paces on bufferedAmount: no frame while it is at the high-water mark; progress counts bytes gone', async () => {
    const { conn, socket } = await connected();
    socket().autoDrain = false;
    const progress: number[] = [];
    const upload = settled(conn.upload('big', bytes(20), { onProgress: (sent) => progress.push(sent) }));
    await vi.waitFor(() => expect(socket().binaries()).toHaveLength(2)); // 8 bytes buffered = the mark
    await new Promise((r) => setTimeout(r, 20));
    expect(socket().binaries()).toHaveLength(2);
    expect(progress).toEqual([0]); // nothing has left yet
    socket().drain(4);
    await vi.waitFor(() => expect(socket().binaries()).toHaveLength(3));
    expect(progress).toEqual([0, 4]);
    socket().drain();
    await vi.waitFor(() => expect(socket().last('chunk_end')).toBeDefined());
    expect(socket().trace()).toEqual(['connect', 'chunk_start:write', 4, 4, 4, 4, 4, 'chunk_end']);
    expect(socket().bufferedAmount).toBe(8);
    socket().drain();
    await vi.waitFor(() => expect(progress.at(-1)).toBe(20));
    expect(upload.done).toBe(false); // all bytes gone, but not durable yet
    socket().receive({ type: 'chunk_done', id: socket().last('chunk_end').id, payload: { path: 'big', bytes_written: 20, mode: 'write' } });
    await vi.waitFor(() => expect(upload.done).toBe(true));
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.filter((p) => p === 20)).toHaveLength(1);
  });

  it('a refusal rejects with the gateway code, stops the bytes and still ends the upload', async () => {
    const { conn, socket } = await connected();
    socket().autoDrain = false;
    const upload = conn.upload('big', bytes(40));
    await vi.waitFor(() => expect(socket().binaries()).toHaveLength(2));
    socket().receive({ type: 'error', id: socket().last('chunk_start').id, payload: { code: 'payload_too_large', message: 'too big' } });
    await expect(upload).rejects.toMatchObject({ code: 'payload_too_large', message: 'too big' });
    socket().drain();
    await new Promise((r) => setTimeout(r, 10));
    expect(socket().trace()).toEqual(['connect', 'chunk_start:write', 4, 4, 'chunk_end']);
    // Stray bytes the gateway refuses afterwards (error without id) are not reported.
    const errors = vi.fn();
    conn.on('error', errors);
    socket().receive({ type: 'error', payload: { code: 'no_active_upload', message: 'stray' } });
    expect(errors).not.toHaveBeenCalled();
    expect(conn.status).toBe('open');
  });

  it('a Blob that can no longer be read fails the upload with load_failed and closes the socket', async () => {
    const { conn, socket, sockets } = await connected();
    class ChangedFile extends Blob {
      override slice(start?: number): Blob {
        if (start === 0) return super.slice(0, 4);
        return { arrayBuffer: () => Promise.reject(new Error('The file changed on disk')) } as Blob;
      }
    }
    const upload = conn.upload('f', new ChangedFile([bytes(10)]));
    await expect(upload).rejects.toMatchObject({ code: 'load_failed', message: expect.stringContaining('The file changed on disk') });
    expect(sockets[0]!.closedWith).toBe(1000);
    expect(sockets[0]!.text('chunk_end')).toEqual([]); // not ended: the gateway drops the partial upload
    await vi.waitFor(() => expect(sockets).toHaveLength(2));
    socket().handshake();
  });

  it('refuses bad arguments before anything is sent', async () => {
    const { conn, socket } = await connected();
    await expect(conn.upload('', bytes(1))).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(conn.upload('x', 'text' as never)).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(conn.upload('x', bytes(1), { mode: 'read' as never })).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(conn.upload('x'.repeat(4097), bytes(1))).rejects.toMatchObject({ code: 'invalid_argument' });
    expect(socket().trace()).toEqual(['connect']);
  });
});

describe('read()', () => {
  it('collects binary frames into a Blob, with progress, until chunk_done', async () => {
    const { conn, socket } = await connected();
    const progress: Array<[number, number | undefined]> = [];
    const read = conn.read({ name: 'out.bin' }, { onProgress: (received, total) => progress.push([received, total]) });
    await vi.waitFor(() => expect(socket().last('chunk_start')).toBeDefined());
    const start = socket().last('chunk_start');
    expect(start).toEqual({ type: 'chunk_start', id: start.id, mode: 'read', params: { name: 'out.bin' } });
    socket().receiveBinary(bytes(3).buffer);
    socket().receiveBinary(new Blob([bytes(2, 3)])); // a socket left at binaryType 'blob'
    socket().receiveBinary(bytes(4, 5).buffer);
    socket().receive({ type: 'chunk_done', id: start.id, payload: { bytes_sent: 9 } });
    const blob = await read;
    expect([...new Uint8Array(await blob.arrayBuffer())]).toEqual([...bytes(9)]);
    expect(progress).toEqual([
      [3, undefined],
      [5, undefined],
      [9, undefined],
    ]);
  });

  it('rejects with the gateway code (not_found, read_unsupported), and on a byte count mismatch', async () => {
    const { conn, socket } = await connected();
    const missing = conn.read({ name: 'nope' });
    await vi.waitFor(() => expect(socket().last('chunk_start')).toBeDefined());
    socket().receive({ type: 'error', id: socket().last('chunk_start').id, payload: { code: 'not_found', message: 'no nope' } });
    await expect(missing).rejects.toMatchObject({ code: 'not_found' });

    const short = conn.read();
    await vi.waitFor(() => expect(socket().text('chunk_start')).toHaveLength(2));
    expect(socket().last('chunk_start').params).toEqual({});
    socket().receiveBinary(bytes(2).buffer);
    socket().receive({ type: 'chunk_done', id: socket().last('chunk_start').id, payload: { bytes_sent: 5 } });
    await expect(short).rejects.toMatchObject({ code: 'invalid_frame' });
  });

  it('binary frames outside a read are ignored', async () => {
    const { conn, socket } = await connected();
    socket().receiveBinary(bytes(2).buffer);
    const read = conn.read();
    await vi.waitFor(() => expect(socket().last('chunk_start')).toBeDefined());
    socket().receiveBinary(bytes(1).buffer);
    socket().receive({ type: 'chunk_done', id: socket().last('chunk_start').id, payload: { bytes_sent: 1 } });
    expect((await read).size).toBe(1);
  });
});

describe('one transfer per socket', () => {
  it('queues transfers in call order: the next chunk_start waits for the previous chunk_done', async () => {
    const { conn, socket } = await connected();
    const first = conn.upload('a', bytes(2));
    const second = conn.read({ name: 'b' });
    const third = conn.upload('c', bytes(1));
    const call = conn.call('ping_me'); // calls do not queue behind transfers
    await vi.waitFor(() => expect(socket().last('call')).toBeDefined());
    await new Promise((r) => setTimeout(r, 10));
    expect(socket().trace().filter((t) => t !== 'call')).toEqual(['connect', 'chunk_start:write', 2, 'chunk_end']);
    socket().receive({ type: 'chunk_done', id: socket().last('chunk_end').id, payload: { path: 'a', bytes_written: 2, mode: 'write' } });
    await first;
    await vi.waitFor(() => expect(socket().trace().at(-1)).toBe('chunk_start:read'));
    socket().receive({ type: 'chunk_done', id: socket().last('chunk_start').id, payload: { bytes_sent: 0 } });
    await second;
    await vi.waitFor(() => expect(socket().trace().at(-1)).toBe('chunk_end'));
    expect(socket().trace().slice(-3)).toEqual(['chunk_start:write', 1, 'chunk_end']);
    socket().receive({ type: 'chunk_done', id: socket().last('chunk_end').id, payload: { path: 'c', bytes_written: 1, mode: 'write' } });
    await third;
    socket().receive({ type: 'result', id: socket().last('call').id, payload: 'pong' });
    await expect(call).resolves.toBe('pong');
  });

  it('a failed transfer does not block the queue', async () => {
    const { conn, socket } = await connected();
    const first = conn.read({ name: 'missing' });
    const second = conn.read({ name: 'there' });
    await vi.waitFor(() => expect(socket().last('chunk_start')).toBeDefined());
    socket().receive({ type: 'error', id: socket().last('chunk_start').id, payload: { code: 'not_found', message: 'x' } });
    await expect(first).rejects.toMatchObject({ code: 'not_found' });
    await vi.waitFor(() => expect(socket().text('chunk_start')).toHaveLength(2));
    socket().receive({ type: 'chunk_done', id: socket().last('chunk_start').id, payload: { bytes_sent: 0 } });
    await expect(second).resolves.toBeInstanceOf(Blob);
  });
});

describe('socket drops, aborts and close', () => {
  it('a drop rejects the active transfer and pending calls with connection_lost; queued ones run after the reconnect', async () => {
    const { conn, socket, sockets } = await connected();
    const upload = conn.upload('a', bytes(6));
    const call = conn.call('slow');
    const queued = conn.read({ name: 'b' });
    await vi.waitFor(() => expect(socket().last('chunk_end')).toBeDefined());
    socket().drop();
    await expect(upload).rejects.toMatchObject({ code: 'connection_lost' });
    await expect(call).rejects.toMatchObject({ code: 'connection_lost' });
    await vi.waitFor(() => expect(sockets).toHaveLength(2));
    expect(conn.status).toBe('reconnecting');
    socket().handshake();
    expect(socket().last('connect').target).toBe('uuid-1');
    await vi.waitFor(() => expect(socket().last('chunk_start')).toMatchObject({ mode: 'read', params: { name: 'b' } }));
    socket().receive({ type: 'chunk_done', id: socket().last('chunk_start').id, payload: { bytes_sent: 0 } });
    await expect(queued).resolves.toBeInstanceOf(Blob);
  });

  it('a drop in the middle of a read rejects it, and its late frames go nowhere', async () => {
    const { conn, socket } = await connected();
    const read = conn.read();
    await vi.waitFor(() => expect(socket().last('chunk_start')).toBeDefined());
    socket().receiveBinary(bytes(2).buffer);
    const old = socket();
    old.drop();
    await expect(read).rejects.toMatchObject({ code: 'connection_lost', message: expect.stringContaining('closed (1006)') });
    old.receiveBinary(bytes(2).buffer); // a dead socket's handlers are detached
  });

  it('aborting a started upload closes the socket and rejects with aborted; the session reconnects', async () => {
    const { conn, socket, sockets } = await connected();
    socket().autoDrain = false;
    const controller = new AbortController();
    const upload = conn.upload('a', bytes(40), { signal: controller.signal });
    await vi.waitFor(() => expect(socket().binaries()).toHaveLength(2));
    const statuses: string[] = [];
    conn.on('status', (status, error) => statuses.push(`${status}${error ? ` (${error.code})` : ''}`));
    controller.abort();
    await expect(upload).rejects.toMatchObject({ code: 'aborted' });
    expect(sockets[0]!.closedWith).toBe(1000);
    expect(sockets[0]!.text('chunk_end')).toEqual([]);
    expect(statuses).toEqual(['reconnecting (aborted)']);
    await vi.waitFor(() => expect(sockets).toHaveLength(2));
    socket().handshake();
    expect(conn.status).toBe('open');
  });

  it('aborting a queued transfer removes it without touching the socket', async () => {
    const { conn, socket, sockets } = await connected();
    const first = conn.upload('a', bytes(2));
    const controller = new AbortController();
    const queued = conn.read({}, { signal: controller.signal });
    const after = conn.read({ name: 'after' });
    await vi.waitFor(() => expect(socket().last('chunk_end')).toBeDefined());
    controller.abort();
    await expect(queued).rejects.toMatchObject({ code: 'aborted' });
    await new Promise((r) => setTimeout(r, 10));
    expect(socket().text('chunk_start')).toHaveLength(1); // `after` still waits for `first`
    socket().receive({ type: 'chunk_done', id: socket().last('chunk_end').id, payload: { path: 'a', bytes_written: 2, mode: 'write' } });
    await first;
    await vi.waitFor(() => expect(socket().last('chunk_start').params).toEqual({ name: 'after' }));
    socket().receive({ type: 'chunk_done', id: socket().last('chunk_start').id, payload: { bytes_sent: 0 } });
    await after;
    expect(sockets).toHaveLength(1);
    await expect(conn.read({}, { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'aborted' });
  });

  it('close() rejects what is waiting with closed, and later calls too', async () => {
    const { conn, socket } = await connected();
    const call = conn.call('slow');
    await vi.waitFor(() => expect(socket().last('call')).toBeDefined());
    conn.close();
    expect(socket().closedWith).toBe(1000);
    await expect(call).rejects.toMatchObject({ code: 'closed' });
    await expect(conn.upload('a', bytes(1))).rejects.toMatchObject({ code: 'closed' });
    expect(conn.status).toBe('closed');
  });

  it('calls made while reconnecting wait for the socket', async () => {
    const { conn, socket, sockets } = await connected();
    socket().drop();
    const call = conn.call('later');
    await vi.waitFor(() => expect(sockets).toHaveLength(2));
    socket().handshake();
    await vi.waitFor(() => expect(socket().last('call')).toMatchObject({ method: 'later' }));
    socket().receive({ type: 'result', id: socket().last('call').id, payload: 1 });
    await expect(call).resolves.toBe(1);
  });
});

describe('heartbeat during a transfer', () => {
  it('bytes leaving the socket keep it alive while a ping waits behind them', async () => {
    vi.useFakeTimers();
    try {
      const { FakeSocket, sockets } = socketClass();
      const opening = connectWith({ url: 'http://gw.test', target: 'files' }, { WebSocket: FakeSocket, limits: { ...LIMITS, pingIntervalMs: 1000 } });
      sockets[0]!.handshake();
      const conn = await opening;
      const socket = sockets[0]!;
      socket.autoDrain = false;
      void conn.upload('slow', bytes(400)).catch(() => undefined);
      await vi.advanceTimersByTimeAsync(10);
      for (let second = 0; second < 5; second++) {
        socket.drain(4); // a slow link: a little leaves each second, no pong gets through
        await vi.advanceTimersByTimeAsync(1000);
      }
      expect(socket.text('ping')).toHaveLength(1);
      expect(socket.closedWith).toBeUndefined();
      await vi.advanceTimersByTimeAsync(2000); // nothing moves any more: dead
      expect(socket.closedWith).toBe(1000);
    } finally {
      vi.useRealTimers();
    }
  });
});
