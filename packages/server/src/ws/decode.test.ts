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
