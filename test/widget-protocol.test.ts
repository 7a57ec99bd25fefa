/**
 * The widget protocol through a real gateway and worker: one queue per instance (sets and
 * messages in arrival order, other instances and calls meanwhile), binary buffers both ways as
 * binary WebSocket frames tied to their frame (base64 still accepted and served), binary values
 * in state that a reconnecting client gets back, and the faults: a handler that raises, buffers
 * over --widget-buffer-max, an announced buffer that never comes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, cleanup, gateway, tempProject } from './helpers.js';

const KiB = 1024;
/** The suite's --widget-buffer-max: small, so refusals are cheap to provoke. */
const BUFFER_MAX = 256 * KiB;

const FILES = {
  'lane.py': `
import threading

from portico import Interface, WidgetReply

#: Set by any instance's "release" message: the only way a held handler goes on.
RELEASE = threading.Event()


class Lane(Interface):
    def __init__(self):
        self.log = []
        self.state = {"image": b"", "title": "empty"}

    def widget_state(self):
        return self.state

    def widget_update(self, changes):
        if "i" in changes:
            self.log.append(["set", changes["i"]])
        else:
            self.state.update(changes)
        return None

    def widget_message(self, content, buffers):
        self.log.append(["msg", content, [len(b) for b in buffers]])
        if content == "hold":
            RELEASE.wait(60)
        elif content == "release":
            RELEASE.set()
        elif content == "boom":
            raise RuntimeError("the handler broke")
        elif content == "echo":
            self.push_widget_message({"pushed": [len(b) for b in buffers]}, buffers)
            return WidgetReply({"sizes": [len(b) for b in buffers]}, [bytes(reversed(b)) for b in buffers])
        elif content == "huge":
            return WidgetReply("huge", [bytes(${BUFFER_MAX + 1})])
        return content

    def push_huge(self):
        self.push_widget_message("huge push", [bytes(${BUFFER_MAX + 1})])
        self.push_widget_message("small push", [b"ok"])
        return True

    def peek(self):
        return [entry[:2] for entry in self.log]

    def received(self):
        return self.log
`,
};

let url: string;

beforeAll(async () => {
  const project = await tempProject(FILES, { demo: false });
  ({ url } = await gateway({ project, widgetBufferMax: BUFFER_MAX }));
});
afterAll(cleanup);

async function lane(uuid: string, extra: Record<string, unknown> = {}): Promise<Client> {
  const client = await Client.open(url);
  await client.connect('lane', { uuid, ...extra });
  return client;
}

describe('one instance, one queue', () => {
  it('200 interleaved sets and messages to one instance run in arrival order while another instance and a call answer meanwhile', async () => {
    const a = await lane('lane-order');
    const b = await lane('lane-other');
    const held = a.send({ type: 'widget_msg', content: 'hold' });
    const queued: Array<string | number> = [];
    for (let i = 0; i < 200; i++) {
      queued.push(i % 2 ? a.send({ type: 'widget_msg', content: i }) : a.send({ type: 'widget_set', changes: { i } }));
    }
    // The held handler delays only its own widget: calls on the same instance answer, and nothing queued has run.
    // A call does not wait for the instance's widget lane, so the first ones may answer before the lane's thread
    // has even started the held handler: ask until it shows (a queued entry showing fails the test).
    let seen: unknown = [];
    for (let i = 0; i < 200 && Array.isArray(seen) && seen.length === 0; i++) {
      seen = (await a.request({ type: 'call', method: 'peek' })).payload;
      if (Array.isArray(seen) && seen.length === 0) await new Promise((r) => setTimeout(r, 10));
    }
    expect(seen).toEqual([['msg', 'hold']]);
    // Another instance is not queued behind it; its message is what releases the held one.
    expect((await b.request({ type: 'widget_msg', content: 'release' })).payload.content).toBe('release');
    await a.waitFor((f) => f.id === held);
    await a.waitFor((f) => f.id === queued.at(-1));
    const expected = [['msg', 'hold'], ...Array.from({ length: 200 }, (_, i) => (i % 2 ? ['msg', i] : ['set', i]))];
    expect((await a.request({ type: 'call', method: 'peek' })).payload).toEqual(expected);
    // The answers came back in the same order.
    const answered = a.frames.filter((f) => queued.includes(f.id!)).map((f) => f.id);
    expect(answered).toEqual(queued);
    a.close();
    b.close();
  });

  it('a handler that raises answers an error to that message only; the widget stays live', async () => {
    const a = await lane('lane-boom');
    const first = a.send({ type: 'widget_msg', content: 'first' });
    const broken = a.send({ type: 'widget_msg', content: 'boom' });
    const after = a.send({ type: 'widget_msg', content: 'after' });
    expect((await a.waitFor((f) => f.id === first)).payload.content).toBe('first');
    const error = await a.waitFor((f) => f.id === broken);
    expect(error).toMatchObject({ type: 'error', payload: { code: 'call_failed', exception: 'RuntimeError' } });
    expect(error.payload.message).toContain('the handler broke');
    expect((await a.waitFor((f) => f.id === after)).payload.content).toBe('after');
    expect((await a.request({ type: 'widget_set', changes: { title: 'still live' } })).payload.changes).toEqual({ title: 'still live' });
    expect(a.replies(broken)).toHaveLength(1);
    a.close();
  });
});

