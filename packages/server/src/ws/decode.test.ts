import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ClientFrames } from '../contract/frames.js';
import { decodeFrame } from './decode.js';

/** What the schema alone makes of a frame: the decoded frame, or the error's code, message and issues. */
function bySchema(raw: Record<string, unknown>) {
  const parsed = ClientFrames.call.safeParse(raw);
  return parsed.success ? { frame: parsed.data } : { invalid: parsed.error.issues.map((i) => i.path.join('.')) };
}

function decoded(text: string) {
  const result = decodeFrame(Buffer.from(text), ClientFrames);
  return result.ok ? { frame: result.frame } : { invalid: ((result.error.toDetail().issues ?? []) as Array<{ path: string | null }>).map((i) => i.path ?? '') };
}

describe('decodeFrame of call frames', () => {
  // Call frames skip the schema when they plainly satisfy it: every one must come out as the schema gives it.
  const frames = [
    '{"type":"call","method":"echo"}',
    '{"type":"call","id":7,"method":"echo","args":[1,{"a":null}],"kwargs":{"x":[2]}}',
    '{"type":"call","id":"abc","method":"echo","args":[],"kwargs":{}}',
    '{"type":"call","id":1.5,"method":"echo","extra":true,"binary_buffers":2}',
    `{"type":"call","id":"${'i'.repeat(256)}","method":"m"}`,
    `{"type":"call","id":"${'i'.repeat(257)}","method":"m"}`,
    '{"type":"call","id":1e999,"method":"m"}',
    '{"type":"call","id":null,"method":"m"}',
    '{"type":"call","id":true,"method":"m"}',
    '{"type":"call","method":""}',
    '{"type":"call","method":3}',
    '{"type":"call"}',
    '{"type":"call","method":"m","args":null}',
    '{"type":"call","method":"m","args":{"0":1}}',
    '{"type":"call","method":"m","kwargs":[]}',
    '{"type":"call","method":"m","kwargs":null}',
    '{"type":"call","method":"m","kwargs":"x"}',
  ];
  for (const text of frames) {
    it(`decodes ${text.slice(0, 70)} as the schema does`, () => {
      expect(decoded(text)).toEqual(bySchema(JSON.parse(text)));
    });
  }
});

