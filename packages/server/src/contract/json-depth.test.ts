/**
 * The nesting bound of client JSON: the rule by example, the fast scanner held to its plain
 * reference and to the depth of the parsed value on generated text, and the refusal's wording.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LIMITS } from '../config/constants.js';
import { envelopeMember, jsonTooDeep, jsonTooDeepError, jsonTooDeepReference } from './json-depth.js';

/** `n` arrays, one inside the other, around `inner`. */
const nested = (n: number, inner = '1') => '['.repeat(n) + inner + ']'.repeat(n);

/** Levels of the deepest container below the envelope (level 0); -1 for a scalar. */
function levels(value: unknown): number {
  if (typeof value !== 'object' || value === null) return -1;
  let deepest = -1;
  for (const child of Object.values(value)) deepest = Math.max(deepest, levels(child));
  return deepest + 1;
}

describe('json depth: the rule', () => {
  it('the bound is 64 levels below the envelope', () => {
    expect(LIMITS.jsonDepthMax).toBe(64);
  });

  it('the envelope is level 0: args nested 64 levels in all pass, 65 are refused at the 65th bracket', () => {
    const ok = `{"args":${nested(64)}}`;
    expect(jsonTooDeep(ok)).toBe(-1);
    const deep = `{"args":${nested(65)}}`;
    expect(jsonTooDeep(deep)).toBe('{"args":'.length + 64);
    // An array envelope counts the same way.
    expect(jsonTooDeep(nested(65))).toBe(-1);
    expect(jsonTooDeep(nested(66))).toBe(65);
  });

  it('brackets and escaped quotes inside strings do not count', () => {
    const text = `{"a":"${'['.repeat(200)}","b":"\\"${'{'.repeat(200)}\\\\","c":[1]}`;
    expect(JSON.parse(text)).toBeTruthy();
    expect(jsonTooDeep(text, 1)).toBe(-1);
    expect(jsonTooDeep(`{"s":"\\\\",${'"k":['.repeat(3)}1]]]}`, 2)).toBe('{"s":"\\\\",'.length + 2 * '"k":['.length + 4);
  });

  it('scalars and empty text are never too deep; text that is not JSON gets an answer too', () => {
    for (const text of ['', '1', '"[[[["', 'null', ']]]]']) expect(jsonTooDeep(text, 0)).toBe(-1);
    expect(jsonTooDeep('[[', 0)).toBe(1);
    expect(jsonTooDeep('"unterminated [[[[', 0)).toBe(-1);
  });

  it('a 2 KB call nested 1,200 deep is refused at level 65', () => {
    const text = `{"type":"call","id":1,"method":"echo","args":${nested(1200)}}`;
    const at = jsonTooDeep(text);
    expect(at).toBe(text.indexOf('[') + 64);
    expect(jsonTooDeepReference(text)).toBe(at);
  });
});

