import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WidgetRuntimeError } from '../errors.js';
import { setupSession, socketClass } from '../testing/session-harness.js';
import { WidgetRegistry } from '../widget/registry.js';
import { Session } from './session.js';

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
    const { session, socket, statuses } = setupSession({ token: 'tok.en', project: 'proj', version: ['~big'] });
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
    const { session, socket } = setupSession();
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

  it('waiting notices (a pending Slurm allocation) go to the page as `waiting` events while the handshake waits past its timeout, and its answer still opens the session', async () => {
    const { session, socket, sockets, statuses } = setupSession();
    const heard: string[] = [];
    session.events.on('waiting', (notice) => heard.push(notice.message));
    const opened = session.open();
    socket().open();
    const connect = socket().last('connect').id;
    socket().receive({ type: 'waiting', id: connect, payload: { job: '123', state: 'PENDING', reason: null, message: 'Slurm job 123: PENDING' } });
    socket().receive({ type: 'waiting', id: connect, payload: { job: '123', state: 'PENDING', reason: 'Priority', message: 'Slurm job 123: PENDING (Priority)' } });
    expect(statuses).toEqual([]); // still connecting
    await vi.advanceTimersByTimeAsync(60_000); // far past handshakeTimeoutMs: the gateway bounds this wait
    expect(sockets).toHaveLength(1);
    socket().receive({ type: 'connected', id: connect, payload: { uuid: 'u', module: 'counter', config: {}, label: null } });
    socket().receive({ type: 'widget_state', id: socket().last('widget_get').id, payload: { state: { count: 2 } } });
    await opened;
    expect(heard).toEqual(['Slurm job 123: PENDING', 'Slurm job 123: PENDING (Priority)']);
    expect(statuses).toEqual(['open']);
    expect(session.model.get('count')).toBe(2);
  });

  it('without a token, no subprotocol is offered', () => {
    const { session, socket } = setupSession();
    void session.open();
    expect(socket().protocols).toBeUndefined();
  });

  it('a uuid alone connects with target = uuid; with a target it is the uuid to create under', () => {
    const byUuid = setupSession({ target: undefined, uuid: 'u-9' });
    void byUuid.session.open();
    byUuid.socket().open();
    expect(byUuid.socket().last('connect')).toMatchObject({ target: 'u-9' });
    expect(byUuid.socket().last('connect').uuid).toBeUndefined();
    const create = setupSession({ target: 'counter', uuid: 'u-9' });
    void create.session.open();
    create.socket().open();
    expect(create.socket().last('connect')).toMatchObject({ target: 'counter', uuid: 'u-9' });
  });

  it('a first connect whose socket closes is tried again with the reconnect backoff, announced, and opens when the gateway answers', async () => {
    const { session, socket, sockets, statuses } = setupSession();
    const retries: string[] = [];
    session.events.on('retrying', ({ attempt, attempts, delayMs, error }) => retries.push(`${attempt}/${attempts} in ${delayMs} ms (${error.code})`));
    const opened = session.open();
    socket().drop(); // the gateway is not listening yet
    await vi.advanceTimersByTimeAsync(99);
    expect(sockets).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(sockets).toHaveLength(2);
    socket().drop();
    await vi.advanceTimersByTimeAsync(200);
    expect(sockets).toHaveLength(3);
    socket().handshake({ count: 3 });
    await opened;
    expect(retries).toEqual(['2/6 in 100 ms (connection_failed)', '3/6 in 200 ms (connection_failed)']);
    expect(statuses).toEqual(['open']); // connecting throughout, then open
    expect(session.model.get('count')).toBe(3);
    // the reconnect after a later drop starts its backoff afresh
    socket().drop();
    await vi.advanceTimersByTimeAsync(100);
    expect(sockets).toHaveLength(4);
  });

  it('a first connect whose origin the gateway refuses (as explained) ends with that reason, not tried again', async () => {
    const { FakeSocket, sockets } = socketClass();
    const refused = new WidgetRuntimeError('origin_refused', 'This gateway does not accept pages from http://stranger.test');
    const session = new Session(
      { url: 'http://gw.test/', target: 'counter' },
      { widgetManager: new WidgetRegistry().widgetManager, WebSocket: FakeSocket, limits: { reconnectBaseMs: 100 }, random: () => 0, explain: async () => refused },
    );
    const opened = session.open();
    const failed = expect(opened).rejects.toMatchObject({ code: 'origin_refused' });
    sockets[0]!.drop();
    await failed;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(sockets).toHaveLength(1);
    expect(session.status).toBe('closed');
  });

  it('a first connect that fails every try rejects after firstConnectAttempts tries, and tries no more', async () => {
    const { session, socket, sockets, statuses } = setupSession({}, { firstConnectAttempts: 3 });
    const opened = session.open();
    const failed = expect(opened).rejects.toMatchObject({ code: 'connection_failed' });
    socket().drop();
    await vi.advanceTimersByTimeAsync(100);
    socket().drop();
    await vi.advanceTimersByTimeAsync(200);
    socket().drop();
    await failed;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(sockets).toHaveLength(3);
    expect(statuses).toEqual(['closed (connection_failed)']);
  });

  it('a refused connect rejects with the gateway code', async () => {
    const { session, socket } = setupSession();
    const opened = session.open();
    socket().open();
    socket().receive({ type: 'error', id: socket().last('connect').id, payload: { code: 'not_found', message: 'no module counter' } });
    await expect(opened).rejects.toMatchObject({ code: 'not_found', message: 'no module counter' });
  });

  it('a handshake with no answer times out', async () => {
    const { session, socket } = setupSession({}, { firstConnectAttempts: 1 });
    const opened = session.open();
    socket().open();
    const failed = expect(opened).rejects.toMatchObject({ code: 'handshake_timeout' });
    await vi.advanceTimersByTimeAsync(5_000);
    await failed;
  });
});

describe('Session: sync', () => {
  it("widget_change with the setter's id acknowledges the set; without id it is a remote change", async () => {
    const { session, socket } = setupSession();
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
    const { session, socket, errors } = setupSession();
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
    const { session, socket } = setupSession();
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
    const { session, socket } = setupSession();
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
    const { session, socket } = setupSession();
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
    const { session, socket } = setupSession();
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
    const { session, socket } = setupSession();
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
    const s = setupSession();
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
