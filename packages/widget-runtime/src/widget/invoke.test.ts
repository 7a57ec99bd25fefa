import { describe, expect, it } from 'vitest';
import { WidgetModel } from '../model/model.js';
import type { ModelFrame } from '../protocol.js';
import { createExperimental } from './invoke.js';

function setup() {
  const sent: ModelFrame[] = [];
  const model = new WidgetModel('u', {
    outbox: { send: (frame) => (sent.push(frame), sent.length) },
    widgetManager: { get_model: () => Promise.reject(new Error('none')) },
  });
  return { model, sent, experimental: createExperimental(model, 1000) };
}

describe('experimental.invoke', () => {
  it("sends an anywidget-command and resolves with the reply's response and buffers", async () => {
    const { model, sent, experimental } = setup();
    const answer = experimental.invoke<string>('echo', { text: 'hi' }, { buffers: [new DataView(new Uint8Array([7]).buffer)] });
    const frame = sent[0] as Extract<ModelFrame, { type: 'widget_msg' }>;
    const content = frame.content as { id: string; kind: string; name: string; msg: unknown };
    expect(content).toMatchObject({ kind: 'anywidget-command', name: 'echo', msg: { text: 'hi' } });
    expect(frame.buffers?.map((b) => [...b])).toEqual([[7]]);
    model.receiveMessage({ id: 'another', response: 'not mine' }, []);
    model.receiveMessage({ id: content.id, kind: 'anywidget-command-response', response: 'hi' }, [new DataView(new ArrayBuffer(1))]);
    const [response, buffers] = await answer;
    expect(response).toBe('hi');
    expect(buffers).toHaveLength(1);
  });

  it('rejects when its signal aborts', async () => {
    const { experimental } = setup();
    const controller = new AbortController();
    const answer = experimental.invoke('slow', null, { signal: controller.signal });
    controller.abort(new Error('stop'));
    await expect(answer).rejects.toThrow('stop');
  });

  it('rejects with timeout when no reply comes in time', async () => {
    const { model } = setup();
    const answer = createExperimental(model, 10).invoke('never');
    await expect(answer).rejects.toMatchObject({ code: 'timeout' });
  });
});
