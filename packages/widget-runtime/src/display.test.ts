import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { connectWith } from './connect.js';
import { Display, chooseRepresentation, valueOfFrame } from './display.js';
import type { WebSocketLike } from './net/socket.js';

const PNG = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
const JPEG = Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 0, 16]);
const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

/** A socket playing the gateway: records what the page sends, and delivers text and binary frames. */
function gatewaySocket() {
  const sockets: FakeSocket[] = [];
  class FakeSocket implements WebSocketLike {
    readyState = 0;
    binaryType = 'blob';
    readonly sent: Array<Record<string, any>> = [];
    onopen: WebSocketLike['onopen'] = null;
    onmessage: WebSocketLike['onmessage'] = null;
    onclose: WebSocketLike['onclose'] = null;
    onerror: WebSocketLike['onerror'] = null;
    constructor(readonly url: string) {
      sockets.push(this);
    }
    send(data: string | ArrayBuffer | ArrayBufferView) {
      if (typeof data === 'string') this.sent.push(JSON.parse(data));
    }
    close() {
      this.readyState = 3;
    }
    receive(frame: object, ...buffers: Uint8Array[]) {
      this.onmessage?.({ data: JSON.stringify(frame) });
      for (const buffer of buffers) this.onmessage?.({ data: buffer.slice().buffer });
    }
    lastCall() {
      return this.sent.filter((f) => f.type === 'call').at(-1)!;
    }
  }
  return { FakeSocket, sockets };
}

async function connected() {
  const { FakeSocket, sockets } = gatewaySocket();
  const opening = connectWith({ url: 'http://gw.test', target: 'plots' }, { WebSocket: FakeSocket, limits: { pingIntervalMs: 60_000 } });
  const socket = sockets[0]!;
  socket.readyState = 1;
  socket.onopen?.({});
  socket.receive({ type: 'connected', id: socket.sent[0]!.id, payload: { uuid: 'u', module: 'plots', config: {} } });
  return { conn: await opening, socket };
}

beforeEach(() => vi.spyOn(console, 'warn').mockImplementation(() => undefined));
afterEach(() => vi.restoreAllMocks());

describe('rich values over the socket', () => {
  it('call() resolves a result with a bundle as a Display, binary data from the binary frames after it', async () => {
    const { conn, socket } = await connected();
    const answer = conn.call('figure');
    await vi.waitFor(() => expect(socket.lastCall()).toBeDefined());
    socket.receive(
      { type: 'result', id: socket.lastCall().id, payload: null, display: { 'image/png': null, 'text/plain': '<Figure>' }, metadata: { 'image/png': { width: 640 } }, buffer_paths: [['image/png']], binary_buffers: 1 },
      PNG,
    );
    const display = (await answer) as Display;
    expect(display).toBeInstanceOf(Display);
    expect(display.payload).toBeNull();
    expect([...display.bytes('image/png')!]).toEqual([...PNG]);
    expect(display.data['text/plain']).toBe('<Figure>');
    expect(display.metadata).toEqual({ 'image/png': { width: 640 } });
    expect(String(display)).toBe('<Figure>');

    // A gateway that sends base64 (and a JSON payload beside the bundle) is read too.
    const both = conn.call('point');
    await vi.waitFor(() => expect(socket.sent.filter((f) => f.type === 'call')).toHaveLength(2));
    socket.receive({ type: 'result', id: socket.lastCall().id, payload: { x: 1 }, display: { 'image/jpeg': base64(JPEG), 'text/plain': 'P(1)' } });
    const point = (await both) as Display;
    expect(point.payload).toEqual({ x: 1 });
    expect([...point.bytes('image/jpeg')!]).toEqual([...JPEG]);

    // A plain result is still its JSON value.
    const plain = conn.call('add');
    await vi.waitFor(() => expect(socket.sent.filter((f) => f.type === 'call')).toHaveLength(3));
    socket.receive({ type: 'result', id: socket.lastCall().id, payload: 3 });
    await expect(plain).resolves.toBe(3);
  });

  it('a generator method streams to onItem (values and Displays) and resolves with the count; without onItem it is refused', async () => {
    const { conn, socket } = await connected();
    const items: unknown[] = [];
    const streamed = conn.call('frames', [], {}, { onItem: (item) => items.push(item) });
    await vi.waitFor(() => expect(socket.lastCall()).toBeDefined());
    const id = socket.lastCall().id;
    socket.receive({ type: 'stream', id, payload: { progress: 0.5 }, final: false });
    socket.receive({ type: 'stream', id, payload: null, final: false, display: { 'image/png': null, 'text/plain': 'frame' }, buffer_paths: [['image/png']], binary_buffers: 1 }, PNG);
    socket.receive({ type: 'stream', id, payload: null, final: true });
    await expect(streamed).resolves.toBe(2);
    expect(items[0]).toEqual({ progress: 0.5 });
    expect(items[1]).toBeInstanceOf(Display);
    expect([...(items[1] as Display).bytes('image/png')!]).toEqual([...PNG]);

    const refused = conn.call('frames');
    await vi.waitFor(() => expect(socket.sent.filter((f) => f.type === 'call')).toHaveLength(2));
    socket.receive({ type: 'stream', id: socket.lastCall().id, payload: 1, final: false });
    await expect(refused).rejects.toMatchObject({ code: 'stream_unsupported' });
  });

  it('an emit() event with a bundle reaches the page as a Display; a plain one as its payload', async () => {
    const { conn, socket } = await connected();
    const events: unknown[] = [];
    conn.on('event', (payload) => events.push(payload));
    socket.receive({ type: 'event', payload: null, display: { 'image/png': null, 'text/plain': 'fig' }, buffer_paths: [['image/png']], binary_buffers: 1 }, PNG);
    socket.receive({ type: 'event', payload: { progress: 1 } });
    expect(events).toHaveLength(2);
    expect((events[0] as Display).bytes('image/png')).toEqual(PNG);
    expect(events[1]).toEqual({ progress: 1 });
  });

  it('display fields that do not fit their binary frames reject the call with invalid_frame', async () => {
    const { conn, socket } = await connected();
    const answer = conn.call('figure');
    await vi.waitFor(() => expect(socket.lastCall()).toBeDefined());
    socket.receive({ type: 'result', id: socket.lastCall().id, payload: null, display: { 'text/plain': 'x' }, buffer_paths: [['image/png']], binary_buffers: 1 }, PNG);
    await expect(answer).rejects.toMatchObject({ code: 'invalid_frame' });
    const errors: string[] = [];
    conn.on('error', (error) => errors.push(error.code));
    socket.receive({ type: 'event', payload: null, display: 'not a bundle' });
    expect(errors).toEqual(['invalid_frame']);
  });
});

