import { describe, expect, it, vi } from 'vitest';
import type { FrameId } from '@portico/protocol';
import type { ModelFrame } from '../protocol.js';
import { WidgetModel } from './model.js';

/** An outbox that records frames; `online` decides whether send() succeeds. */
function harness(state: Record<string, unknown> = { count: 0, label: 'a' }) {
  const sent: Array<ModelFrame & { id: FrameId }> = [];
  let nextId = 1;
  const outbox = {
    online: true,
    send(frame: ModelFrame) {
      if (!outbox.online) return undefined;
      const id = nextId++;
      sent.push({ ...frame, id });
      return id;
    },
  };
  const model = new WidgetModel('uuid-1', { outbox, widgetManager: { get_model: () => Promise.reject(new Error('none')) } });
  model.resync(state);
  const events: string[] = [];
  model.on('change', () => events.push('change'));
  for (const key of Object.keys(state)) model.on(`change:${key}`, (_m: unknown, value: unknown) => events.push(`${key}=${JSON.stringify(value)}`));
  return { model, outbox, sent, events };
}

describe('WidgetModel: local state', () => {
  it('set emits change:<key> with (model, value), then change, synchronously', () => {
    const { model, events } = harness();
    const seen: unknown[] = [];
    model.on('change:count', (m: unknown, value: unknown) => seen.push(m === model, value));
    model.set('count', 1);
    expect(events).toEqual(['count=1', 'change']);
    expect(seen).toEqual([true, 1]);
    expect(model.get('count')).toBe(1);
  });

  it('set to an equal value (deep) emits no change event, yet save_changes sends it', () => {
    const { model, events, sent } = harness({ list: [1, { a: 2 }] });
    model.set('list', [1, { a: 2 }]);
    expect(events).toEqual([]);
    model.save_changes();
    expect(sent).toEqual([{ type: 'widget_set', changes: { list: [1, { a: 2 }] }, id: 1 }]);
  });

  it('an object from get() mutated in place and set back is sent on save_changes (as drawdata draws)', () => {
    const { model, sent } = harness({ data: [] });
    const points = model.get('data') as Array<{ x: number; y: number }>;
    points.push({ x: 1, y: 2 });
    model.set('data', points);
    model.save_changes();
    expect(sent).toEqual([{ type: 'widget_set', changes: { data: [{ x: 1, y: 2 }] }, id: 1 }]);
  });

  it('set({…}) sets several keys: one change:<key> each, one change', () => {
    const { model, events } = harness();
    model.set({ count: 2, label: 'b' });
    expect(events).toEqual(['count=2', 'label="b"', 'change']);
  });

  it('set does not send; save_changes sends the dirty keys as one widget_set', () => {
    const { model, sent } = harness();
    model.set('count', 1);
    model.set('label', 'x');
    expect(sent).toEqual([]);
    model.save_changes();
    expect(sent).toEqual([{ type: 'widget_set', changes: { count: 1, label: 'x' }, id: 1 }]);
    model.save_changes();
    expect(sent).toHaveLength(1);
  });

  it('a change listener can save_changes for the key being changed', () => {
    const { model, sent } = harness();
    model.on('change:count', () => model.save_changes());
    model.set('count', 5);
    expect(sent).toEqual([{ type: 'widget_set', changes: { count: 5 }, id: 1 }]);
  });

  it('off removes by name, by callback, and everything', () => {
    const { model } = harness();
    const calls: string[] = [];
    const a = () => calls.push('a');
    const b = () => calls.push('b');
    model.on('change:count', a);
    model.on('change:count change:label', b);
    model.off('change:count', a);
    model.set('count', 1);
    expect(calls).toEqual(['b']);
    model.off('change:label');
    model.set('label', 'z');
    expect(calls).toEqual(['b']);
    model.off();
    model.set('count', 2);
    expect(calls).toEqual(['b']);
  });

  it('a listener that throws is logged and the others still run', () => {
    const { model } = harness();
    const error = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const after = vi.fn();
    model.on('change:count', () => {
      throw new Error('boom');
    });
    model.on('change:count', after);
    model.set('count', 1);
    expect(after).toHaveBeenCalledOnce();
    expect(error).toHaveBeenCalled();
    error.mockRestore();
  });
});