describe('json depth: the fast scanner agrees with the reference', () => {
  const max = fc.integer({ min: 0, max: 12 });

  it('on any text made of brackets, quotes, escapes and fillers', () => {
    // More openings than closings, so that the depth drifts past the bound in most texts.
    const unit = fc.oneof(
      { arbitrary: fc.constantFrom('[', '{'), weight: 4 },
      { arbitrary: fc.constantFrom(']', '}'), weight: 3 },
      { arbitrary: fc.constantFrom('"', '\\'), weight: 2 },
      { arbitrary: fc.constantFrom(',', ':', 'a', '1', ' ', 'é', '😀'), weight: 2 },
    );
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 400, size: 'max' }), max, (text, m) => {
        expect(jsonTooDeep(text, m)).toBe(jsonTooDeepReference(text, m));
      }),
      { numRuns: 2000 },
    );
  });

  it('on JSON values with brackets and escapes in their strings, and both match the parsed depth', () => {
    const text = fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'x', '\n', '\u2028'), maxLength: 8 });
    const { value } = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, fc.oneof(text, fc.integer(), fc.constant(null), fc.boolean()), tie('array'), tie('object')),
      array: fc.array(tie('value'), { maxLength: 3 }),
      object: fc.dictionary(text, tie('value'), { maxKeys: 3 }),
    }));
    // Long chains too, so that values cross the bound near the default of 64.
    const chain = fc.tuple(fc.integer({ min: 55, max: 75 }), value).map(([n, v]) => {
      let out: unknown = v;
      for (let i = 0; i < n; i++) out = i % 2 ? { 'k]"': out } : [out];
      return out;
    });
    fc.assert(
      fc.property(fc.oneof(value, chain), fc.oneof(max, fc.constant(LIMITS.jsonDepthMax)), (v, m) => {
        const json = JSON.stringify(v);
        const fast = jsonTooDeep(json, m);
        expect(fast).toBe(jsonTooDeepReference(json, m));
        expect(fast !== -1).toBe(levels(v) > m);
        if (fast !== -1) expect('[{').toContain(json[fast]);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('json depth: the refusal', () => {
  it('is invalid_argument naming the bound and where it was crossed, cut short after six steps', () => {
    const text = `{"type":"call","args":${nested(1200)}}`;
    const error = jsonTooDeepError(text, jsonTooDeep(text));
    expect(error.code).toBe('invalid_argument');
    expect(error.status).toBe(400);
    expect(error.message).toBe('JSON nested deeper than 64 levels (at $.args[0][0][0][0][0]…)');
  });

  it('follows keys and indices, and quotes keys that are not names', () => {
    const text = '{"a":1,"meta":{"x":[0,{"odd key":[[[', at = jsonTooDeep(text, 4);
    expect(jsonTooDeepError(text, at, 4).message).toBe('JSON nested deeper than 4 levels (at $.meta.x[1]["odd key"][0])');
    const escaped = '{"k\\"[":[{"q":[[', at2 = jsonTooDeep(escaped, 3);
    expect(jsonTooDeepError(escaped, at2, 3).message).toBe('JSON nested deeper than 3 levels (at $["k\\"["][0].q[0])');
  });
});

describe('json depth: the id of a refused frame, read without parsing', () => {
  it('is the envelope member, wherever it sits, escaped or not', () => {
    expect(envelopeMember(`{"type":"call","args":${nested(5000)},"id":"late"}`, 'id')).toBe('late');
    expect(envelopeMember('{"a":{"id":1},"b":["id",2],"c":"id","id":-2.5e3}', 'id')).toBe(-2500);
    expect(envelopeMember('{ "\\u0069d" : "q\\"[" }', 'id')).toBe('q"[');
  });

  it('is undefined when it is no string or number, or the envelope is no object', () => {
    for (const text of ['{"id":null}', '{"id":{"x":1}}', '{"id":true}', '[{"id":1}]', '"id"', '', '{"id":']) expect(envelopeMember(text, 'id'), text).toBeUndefined();
  });

  it('agrees with JSON.parse on generated frames', () => {
    const id = fc.oneof(fc.string({ unit: fc.constantFrom('i', 'd', '"', '\\', '[', '{', ':', ',', '\u00e9') }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant(null), fc.jsonValue({ maxDepth: 2 }));
    const frame = fc.tuple(fc.dictionary(fc.constantFrom('type', 'idx', 'x', 'd', 'i d'), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 3 }), fc.option(id, { nil: undefined }), fc.boolean());
    fc.assert(
      fc.property(frame, ([members, id, first]) => {
        const entries = Object.entries(members);
        if (id !== undefined) (first ? entries.unshift : entries.push).call(entries, ['id', id]);
        const text = JSON.stringify(Object.fromEntries(entries));
        const parsed = (JSON.parse(text) as { id?: unknown }).id;
        expect(envelopeMember(text, 'id')).toEqual(typeof parsed === 'string' || typeof parsed === 'number' ? parsed : undefined);
      }),
      { numRuns: 1000 },
    );
  });
});
