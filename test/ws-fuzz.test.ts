/**
 * The WebSocket surface under arbitrary input: random JSON, wrong types, huge ids, unknown frame
 * types, binary garbage and frames in the wrong order. The gateway never crashes, every refusal is
 * an `error` frame with a stable code, and the socket stays usable (a ping after each frame is
 * answered), on a fresh socket and on one connected to an interface.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../packages/server/src/index.js';
import type { RunningServer } from '../packages/server/src/index.js';
import { cleanup, Client, gateway, type Frame } from './helpers.js';

const RUNS = 40;
const FRAMES_PER_RUN = 12;
const TYPES = ['connect', 'call', 'ping', 'chunk_start', 'chunk_end', 'widget_get', 'widget_set', 'widget_msg', 'cancel', 'nope', '', 'CALL', 'result'];

let g: RunningServer;
beforeAll(async () => {
  g = await gateway();
});
afterAll(cleanup);

const hugeId = fc.oneof(fc.constant(Number.MAX_SAFE_INTEGER * 1e6), fc.constant(-1e308), fc.string({ minLength: 1000, maxLength: 5000 }), fc.constant({ nested: 'id' }));
const value = fc.oneof(fc.jsonValue({ maxDepth: 3 }), hugeId);

/** One text or binary frame a hostile or buggy client might send. */
const frame = fc.oneof(
  // well-formed JSON of any shape
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
  // a frame-like object: a known or unknown type with fields of any type
  fc
    .record(
      {
        type: fc.oneof(fc.constantFrom(...TYPES), value),
        id: fc.oneof(fc.integer(), fc.string({ maxLength: 20 }), hugeId),
        target: value,
        method: fc.oneof(fc.constantFrom('echo', 'ticks', '__init__', '_private', 'read'), value),
        args: value,
        kwargs: value,
        mode: fc.oneof(fc.constantFrom('write', 'append', 'read', 'sideways'), value),
        path: fc.oneof(fc.constantFrom('a.txt', '../escape', '/etc/passwd', 'x\u0000y', ''), value),
        changes: value,
        content: value,
        buffers: value,
      },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o)),
  // not JSON at all
  fc.string({ maxLength: 200 }),
  // binary garbage
  fc.uint8Array({ maxLength: 4096 }).map((bytes) => Buffer.from(bytes)),
).filter((f) => typeof f !== 'string' || !/"type":"close"/.test(f)); // `close` ends the socket, by protocol


describe('WebSocket under arbitrary frames', { timeout: 180_000 }, () => {
  for (const connected of [false, true]) {
    it(`${connected ? 'a connected socket' : 'a fresh socket'}: never a crash, every refusal a stable code, the socket stays usable`, async () => {
      let round = 0;
      const codes = new Set<string>();
      await fc.assert(
        fc.asyncProperty(fc.array(frame, { minLength: 1, maxLength: FRAMES_PER_RUN }), async (frames) => {
          round += 1;
          const client = await Client.open(g.url);
          if (connected) await client.connect('streamer');
          // each frame is followed by a ping: its pong proves the socket still works
          for (const [i, f] of frames.entries()) {
            client.sendRaw(f);
            const id = `probe-${round}-${i}`;
            client.send({ type: 'ping', id });
            await client.waitFor((r) => r.id === id && r.type === 'pong', 20_000);
          }
          for (const error of client.frames.filter((r) => r.type === 'error')) {
            expect(Object.keys(ERROR_CODES), JSON.stringify(error)).toContain(error.payload?.code);
            expect(typeof error.payload?.message).toBe('string');
            expect(error.payload.code, JSON.stringify(error)).not.toBe('internal');
            codes.add(error.payload.code);
          }
          // and it still does real work
          if (!connected) {
            // A fuzzed connect may still be resolving (its pong comes first, by design), and a second
            // connect is refused meanwhile: retry until it settles, or use it if it connected.
            for (let attempt = 0; ; attempt++) {
              const reply = await client.request({ type: 'connect', target: 'streamer' });
              if (reply.type === 'connected') break;
              expect(reply.payload?.code).toBe('already_connected');
              if (client.frames.some((f) => f.type === 'connected') || attempt >= 100) break;
              await new Promise((r) => setTimeout(r, 100));
            }
          }
          const echoed = await client.request({ type: 'call', method: 'echo', args: ['still here'] });
          const ok = echoed.type === 'result' && echoed.payload === 'still here';
          // an upload the fuzz started first has to end, by protocol; then the call works
          if (!ok) expect(echoed.payload?.code).toMatch(/^(transfer_active|already_connected)$/);
          client.close();
        }),
        { numRuns: RUNS },
      );
      // the fuzz reached the refusals (a property that refuses nothing would prove nothing)
      expect([...codes]).toEqual(expect.arrayContaining(['invalid_frame', 'unknown_frame']));
      // the gateway itself is fine
      expect((await fetch(`${g.url}/v1/health`)).status).toBe(200);
    });
  }
});

