import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { WidgetRuntimeError } from '../errors.js';
import { WidgetRegistry } from '../widget/registry.js';
import { Session, type ConnectOptions, type ConnectionStatus, type WebSocketLike } from './session.js';

/** A WebSocket stand-in driven by the test: it records frames and plays the gateway's answers. */
function socketClass() {
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

function setup(options: Partial<ConnectOptions> = {}) {
  const { FakeSocket, sockets } = socketClass();
  const session = new Session(
    { url: 'http://gw.test/base/', target: 'counter', ...options },
    {
      widgetManager: new WidgetRegistry().widgetManager,
      WebSocket: FakeSocket,
      limits: { reconnectBaseMs: 100, reconnectMaxMs: 1000, reconnectJitter: 0.5, pingIntervalMs: 10_000, handshakeTimeoutMs: 5_000 },
      random: () => 0,
    },
  );
  const statuses: string[] = [];
  const errors: WidgetRuntimeError[] = [];
  session.events.on('status', (status: ConnectionStatus, error) => statuses.push(error ? `${status} (${error.code})` : status));
  session.events.on('error', (error) => errors.push(error));
  return { session, sockets, statuses, errors, socket: () => sockets[sockets.length - 1]! };
}

beforeEach(() => {
  vi.useFakeTimers();
  vi.spyOn(console, 'warn').mockImplementation(() => undefined);
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('Session: handshake', () => {
  it('opens the socket with the bearer subprotocol and the project, then connect → widget_get → state', async () => {
    const { session, socket, statuses } = setup({ token: 'tok.en', project: 'proj', version: ['~big'] });
    const opened = session.open();
    expect(socket().url).toBe('ws://gw.test/base/v1/interfaces/ws?project=proj');
    expect(socket().protocols).toEqual(['bearer', 'tok.en']);
    socket().handshake({ count: 3 });
    await opened;
    const [connect, get] = socket().sent;
    expect(connect).toEqual({ type: 'connect', id: connect!.id, target: 'counter', version: ['~big'], project: 'proj', buffers: 'binary' });
    expect(get).toEqual({ type: 'widget_get', id: get!.id });
    expect(connect!.id).not.toEqual(get!.id);
    expect(session.model.get('count')).toBe(3);
    expect(session.info.uuid).toBe('uuid-1');
    expect(statuses).toEqual(['open']);
  });

  it('a change pushed while widget_get is answered is newer than the snapshot, and wins', async () => {
    // The worker took the snapshot (count 15) before a concurrent call added 2 and pushed 17.
    const { session, socket } = setup();
    const opened = session.open();
    socket().open();
    socket().receive({ type: 'connected', id: socket().last('connect').id, payload: { uuid: 'u', module: 'counter', config: {}, label: null } });
    socket().receive({ type: 'widget_change', payload: { changes: { count: 17 } } });
    socket().receive({ type: 'widget_state', id: socket().last('widget_get').id, payload: { state: { count: 15, step: 1 } } });
    await opened;
    expect(session.model.get('count')).toBe(17);
    expect(session.model.get('step')).toBe(1);
    // later pushes apply as usual
    socket().receive({ type: 'widget_change', payload: { changes: { count: 18 } } });
    expect(session.model.get('count')).toBe(18);
  });

  it('without a token, no subprotocol is offered', () => {
    const { session, socket } = setup();
    void session.open();
    expect(socket().protocols).toBeUndefined();
  });

  it('a uuid alone connects with target = uuid; with a target it is the uuid to create under', () => {
    const byUuid = setup({ target: undefined, uuid: 'u-9' });
    void byUuid.session.open();
    byUuid.socket().open();
    expect(byUuid.socket().last('connect')).toMatchObject({ target: 'u-9' });
    expect(byUuid.socket().last('connect').uuid).toBeUndefined();
    const create = setup({ target: 'counter', uuid: 'u-9' });
    void create.session.open();
    create.socket().open();
    expect(create.socket().last('connect')).toMatchObject({ target: 'counter', uuid: 'u-9' });
  });

  it('a first connection that closes rejects with connection_failed and does not retry', async () => {
    const { session, socket, sockets, statuses } = setup();
    const opened = session.open();
    socket().drop();
    await expect(opened).rejects.toMatchObject({ code: 'connection_failed' });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(sockets).toHaveLength(1);
    expect(statuses).toEqual(['closed (connection_failed)']);
  });

  it('a refused connect rejects with the gateway code', async () => {
    const { session, socket } = setup();
    const opened = session.open();
    socket().open();
    socket().receive({ type: 'error', id: socket().last('connect').id, payload: { code: 'not_found', message: 'no module counter' } });
    await expect(opened).rejects.toMatchObject({ code: 'not_found', message: 'no module counter' });
  });

  it('a handshake with no answer times out', async () => {
    const { session, socket } = setup();
    const opened = session.open();
    socket().open();
    const failed = expect(opened).rejects.toMatchObject({ code: 'handshake_timeout' });
    await vi.advanceTimersByTimeAsync(5_000);
    await failed;
  });
});

describe('Session: sync', () => {
  it("widget_change with the setter's id acknowledges the set; without id it is a remote change", async () => {
    const { session, socket } = setup();
    const opened = session.open();
    socket().handshake({ count: 0 });
    await opened;
    const changes: unknown[] = [];
    session.model.on('change:count', (_m: unknown, v: unknown) => changes.push(v));
    session.model.set('count', 1);
    session.model.save_changes();
    const set = socket().last('widget_set');
    expect(set).toEqual({ type: 'widget_set', id: set.id, changes: { count: 1 } });
    socket().receive({ type: 'widget_change', id: set.id, payload: { changes: { count: 1 } } });
    socket().receive({ type: 'widget_change', payload: { changes: { count: 5 } } });
    expect(changes).toEqual([1, 5]);
  });

  it('an error answering a widget_set rolls it back and is reported', async () => {
    const { session, socket, errors } = setup();
    const opened = session.open();
    socket().handshake({ count: 0 });
    await opened;
    session.model.set('count', 9);
    session.model.save_changes();
    socket().receive({ type: 'error', id: socket().last('widget_set').id, payload: { code: 'read_only', message: 'count is read-only' } });
    expect(session.model.get('count')).toBe(0);
    expect(errors.map((e) => e.code)).toEqual(['read_only']);
  });

  it('widget_msg reaches msg:custom with DataView buffers; event and widget_reload are emitted', async () => {
    const { session, socket } = setup();
    const opened = session.open();
    socket().handshake({});
    await opened;
    const seen: unknown[] = [];
    session.model.on('msg:custom', (content: unknown, buffers: DataView[]) => seen.push(content, buffers[0]!.getUint8(0)));
    session.events.on('event', (payload) => seen.push(['event', payload]));
    session.events.on('reload', (asset) => seen.push(['reload', asset]));
    socket().receive({ type: 'widget_msg', payload: { content: { hello: 1 }, buffers: ['Kg=='] } });
    socket().receive({ type: 'event', payload: { progress: 0.5 } });
    socket().receive({ type: 'widget_reload', payload: { asset: 'css', etag: '"x"' } });
    expect(seen).toEqual([{ hello: 1 }, 42, ['event', { progress: 0.5 }], ['reload', 'css']]);
  });

  it('widget_msg_done (a message answered without a reply) fires no msg:custom', async () => {
    const { session, socket } = setup();
    const opened = session.open();
    socket().handshake({});
    await opened;
    const seen: unknown[] = [];
    session.model.on('msg:custom', (content: unknown) => seen.push(content));
    session.model.send({ op: 'quiet' });
    socket().receive({ type: 'widget_msg_done', id: socket().last('widget_msg').id });
    socket().receive({ type: 'widget_msg', id: socket().last('widget_msg').id, payload: { content: 'reply', buffers: [] } });
    expect(seen).toEqual(['reply']);
  });

  it('model.send goes out as widget_msg followed at once by its buffers as binary frames', async () => {
    const { session, socket } = setup();
    const opened = session.open();
    socket().handshake({});
    await opened;
    expect(socket().last('connect')).toMatchObject({ buffers: 'binary' });
    session.model.send({ op: 'x' }, undefined, [new Uint8Array([1, 2, 3]), new Uint8Array([4])]);
    const sentBefore = socket().sent.length;
    expect(socket().last('widget_msg')).toEqual({ type: 'widget_msg', content: { op: 'x' }, binary_buffers: 2, id: expect.any(Number) });
    expect(socket().binary).toEqual([
      { after: sentBefore, bytes: [1, 2, 3] },
      { after: sentBefore, bytes: [4] },
    ]);
  });

  it('binary frames after a widget frame are its buffers: DataViews in msg:custom and at buffer_paths in the state', async () => {
    const { session, socket } = setup();
    const opened = session.open();
    socket().open();
    socket().receive({ type: 'connected', id: socket().last('connect').id, payload: { uuid: 'u', module: 'm', config: {}, label: null } });
    socket().receive({ type: 'widget_state', id: socket().last('widget_get').id, payload: { state: { image: null, n: 1 }, buffer_paths: [['image']] }, binary_buffers: 1 });
    socket().receiveBinary([5, 6]);
    await opened;
    const image = session.model.get('image') as DataView;
    expect(image).toBeInstanceOf(DataView);
    expect([image.getUint8(0), image.getUint8(1)]).toEqual([5, 6]);
    const seen: unknown[] = [];
    session.model.on('msg:custom', (content: unknown, buffers: DataView[]) => seen.push(content, buffers.map((b) => b.byteLength)));
    socket().receive({ type: 'widget_msg', payload: { content: 'two' }, binary_buffers: 2 });
    expect(seen).toEqual([]); // not before its buffers are in
    socket().receiveBinary([1]);
    socket().receiveBinary([1, 2, 3]);
    expect(seen).toEqual(['two', [1, 3]]);
  });

  it('a widget frame whose buffers are cut short by a text frame is dropped and reported; the text frame still counts', async () => {
    const { session, socket } = setup();
    const opened = session.open();
    socket().handshake({ n: 0 });
    await opened;
    const seen: unknown[] = [];
    const errors: string[] = [];
    session.model.on('msg:custom', (content: unknown) => seen.push(content));
    session.events.on('error', (error) => errors.push(error.code));
    socket().receive({ type: 'widget_msg', payload: { content: 'cut' }, binary_buffers: 2 });
    socket().receiveBinary([1]);
    socket().receive({ type: 'widget_change', payload: { changes: { n: 5 } } });
    expect(seen).toEqual([]);
    expect(errors).toEqual(['invalid_frame']);
    expect(session.model.get('n')).toBe(5);
  });
});

describe('Session: reconnect', () => {
  async function connected() {
    const s = setup();
    const opened = s.session.open();
    s.socket().handshake({ count: 0, label: 'a' });
    await opened;
    return s;
  }

  it('reconnects with capped exponential backoff and reconnects by uuid', async () => {
    const { socket, sockets, statuses } = await connected();
    socket().drop();
    expect(statuses).toEqual(['open', 'reconnecting (connection_failed)']);
    await vi.advanceTimersByTimeAsync(99);
    expect(sockets).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(sockets).toHaveLength(2);
    socket().drop(); // attempt 1: 200 ms
    await vi.advanceTimersByTimeAsync(200);
    expect(sockets).toHaveLength(3);
    socket().open();
    expect(socket().last('connect')).toEqual({ type: 'connect', id: socket().last('connect').id, target: 'uuid-1', buffers: 'binary' });
  });

  it('resyncs after a reconnect: change events for keys that differ, offline sets sent after the state', async () => {
    const { session, socket } = await connected();
    const changes: string[] = [];
    session.model.on('change', () => changes.push(JSON.stringify([session.model.get('count'), session.model.get('label')])));
    const resynced = vi.fn();
    session.events.on('resynced', resynced);
    socket().drop();
    session.model.set('label', 'offline edit');
    session.model.save_changes();
    session.model.set('label', 'offline edit 2');
    session.model.save_changes();
    await vi.advanceTimersByTimeAsync(100);
    socket().handshake({ count: 7, label: 'a' });
    expect(changes).toEqual(['[0,"offline edit"]', '[0,"offline edit 2"]', '[7,"offline edit 2"]']);
    const frames = socket().sent.map((f) => f.type);
    expect(frames).toEqual(['connect', 'widget_get', 'widget_set']);
    expect(socket().last('widget_set').changes).toEqual({ label: 'offline edit 2' });
    expect(resynced).toHaveBeenCalledOnce();
    expect(session.status).toBe('open');
  });

  it('a set unacknowledged when the socket dropped is sent again after the resync', async () => {
    const { session, socket } = await connected();
    session.model.set('count', 4);
    session.model.save_changes();
    socket().drop();
    await vi.advanceTimersByTimeAsync(100);
    socket().handshake({ count: 0, label: 'a' });
    expect(socket().last('widget_set').changes).toEqual({ count: 4 });
    expect(session.model.get('count')).toBe(4);
  });

  it('a reconnect refused with unknown_module (its record is gone) ends the session too', async () => {
    const ended = await connected();
    ended.socket().drop();
    await vi.advanceTimersByTimeAsync(100);
    ended.socket().open();
    ended.socket().receive({ type: 'error', id: ended.socket().last('connect').id, payload: { code: 'unknown_module', message: "Unknown module 'x'" } });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(ended.sockets).toHaveLength(2);
    expect(ended.statuses.at(-1)).toBe('closed (unknown_module)');
  });

  it('a reconnect refused with not_found ends the session; other refusals are retried', async () => {
    const retried = await connected();
    retried.socket().drop();
    await vi.advanceTimersByTimeAsync(100);
    retried.socket().open();
    retried.socket().receive({ type: 'error', id: retried.socket().last('connect').id, payload: { code: 'worker_unavailable', message: 'x' } });
    await vi.advanceTimersByTimeAsync(200);
    expect(retried.sockets).toHaveLength(3);

    const ended = await connected();
    ended.socket().drop();
    await vi.advanceTimersByTimeAsync(100);
    ended.socket().open();
    ended.socket().receive({ type: 'error', id: ended.socket().last('connect').id, payload: { code: 'not_found', message: 'gone' } });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(ended.sockets).toHaveLength(2);
    expect(ended.session.status).toBe('closed');
    expect(ended.statuses.at(-1)).toBe('closed (not_found)');
  });

  it('a socket that stops answering pings is dropped and reopened', async () => {
    const { socket, sockets } = await connected();
    await vi.advanceTimersByTimeAsync(10_000);
    const ping = socket().last('ping');
    expect(ping).toBeDefined();
    socket().receive({ type: 'pong', id: ping.id });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(sockets).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(sockets[0]!.closedWith).toBe(1000);
    await vi.advanceTimersByTimeAsync(100);
    expect(sockets).toHaveLength(2);
  });

  it('close() closes the socket with 1000 and never reconnects', async () => {
    const { session, socket, sockets, statuses } = await connected();
    session.close();
    expect(socket().closedWith).toBe(1000);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(sockets).toHaveLength(1);
    expect(statuses).toEqual(['open', 'closed']);
  });
});

describe('Session: instance_restarted', () => {
  const restarted = (uuid = 'uuid-1', reason = 'worker_crashed') => ({ type: 'instance_restarted', payload: { uuid, reason, message: 'the worker exited (SIGKILL)' } });

  async function connected(state: Record<string, unknown> = { count: 5, step: 1, label: 'a' }) {
    const s = setup();
    const opened = s.session.open();
    s.socket().handshake(state);
    await opened;
    return s;
  }

  it('reads the state again on the same socket: the model ends with it, change:<key> only for keys that changed', async () => {
    const { session, socket, sockets, statuses } = await connected();
    const events: string[] = [];
    session.model.on('change:count', (_m: unknown, v: unknown) => events.push(`count=${v}`));
    session.model.on('change:step', (_m: unknown, v: unknown) => events.push(`step=${v}`));
    session.model.on('change:label', (_m: unknown, v: unknown) => events.push(`label=${v}`));
    session.model.on('change', () => events.push('change'));
    const heard: unknown[] = [];
    session.events.on('instance_restarted', (restart) => heard.push(restart));
    const resynced = vi.fn();
    session.events.on('resynced', resynced);
    const before = socket().sent.length;

    socket().receive(restarted());
    expect(socket().sent.slice(before)).toEqual([{ type: 'widget_get', id: expect.any(Number) }]);
    expect(heard).toEqual([{ uuid: 'uuid-1', reason: 'worker_crashed', message: 'the worker exited (SIGKILL)' }]);
    expect(events).toEqual([]); // nothing changes before the answer

    socket().receive({ type: 'widget_state', id: socket().last('widget_get').id, payload: { state: { count: 0, step: 1, label: 'b' } } });
    expect(events).toEqual(['count=0', 'label=b', 'change']);
    expect([session.model.get('count'), session.model.get('step'), session.model.get('label')]).toEqual([0, 1, 'b']);
    // no reconnect, no status change, and it is no reconnect's resync
    expect(sockets).toHaveLength(1);
    expect(statuses).toEqual(['open']);
    expect(resynced).not.toHaveBeenCalled();

    // the model follows pushes as before; a state equal to the model's fires nothing
    socket().receive({ type: 'widget_change', payload: { changes: { count: 1 } } });
    expect(session.model.get('count')).toBe(1);
    events.length = 0;
    socket().receive(restarted());
    socket().receive({ type: 'widget_state', id: socket().last('widget_get').id, payload: { state: { count: 1, step: 1, label: 'b' } } });
    expect(events).toEqual([]);
  });

  it('a change pushed while the state is read again wins over the older snapshot; a local write is kept', async () => {
    const { session, socket } = await connected();
    session.model.set('label', 'mine');
    session.model.save_changes();
    const set = socket().last('widget_set');
    socket().receive(restarted());
    socket().receive({ type: 'widget_change', payload: { changes: { count: 9 } } });
    socket().receive({ type: 'widget_state', id: socket().last('widget_get').id, payload: { state: { count: 0, step: 1, label: 'a' } } });
    expect(session.model.get('count')).toBe(9);
    expect(session.model.get('label')).toBe('mine'); // its set is still unanswered
    // the set died with the worker: its error rolls it back to what the server now holds
    socket().receive({ type: 'error', id: set.id, payload: { code: 'worker_crashed', message: 'the worker died' } });
    expect(session.model.get('label')).toBe('a');
  });

  it('only the answer to the latest read applies; an older widget_state is ignored', async () => {
    const { session, socket } = await connected();
    socket().receive(restarted());
    const first = socket().last('widget_get').id;
    socket().receive(restarted('uuid-1', 'worker_wedged'));
    const second = socket().last('widget_get').id;
    expect(second).not.toEqual(first);
    socket().receive({ type: 'widget_state', id: second, payload: { state: { count: 2, step: 1, label: 'a' } } });
    socket().receive({ type: 'widget_state', id: first, payload: { state: { count: 1, step: 1, label: 'a' } } });
    expect(session.model.get('count')).toBe(2);
  });

  it('a refused read drops the socket and the reconnect reads the state again', async () => {
    const { session, socket, sockets, statuses } = await connected();
    socket().receive(restarted());
    expect(socket().sent.filter((f) => f.type === 'widget_get')).toHaveLength(2);
    socket().receive({ type: 'error', id: socket().last('widget_get').id, payload: { code: 'worker_unavailable', message: 'backing off' } });
    expect(statuses).toEqual(['open', 'reconnecting (worker_unavailable)']);
    await vi.advanceTimersByTimeAsync(100);
    expect(sockets).toHaveLength(2);
    socket().handshake({ count: 3, step: 1, label: 'a' });
    expect(session.model.get('count')).toBe(3);
    expect(session.status).toBe('open');
  });

  it('a restart during the handshake replaces the read in flight, whose answer may predate it', async () => {
    const { session, socket } = setup();
    const opened = session.open();
    socket().open();
    socket().receive({ type: 'connected', id: socket().last('connect').id, payload: { uuid: 'uuid-1', module: 'counter', config: {}, label: null } });
    const stale = socket().last('widget_get').id;
    socket().receive(restarted());
    const fresh = socket().last('widget_get').id;
    expect(fresh).not.toEqual(stale);
    socket().receive({ type: 'widget_state', id: stale, payload: { state: { count: 8 } } });
    socket().receive({ type: 'widget_state', id: fresh, payload: { state: { count: 0 } } });
    await opened;
    expect(session.model.get('count')).toBe(0);
  });

  it('a connection without a widget reports the restart and sends nothing', async () => {
    const { FakeSocket, sockets } = socketClass();
    const session = new Session({ url: 'http://gw.test/', target: 'files' }, { WebSocket: FakeSocket, widget: false });
    const opened = session.open();
    const socket = sockets[0]!;
    socket.open();
    socket.receive({ type: 'connected', id: socket.last('connect').id, payload: { uuid: 'u-2', module: 'files', config: {}, label: null } });
    await opened;
    const heard: unknown[] = [];
    session.events.on('instance_restarted', (restart) => heard.push(restart.reason));
    const before = socket.sent.length;
    socket.receive(restarted('u-2', 'worker_wedged'));
    expect(heard).toEqual(['worker_wedged']);
    expect(socket.sent.length).toBe(before);
    session.close();
  });
});
