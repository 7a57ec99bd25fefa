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