describe('binary buffers', () => {
  it('travel as binary frames tied to their frame, both ways; a base64 client gets the same bytes as base64', async () => {
    const binary = await lane('lane-bytes', { buffers: 'binary' });
    const base64 = await lane('lane-bytes');
    const sent = [Buffer.from([1, 2, 3]), Buffer.alloc(0), Buffer.from('portico')];
    const id = binary.sendWithBuffers({ type: 'widget_msg', content: 'echo' }, sent);
    const reply = await binary.waitFor((f) => f.id === id && f.attached?.length === 3);
    expect(reply).toMatchObject({ type: 'widget_msg', payload: { content: { sizes: [3, 0, 7] } }, binary_buffers: 3 });
    expect(reply.payload.buffers).toBeUndefined();
    expect(reply.attached!.map((b) => [...b])).toEqual(sent.map((b) => [...b].reverse()));
    // The push reached both clients: raw on the binary socket, base64 on the other.
    const pushedBinary = await binary.waitFor((f) => f.type === 'widget_msg' && f.id === undefined && f.attached?.length === 3);
    expect(pushedBinary.attached!.map((b) => b.toString('latin1'))).toEqual(sent.map((b) => b.toString('latin1')));
    const pushedBase64 = await base64.waitFor((f) => f.type === 'widget_msg' && f.id === undefined);
    expect(pushedBase64.payload).toEqual({ content: { pushed: [3, 0, 7] }, buffers: sent.map((b) => b.toString('base64')) });
    // base64 buffers are still accepted from clients.
    const old = await base64.request({ type: 'widget_msg', content: 'echo', buffers: [Buffer.from([9, 8]).toString('base64')] });
    expect(old.payload).toEqual({ content: { sizes: [2] }, buffers: [Buffer.from([8, 9]).toString('base64')] });
    binary.close();
    base64.close();
  });

  it('a binary value set in the state reaches the other clients and a client that (re)connects gets it back', async () => {
    const setter = await lane('lane-state', { buffers: 'binary' });
    const watcher = await lane('lane-state', { buffers: 'binary' });
    const image = Buffer.from([0, 255, 1, 254, 2]);
    const id = setter.sendWithBuffers({ type: 'widget_set', changes: { image: null, title: 'with bytes' }, buffer_paths: [['image']] }, [image]);
    const ack = await setter.waitFor((f) => f.id === id && f.attached?.length === 1);
    expect(ack.payload).toEqual({ changes: { image: null, title: 'with bytes' }, buffer_paths: [['image']] });
    expect([...ack.attached![0]!]).toEqual([...image]);
    const seen = await watcher.waitFor((f) => f.type === 'widget_change' && f.attached?.length === 1);
    expect([...seen.attached![0]!]).toEqual([...image]);
    // Python holds bytes: a client that reconnects gets them back in the state.
    setter.close();
    const again = await lane('lane-state', { buffers: 'binary' });
    const state = await again.request({ type: 'widget_get' });
    await again.waitFor((f) => f.id === state.id && f.attached?.length === 1);
    expect(state.payload).toEqual({ state: { image: null, title: 'with bytes' }, buffer_paths: [['image']] });
    expect([...state.attached![0]!]).toEqual([...image]);
    const old = await lane('lane-state');
    expect((await old.request({ type: 'widget_get' })).payload).toEqual({
      state: { image: null, title: 'with bytes' },
      buffer_paths: [['image']],
      buffers: [image.toString('base64')],
    });
    again.close();
    old.close();
    watcher.close();
  });
});