describe('valueOfFrame', () => {
  it('is the payload without display, a Display with it', () => {
    expect(valueOfFrame({ type: 'result', payload: [1] }, [])).toEqual([1]);
    const display = valueOfFrame({ type: 'result', payload: 2, display: { 'text/html': '<b>2</b>', 'text/plain': '2' } }, []) as Display;
    expect(display).toBeInstanceOf(Display);
    expect(display.payload).toBe(2);
    expect(display.metadata).toEqual({});
    expect(() => valueOfFrame({ type: 'result', payload: 1 }, [new DataView(PNG.buffer)])).toThrow(/without display/);
    expect(() => valueOfFrame({ type: 'result', payload: 1, display: { 'image/png': null }, buffer_paths: [['image/png'], ['x']] }, [new DataView(PNG.buffer)])).toThrow(/buffer_paths/);
  });
});

describe('chooseRepresentation', () => {
  it('prefers images, then HTML, Markdown, LaTeX, JSON and plain text', () => {
    expect(chooseRepresentation({ data: { 'text/plain': 't', 'text/html': '<b>', 'image/png': PNG } }).shown).toMatchObject({ mime: 'image/png', kind: 'image' });
    expect(chooseRepresentation({ data: { 'text/plain': 't', 'text/html': '<table>' } }).shown).toEqual({ mime: 'text/html', kind: 'html', html: '<table>' });
    expect(chooseRepresentation({ data: { 'text/plain': 't', 'image/svg+xml': '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>' } }).shown).toMatchObject({ mime: 'image/svg+xml', kind: 'image' });
    expect(chooseRepresentation({ data: { 'text/plain': 't', 'text/markdown': '# T' } }).shown).toEqual({ mime: 'text/markdown', kind: 'text', text: '# T' });
    expect(chooseRepresentation({ data: { 'text/plain': 't', 'application/json': { a: [1] } } }).shown).toEqual({ mime: 'application/json', kind: 'text', text: '{\n  "a": [\n    1\n  ]\n}' });
    expect(chooseRepresentation({ display: { 'text/plain': 't' } }).shown).toEqual({ mime: 'text/plain', kind: 'text', text: 't' });
    expect(chooseRepresentation(new Display({ 'image/jpeg': base64(JPEG) })).shown).toMatchObject({ mime: 'image/jpeg', bytes: JPEG });
    expect(chooseRepresentation({ data: {} })).toEqual({ shown: undefined, errors: [] });
  });

  it('an image whose bytes are not what its MIME type says is an error, and the next representation shows', () => {
    expect(chooseRepresentation({ data: { 'image/png': base64(JPEG), 'text/plain': 'fig' } })).toEqual({
      shown: { mime: 'text/plain', kind: 'text', text: 'fig' },
      errors: ['The image/png data is not a PNG image.'],
    });
    expect(chooseRepresentation({ data: { 'image/jpeg': 'not base64 !', 'image/svg+xml': '<html>', 'text/plain': 'x' } }).errors).toEqual([
      'The image/jpeg data is not a JPEG image.',
      'The image/svg+xml data is not an SVG image.',
    ]);
  });
});