/*
 * One answer per id. Every frame a client sends with an id gets exactly one terminal answer with
 * that id (result, the final stream frame, connected, pong, chunk_done, widget_state,
 * widget_change, widget_msg or widget_msg_done, released, or error), never `internal`; a frame
 * whose id JSON cannot carry exactly is refused with that id's text as a string. The documented
 * exceptions: `close` has no answer, nor has anything sent after it, and an upload is answered
 * at its chunk_end. Over frame types, nesting depth and id shapes, in four states of a socket.
 */

const ID_RUNS = 100;
const ID_FRAMES_PER_RUN = 10;
const TERMINAL = new Set(['result', 'connected', 'pong', 'chunk_done', 'widget_state', 'widget_change', 'widget_msg', 'widget_msg_done', 'released', 'error']);
const isAnswer = (f: Frame) => TERMINAL.has(f.type) || (f.type === 'stream' && f.final === true);
const FRAME_TYPES = ['connect', 'call', 'chunk_start', 'chunk_end', 'widget_get', 'widget_set', 'widget_msg', 'release', 'ping', 'nope', ''];

/** How a frame's id is written, and the id its answer must carry (undefined: answered without one). */
type IdShape = (i: number) => { text: string | undefined; answer: string | number | undefined };
const ID_SHAPES: Record<string, IdShape> = {
  integer: (i) => ({ text: String(1000 + i), answer: 1000 + i }),
  fraction: (i) => ({ text: `${i}.5`, answer: i + 0.5 }),
  string: (i) => ({ text: JSON.stringify(`f${i}`), answer: `f${i}` }),
  long: (i) => ({ text: JSON.stringify(`${'x'.repeat(2000)}${i}`), answer: `${'x'.repeat(2000)}${i}` }),
  unsafe: (i) => ({ text: String(2n ** 53n + 1n + BigInt(i)), answer: String(2n ** 53n + 1n + BigInt(i)) }),
  overflow: (i) => ({ text: `1e40${i}`, answer: `1e40${i}` }),
  rounded: (i) => ({ text: `1.${'0'.repeat(20)}${i + 1}`, answer: `1.${'0'.repeat(20)}${i + 1}` }),
  none: () => ({ text: undefined, answer: undefined }),
  object: (i) => ({ text: `{"n":${i}}`, answer: undefined }),
};

/** A JSON value as text: plain JSON, or arrays nested around the bound (64) and far past it. */
const valueText = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? 'null') },
  { weight: 1, arbitrary: fc.integer({ min: 60, max: 70 }).map((n) => '['.repeat(n) + ']'.repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 1000, max: 5000 }).map((n) => '['.repeat(n) + ']'.repeat(n)) },
);

