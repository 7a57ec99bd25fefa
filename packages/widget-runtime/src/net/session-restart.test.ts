/**
 * Session: `instance_restarted` (the live instance died with its Python worker): the state is
 * read again on the same socket, as after a reconnect.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { setupSession, socketClass } from '../testing/session-harness.js';
import { Session } from './session.js';

beforeEach(() => {
  vi.useFakeTimers();
  vi.spyOn(console, 'warn').mockImplementation(() => undefined);
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('Session: instance_restarted', () => {
  const restarted = (uuid = 'uuid-1', reason = 'worker_crashed') => ({ type: 'instance_restarted', payload: { uuid, reason, message: 'the worker exited (SIGKILL)' } });

  async function connected(state: Record<string, unknown> = { count: 5, step: 1, label: 'a' }) {
    const s = setupSession();
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

  it('allocation_ended: the state read again waits for a new allocation; the page hears `waiting` with Slurm\'s reason, then `waited` at its answer', async () => {
    const { session, socket } = await connected();
    const heard: string[] = [];
    session.events.on('waiting', (notice) => heard.push(notice.message));
    session.events.on('waited', () => heard.push('waited'));
    socket().receive(restarted('uuid-1', 'allocation_ended'));
    const get = socket().last('widget_get').id;
    socket().receive({ type: 'waiting', id: get, payload: { job: '124', state: 'PENDING', reason: 'Priority', message: 'Slurm job 124: PENDING (Priority)' } });
    socket().receive({ type: 'waiting', id: get, payload: { job: '124', state: 'PENDING', reason: 'Resources', message: 'Slurm job 124: PENDING (Resources)' } });
    socket().receive({ type: 'widget_change', payload: { changes: { count: 6 } } }); // no id: not the answer
    expect(heard).toEqual(['Slurm job 124: PENDING (Priority)', 'Slurm job 124: PENDING (Resources)']);
    socket().receive({ type: 'widget_state', id: get, payload: { state: { count: 5, step: 1, label: 'a' } } });
    expect(heard.at(-1)).toBe('waited');
    expect(heard.filter((h) => h === 'waited')).toHaveLength(1);
    expect(session.model.get('count')).toBe(6); // the push after the read's snapshot still wins
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
    const { session, socket } = setupSession();
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