describe('WidgetModel: server changes', () => {
  it('a remote widget_change applies and emits', () => {
    const { model, events } = harness();
    model.applyChanges({ count: 7 });
    expect(model.get('count')).toBe(7);
    expect(events).toEqual(['count=7', 'change']);
  });

  it('the echo of the own set (ack with its id) does not emit again', () => {
    const { model, sent, events } = harness();
    model.set('count', 1);
    model.save_changes();
    events.length = 0;
    model.applyChanges({ count: 1 }, sent[0]!.id);
    expect(events).toEqual([]);
  });

  it('the ack of an older set does not flicker over a newer pending one', () => {
    const { model, sent, events } = harness();
    model.set('count', 1);
    model.save_changes();
    model.set('count', 2);
    model.save_changes();
    events.length = 0;
    model.applyChanges({ count: 1 }, sent[0]!.id);
    expect(model.get('count')).toBe(2);
    model.applyChanges({ count: 2 }, sent[1]!.id);
    expect(model.get('count')).toBe(2);
    expect(events).toEqual([]);
  });

  it("another client's change to a key with an own set in flight waits for the ack", () => {
    const { model, sent, events } = harness();
    model.set('count', 1);
    model.save_changes();
    events.length = 0;
    model.applyChanges({ count: 9, label: 'other' });
    expect(model.get('count')).toBe(1);
    expect(model.get('label')).toBe('other');
    // The server applied ours after theirs: its answer is the truth.
    model.applyChanges({ count: 1 }, sent[0]!.id);
    expect(model.get('count')).toBe(1);
    expect(events).toEqual(['label="other"', 'change']);
  });

  it("the server's normalized value replaces the local one when the ack differs", () => {
    const { model, sent, events } = harness();
    model.set('count', 150);
    model.save_changes();
    events.length = 0;
    model.applyChanges({ count: 100 }, sent[0]!.id);
    expect(model.get('count')).toBe(100);
    expect(events).toEqual(['count=100', 'change']);
  });

  it('a key of the set that the ack leaves out falls back to the confirmed value', () => {
    const { model, sent } = harness();
    model.set({ count: 3, label: 'x' });
    model.save_changes();
    model.applyChanges({ count: 3 }, sent[0]!.id);
    expect(model.get('label')).toBe('a');
  });

  it('resync applies only keys that differ, and keeps keys with a local write', () => {
    const { model, events } = harness();
    model.set('label', 'mine');
    events.length = 0;
    model.resync({ count: 4, label: 'theirs' });
    expect(events).toEqual(['count=4', 'change']);
    expect(model.get('label')).toBe('mine');
  });
});

describe('WidgetModel: rollback', () => {
  it('a rejected set restores the server-confirmed values and emits change events', () => {
    const { model, sent, events } = harness();
    model.set('count', 5);
    model.save_changes();
    events.length = 0;
    expect(model.reject(sent[0]!.id)).toBe(true);
    expect(model.get('count')).toBe(0);
    expect(events).toEqual(['count=0', 'change']);
  });

  it('rollback restores what other clients changed meanwhile, not the value before the set', () => {
    const { model, sent } = harness();
    model.set('count', 5);
    model.save_changes();
    model.applyChanges({ count: 3 });
    model.reject(sent[0]!.id);
    expect(model.get('count')).toBe(3);
  });

  it('a key set again after the rejected set keeps its newer local value', () => {
    const { model, sent } = harness();
    model.set('count', 5);
    model.save_changes();
    model.set('count', 6);
    model.save_changes();
    model.reject(sent[0]!.id);
    expect(model.get('count')).toBe(6);
    model.reject(sent[1]!.id);
    expect(model.get('count')).toBe(0);
  });

  it('an error for an id that is no pending set changes nothing', () => {
    const { model, events } = harness();
    expect(model.reject(42)).toBe(false);
    expect(events).toEqual([]);
  });
});

describe('WidgetModel: offline', () => {
  it('saves made offline merge into one widget_set sent by flush', () => {
    const { model, outbox, sent } = harness();
    outbox.online = false;
    model.set('count', 1);
    model.save_changes();
    model.set('label', 'b');
    model.save_changes();
    model.set('count', 3);
    model.save_changes();
    expect(sent).toEqual([]);
    outbox.online = true;
    model.flush();
    expect(sent).toEqual([{ type: 'widget_set', changes: { count: 3, label: 'b' }, id: 1 }]);
  });

  it('sets unacknowledged when the socket drops are resent after the resync, merged with newer ones', () => {
    const { model, outbox, sent, events } = harness();
    model.set('count', 1);
    model.save_changes();
    outbox.online = false;
    model.disconnected();
    model.set('label', 'z');
    model.save_changes();
    events.length = 0;
    model.resync({ count: 0, label: 'a' });
    expect(events).toEqual([]);
    outbox.online = true;
    model.flush();
    expect(sent[1]).toEqual({ type: 'widget_set', changes: { count: 1, label: 'z' }, id: 2 });
  });

  it('resync after an outage emits change events for the keys that differ', () => {
    const { model, outbox, events } = harness();
    outbox.online = false;
    model.disconnected();
    model.resync({ count: 10, label: 'a' });
    expect(events).toEqual(['count=10', 'change']);
  });
});