describe('decodeFrame of generated call frames', () => {
  // The fast path (plainCall) beside its reference, the schema: the same frame or the same issues, on any call frame.
  const absent = fc.constant(undefined);
  const json = fc.jsonValue({ maxDepth: 2 });
  const frame = fc.record({
    id: fc.oneof(absent, fc.constant(null), fc.boolean(), fc.maxSafeInteger(), fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d)), fc.string({ maxLength: 8 }), fc.string({ minLength: 254, maxLength: 258 })),
    method: fc.oneof(absent, fc.constant(''), fc.string({ minLength: 1, maxLength: 8 }), fc.integer(), fc.constant(null)),
    args: fc.oneof(absent, fc.array(json, { maxLength: 3 }), fc.constant(null), fc.dictionary(fc.string(), json, { maxKeys: 2 }), fc.string()),
    kwargs: fc.oneof(absent, fc.dictionary(fc.string(), json, { maxKeys: 3 }), fc.array(json, { maxLength: 2 }), fc.constant(null), fc.string(), fc.integer()),
    extra: fc.oneof(absent, json),
    // Every other field the schema has (none today): a field added there and not to plainCall fails here.
    others: fc.record(Object.fromEntries(Object.keys(ClientFrames.call.shape).filter((key) => !['type', 'id', 'method', 'args', 'kwargs'].includes(key)).map((key) => [key, fc.oneof(absent, json)]))),
  });

  it('gives what the schema gives', () => {
    fc.assert(
      fc.property(frame, ({ id, method, args, kwargs, extra, others }) => {
        const raw = JSON.parse(JSON.stringify({ type: 'call', id, method, args, kwargs, extra, ...others })) as Record<string, unknown>;
        expect(decoded(JSON.stringify(raw))).toEqual(bySchema(raw));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('decodeFrame of frames nested past the bound', () => {
  const nested = (n: number) => '['.repeat(n) + ']'.repeat(n);

  it('refuses a frame nested past LIMITS.jsonDepthMax with invalid_argument, answering its id', () => {
    for (const text of [`{"type":"call","id":"deep","method":"echo","args":${nested(1200)}}`, `{"id":"deep","type":"widget_msg","content":${nested(65)}}`]) {
      const result = decodeFrame(Buffer.from(text), ClientFrames);
      expect(result.ok).toBe(false);
      expect(result.id).toBe('deep');
      expect(result.ok ? undefined : result.error.toDetail()).toMatchObject({ code: 'invalid_argument', message: expect.stringContaining('JSON nested deeper than 64 levels') });
    }
  });

  it('a too-deep frame is refused without being parsed: its id is read from the text, JSON or not', () => {
    const unclosed = decodeFrame(Buffer.from(`{"type":"call","args":${'['.repeat(100)},"id":1`), ClientFrames);
    expect(unclosed).toMatchObject({ ok: false, id: undefined });
    const idFirst = decodeFrame(Buffer.from(`{"type":"call","id":1,"args":${'['.repeat(100)}`), ClientFrames);
    expect(idFirst).toMatchObject({ ok: false, id: 1 });
    expect(idFirst.ok ? undefined : idFirst.error.code).toBe('invalid_argument');
  });

  it('decodes a frame whose args are nested exactly to the bound', () => {
    const result = decodeFrame(Buffer.from(`{"type":"call","id":2,"method":"echo","args":${nested(64)}}`), ClientFrames);
    expect(result.ok).toBe(true);
  });
});

describe('decodeFrame: numeric ids come back exactly or are refused naming their text', () => {
  // What a double holds as written, by construction: safe integers, and the shortest text of any finite double that is not a whole number past 2^53.
  const exact = fc.oneof(
    fc.maxSafeInteger().map((n) => ({ text: String(n), exact: true })),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => ({ text: JSON.stringify(d), exact: !Number.isInteger(d) || Number.isSafeInteger(d) })),
  );
  // What it does not: integers past 2^53, too many digits, overflow and underflow.
  const inexact = fc.oneof(
    fc.tuple(fc.constantFrom('', '-'), fc.bigInt({ min: 2n ** 53n, max: 2n ** 80n })).map(([sign, n]) => `${sign}${n}`),
    fc.integer({ min: 17, max: 40 }).map((k) => `1.${'0'.repeat(k)}1`),
    fc.constantFrom('1e400', '-1e400', '1e-400', '123456789012345678901234567890', '0.30000000000000000001'),
  ).map((text) => ({ text, exact: false }));
  const frame = fc.record({
    id: fc.oneof(exact, inexact),
    key: fc.constantFrom('"id"', '"\\u0069d"', '"i\\u0064"'),
    // other members, some holding an "id" of their own
    before: fc.constantFrom('', '"args":[{"id":1}],', '"x":"\\"id\\"",', '"meta":{"id":"no"},'),
    after: fc.constantFrom('', ',"kwargs":{"id":2}', ',"y":[1,"id",3]'),
    type: fc.constantFrom('call', 'ping', 'nope'),
    first: fc.boolean(),
    // spacing as Python's json.dumps writes it, or none
    spaced: fc.boolean(),
  });

  it('agrees with the id as written, wherever it sits, whatever else names "id" and however the key is spelled', () => {
    fc.assert(
      fc.property(frame, ({ id, key, before, after, type, first, spaced }) => {
        const member = `${key}:${id.text}`;
        const others = `"type":"${type}","method":"m"${before ? `,${before.replace(/,$/, '')}` : ''}`;
        const compact = first ? `{${member},${others}${after}}` : `{${others},${member}${after}}`;
        const text = spaced ? compact.replace(/([,:])(?=["\[{\d-])/g, '$1 ') : compact;
        const result = decodeFrame(Buffer.from(text), ClientFrames);
        if (id.exact) {
          expect(result.id, text).toBe(Number(id.text));
        } else {
          expect(result.ok, text).toBe(false);
          expect(result.id, text).toBe(id.text);
          expect(result.ok ? undefined : result.error.toDetail(), text).toMatchObject({ code: 'invalid_frame', issues: [{ path: 'id' }] });
        }
      }),
      { numRuns: 2000 },
    );
  });
});