describe('buffer faults', () => {
  it('buffers over --widget-buffer-max are refused with payload_too_large and nothing reaches Python', async () => {
    const a = await lane('lane-limit', { buffers: 'binary' });
    const tooBig = a.sendWithBuffers({ type: 'widget_msg', content: 'big' }, [Buffer.alloc(BUFFER_MAX / 2), Buffer.alloc(BUFFER_MAX / 2 + 1)]);
    expect((await a.waitFor((f) => f.id === tooBig)).payload.code).toBe('payload_too_large');
    const tooBig64 = await a.request({ type: 'widget_msg', content: 'big64', buffers: [Buffer.alloc(BUFFER_MAX + 1).toString('base64')] });
    expect(tooBig64.payload.code).toBe('payload_too_large');
    const tooBigSet = a.sendWithBuffers({ type: 'widget_set', changes: { image: null }, buffer_paths: [['image']] }, [Buffer.alloc(BUFFER_MAX + 1)]);
    expect((await a.waitFor((f) => f.id === tooBigSet)).payload.code).toBe('payload_too_large');
    // A reply over the bound is refused too, to that message only.
    expect((await a.request({ type: 'widget_msg', content: 'huge' })).payload.code).toBe('payload_too_large');
    // Exactly at the bound passes, and the socket kept its framing: Python saw only that one and 'huge'.
    const atBound = a.sendWithBuffers({ type: 'widget_msg', content: 'fits' }, [Buffer.alloc(BUFFER_MAX)]);
    expect((await a.waitFor((f) => f.id === atBound)).payload.content).toBe('fits');
    expect((await a.request({ type: 'call', method: 'received' })).payload).toEqual([
      ['msg', 'huge', []],
      ['msg', 'fits', [BUFFER_MAX]],
    ]);
    expect((await a.request({ type: 'widget_get' })).payload.state.image).toBeNull();
    a.close();
  });

  it('a push over the bound reaches the clients as a payload_too_large error, not as a partial message', async () => {
    const a = await lane('lane-push', { buffers: 'binary' });
    expect((await a.request({ type: 'call', method: 'push_huge' })).payload).toBe(true);
    const refused = await a.waitFor((f) => f.type === 'error' && f.id === undefined);
    expect(refused.payload.code).toBe('payload_too_large');
    const small = await a.waitFor((f) => f.type === 'widget_msg' && f.id === undefined && f.attached?.length === 1);
    expect(small.payload.content).toBe('small push');
    expect(a.frames.some((f) => f.type === 'widget_msg' && f.payload?.content === 'huge push')).toBe(false);
    a.close();
  });

  it('a frame whose announced buffers are cut short by a text frame is refused, and the text frame is still handled', async () => {
    const a = await lane('lane-cut', { buffers: 'binary' });
    const cut = a.send({ type: 'widget_msg', content: 'cut', binary_buffers: 2 });
    a.ws.send(Buffer.from([1]), { binary: true });
    const ping = await a.request({ type: 'ping' });
    expect(ping.type).toBe('pong');
    const error = await a.waitFor((f) => f.id === cut);
    expect(error.payload).toMatchObject({ code: 'invalid_frame' });
    expect(error.payload.message).toContain('announced 2 binary frames');
    expect((await a.request({ type: 'call', method: 'received' })).payload).toEqual([]);
    a.close();
  });
});