/** The members a frame of each type may carry, fitting or not. */
const members = fc.record(
  {
    target: fc.oneof(fc.constantFrom('"streamer"', '"counter"', '"countr"', '""'), valueText),
    method: fc.oneof(fc.constantFrom('"echo"', '"missing"', '"_secret"', '"read"', '""'), valueText),
    args: valueText,
    kwargs: valueText,
    mode: fc.oneof(fc.constantFrom('"write"', '"append"', '"read"', '"sideways"'), valueText),
    path: fc.oneof(fc.constantFrom('"a.txt"', '"../escape"', '"/etc/passwd"', '"d/e.bin"'), valueText),
    params: valueText,
    changes: valueText,
    content: valueText,
    buffers: fc.oneof(fc.constantFrom('["AAE="]', '["not base64!"]', '[]'), valueText),
    buffer_paths: fc.oneof(fc.constantFrom('[["x"]]', '[["x"],["y"]]', '[[]]'), valueText),
    binary_buffers: fc.oneof(fc.constantFrom('1', '2', '0', '-1'), valueText),
  },
  { requiredKeys: [] },
);

/** Frames the schemas take, so that the handlers (not only the refusals) are reached. */
const wellFormed = fc.oneof(
  fc.constantFrom('"streamer"', '"counter"', '"countr"').map((target) => ({ type: 'connect', members: { target } })),
  fc.jsonValue({ maxDepth: 2 }).map((v) => ({ type: 'call', members: { method: '"echo"', args: `[${JSON.stringify(v)}]` } })),
  fc.constantFrom('"write"', '"append"', '"read"').map((mode) => ({ type: 'chunk_start', members: { mode, path: '"w.bin"' } })),
  fc.constant({ type: 'chunk_end', members: {} }),
  fc.constantFrom('widget_get', 'release', 'ping').map((type) => ({ type, members: {} })),
  fc.constantFrom({ changes: '{"count":1}' }, { changes: '{"x":null}', buffer_paths: '[["x"]]', buffers: '["AAE="]' }, { changes: '{"x":null}', buffers: '["AAE="]' }).map((members) => ({ type: 'widget_set', members })),
  fc.option(valueText, { nil: undefined }).map((content) => ({ type: 'widget_msg', members: content === undefined ? {} : { content } })),
);

/** One frame: a text frame with a type, members and an id written some way; or a binary or non-JSON one. */
const anyFrame = fc.oneof(
  { weight: 4, arbitrary: fc.record({ type: fc.constantFrom(...FRAME_TYPES), members, shape: fc.constantFrom(...Object.keys(ID_SHAPES)), idFirst: fc.boolean() }) },
  { weight: 4, arbitrary: fc.tuple(wellFormed, fc.constantFrom(...Object.keys(ID_SHAPES)), fc.boolean()).map(([frame, shape, idFirst]) => ({ ...frame, shape, idFirst })) },
  // a bounded generator: a streaming call that ends
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 3 }).map((n) => ({ type: 'call', members: { method: '"ticks"', args: `[${n}]` }, shape: 'integer', idFirst: false })) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 512 }).map((bytes) => ({ binary: Buffer.from(bytes) })) },
  { weight: 1, arbitrary: fc.constantFrom('{"type":"call","id":5', 'not json', '{"id":"cut","type":') .map((text) => ({ text })) },
);

type Generated = { binary: Buffer } | { text: string } | { type: string; members: Record<string, string>; shape: string; idFirst: boolean };

/** The frame's bytes and the id its answer carries. Ids are made unique by `i`. */
function render(frame: Generated, i: number): { data: string | Buffer; answer: string | number | undefined } {
  if ('binary' in frame) return { data: frame.binary, answer: undefined };
  // Not JSON, but the id it starts with is answered (as a frame nested too deep is).
  if ('text' in frame) return { data: frame.text, answer: frame.text.startsWith('{"id":"cut"') ? 'cut' : frame.text.includes('"id":5') ? 5 : undefined };
  const { text: id, answer } = ID_SHAPES[frame.shape]!(i);
  const entries = [`"type":${JSON.stringify(frame.type)}`, ...Object.entries(frame.members).map(([k, v]) => `"${k}":${v}`)];
  if (id !== undefined) (frame.idFirst ? entries.unshift : entries.push).call(entries, `"id":${id}`);
  return { data: `{${entries.join(',')}}`, answer };
}