describe('WidgetModel: messages', () => {
  it('send hands ArrayBuffer, typed-array and DataView buffers on as raw bytes (only the viewed window)', () => {
    const { model, sent } = harness();
    const backing = new Uint8Array([0, 1, 2, 3, 4]).buffer;
    model.send({ kind: 'data' }, undefined, [new Uint8Array([1, 2, 3]), new Uint8Array([255]).buffer, new DataView(backing, 3, 2)] as ArrayBufferView[]);
    expect(sent).toMatchObject([{ type: 'widget_msg', content: { kind: 'data' }, id: 1 }]);
    const frame = sent[0] as { buffers: Uint8Array[] };
    expect(frame.buffers.map((b) => [...b])).toEqual([[1, 2, 3], [255], [3, 4]]);
  });

  it('a message sent offline keeps its bytes as they were when send() returned', () => {
    const { model, outbox, sent } = harness();
    outbox.online = false;
    const bytes = new Uint8Array([1, 2]);
    model.send('later', undefined, [bytes]);
    bytes[0] = 99; // the widget reuses its buffer
    outbox.online = true;
    model.flush();
    expect([...(sent[0] as { buffers: Uint8Array[] }).buffers[0]!]).toEqual([1, 2]);
  });

  it('send without buffers leaves them out', () => {
    const { model, sent } = harness();
    model.send('hi');
    expect(sent).toEqual([{ type: 'widget_msg', content: 'hi', id: 1 }]);
  });

  it('messages sent offline are kept in order and flushed after the queued changes', () => {
    const { model, outbox, sent } = harness();
    outbox.online = false;
    model.send(1);
    model.set('count', 1);
    model.save_changes();
    model.send(2);
    outbox.online = true;
    model.flush();
    expect(sent.map((f) => f.type === 'widget_msg' ? f.content : f.changes)).toEqual([{ count: 1 }, 1, 2]);
  });

  it('the offline message queue is bounded: one more throws queue_full', () => {
    const sent: unknown[] = [];
    const model = new WidgetModel('u', {
      outbox: { send: (f) => (sent.push(f), undefined) },
      widgetManager: { get_model: () => Promise.reject(new Error('none')) },
      offlineQueueMessages: 2,
    });
    model.send(1);
    model.send(2);
    expect(() => model.send(3)).toThrow(expect.objectContaining({ code: 'queue_full' }));
  });

  it('msg:custom receives the content and DataView buffers', () => {
    const { model } = harness();
    const received: unknown[] = [];
    model.on('msg:custom', (content: unknown, buffers: DataView[]) => received.push(content, buffers.map((b) => b.getUint8(0))));
    model.receiveMessage({ x: 1 }, [new DataView(new Uint8Array([9]).buffer)]);
    expect(received).toEqual([{ x: 1 }, [9]]);
  });
});

describe('WidgetModel: binary values', () => {
  it('save_changes sends binary values apart, with buffer_paths, and the rest of the change as JSON', () => {
    const { model, sent } = harness();
    const image = new DataView(new Uint8Array([7, 8, 9]).buffer);
    model.set('image', image);
    model.set('layers', [{ name: 'a', data: new Uint8Array([1]) }]);
    model.save_changes();
    expect(sent).toMatchObject([{ type: 'widget_set', changes: { image: null, layers: [{ name: 'a', data: null }] }, buffer_paths: [['image'], ['layers', 0, 'data']] }]);
    expect((sent[0] as { buffers: Uint8Array[] }).buffers.map((b) => [...b])).toEqual([[7, 8, 9], [1]]);
    expect(model.get('image')).toBe(image); // the widget keeps its own value
  });

  it('a resync that brings the same bytes again emits nothing; other bytes emit a change', () => {
    const { model, events } = harness();
    model.resync({ image: new DataView(new Uint8Array([1, 2]).buffer) });
    events.length = 0;
    model.resync({ image: new DataView(new Uint8Array([1, 2]).buffer) });
    expect(events).toEqual([]);
    model.resync({ image: new DataView(new Uint8Array([1, 3]).buffer) });
    expect(events).toContain('change');
  });
});

describe('WidgetModel: scoped views', () => {
  it('aborting a scope removes exactly the listeners registered through it', () => {
    const { model } = harness();
    const controller = new AbortController();
    const view = model.scoped(controller.signal);
    const calls: string[] = [];
    view.on('change:count', () => calls.push('view'));
    model.on('change:count', () => calls.push('page'));
    model.set('count', 1);
    controller.abort();
    model.set('count', 2);
    expect(calls).toEqual(['view', 'page', 'page']);
  });

  it("off() on a scoped model leaves other views' listeners alone", () => {
    const { model } = harness();
    const a = model.scoped(new AbortController().signal);
    const b = model.scoped(new AbortController().signal);
    const calls: string[] = [];
    a.on('change:count', () => calls.push('a'));
    b.on('change:count', () => calls.push('b'));
    a.off();
    model.set('count', 1);
    expect(calls).toEqual(['b']);
  });

  it('a scoped model reads, sets and saves through the shared model', () => {
    const { model, sent } = harness();
    const view = model.scoped(new AbortController().signal);
    view.set('count', 3);
    view.save_changes();
    expect(model.get('count')).toBe(3);
    expect(view.get('count')).toBe(3);
    expect(view.model_id).toBe('uuid-1');
    expect(sent).toHaveLength(1);
  });
});