type State = 'fresh' | 'connected' | 'mid-upload' | 'after close';

/** The frames of a run, short enough to read in a failure. */
function shown(frames: Generated[]): string {
  const short = (f: Generated, i: number) => {
    const { data } = render(f, i);
    return typeof data === 'string' ? data.replace(/\[{5,}/g, '[[…').replace(/\]{5,}/g, '…]]').slice(0, 200) : `<${data.length} binary bytes>`;
  };
  return JSON.stringify(frames.map(short));
}

describe('WebSocket fuzz: one answer per id', { timeout: 120_000 }, () => {
  for (const state of ['fresh', 'connected', 'mid-upload', 'after close'] as State[]) {
    it(`${state}: every id answered exactly once (none after close), never internal`, async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(anyFrame as fc.Arbitrary<Generated>, { minLength: 1, maxLength: ID_FRAMES_PER_RUN }), fc.nat({ max: ID_FRAMES_PER_RUN }), async (frames, cut) => {
          run += 1;
          // A non-JSON frame with an id ("cut", 5) is answered with it: one of each per run, or two answers would share an id.
          frames = frames.filter((f, i) => !('text' in f) || f.text === 'not json' || frames.findIndex((g) => 'text' in g && g.text === f.text) === i);
          const client = await Client.open(g.url);
          const closed = new Promise<number>((resolve) => client.ws.once('close', (code) => resolve(code)));
          if (state !== 'fresh') await client.connect('streamer');
          if (state === 'mid-upload') client.send({ type: 'chunk_start', id: 'upload', mode: 'write', path: `fuzz-${run}.bin` });
          const expected: Array<string | number> = state === 'mid-upload' ? ['upload'] : [];
          const silent: Array<string | number> = [];
          const closeAt = state === 'after close' ? Math.min(cut, frames.length) : -1;
          for (const [i, frame] of frames.entries()) {
            if (i === closeAt) client.send({ type: 'close', id: 'close' });
            const { data, answer } = render(frame, i);
            client.sendRaw(data);
            if (answer !== undefined) (closeAt !== -1 && i >= closeAt ? silent : expected).push(answer);
          }
          if (state === 'after close') {
            if (closeAt === frames.length) client.send({ type: 'close', id: 'close' });
            expect(await closed).toBe(1000);
          } else {
            // An upload the fuzz started ends here (by protocol it is answered at its chunk_end); then all is answered.
            client.sendRaw('{"type":"chunk_end"}'); // no id: the active upload's
            for (const id of expected) {
              await client.waitFor((f) => f.id === id && isAnswer(f)).catch((err: Error) => {
                throw new Error(`id ${String(id).slice(0, 40)} got no answer to ${shown(frames)}: ${err.message}`);
              });
            }
            await client.request({ type: 'ping', id: `last-${run}` });
          }
          const answers = (id: string | number) => client.frames.filter((f) => f.id === id && isAnswer(f));
          for (const id of expected) {
            const got = answers(id);
            if (state === 'after close') expect(got.length, `id ${id}: ${JSON.stringify(got)}`).toBeLessThanOrEqual(1);
            else expect(got, `id ${id}`).toHaveLength(1);
          }
          for (const id of [...silent, 'close']) expect(answers(id), `id ${id} after close`).toEqual([]);
          for (const frame of client.frames) {
            expect(frame.id === null, JSON.stringify(frame)).toBe(false);
            if (frame.type === 'error') expect(frame.payload.code, JSON.stringify(frame)).not.toBe('internal');
          }
          client.close();
        }),
        { numRuns: ID_RUNS, endOnFailure: true },
      );
    });
  }
});
