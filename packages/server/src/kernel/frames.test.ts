import { describe, expect, it } from 'vitest';
import { encodeFrame, FrameDecoder, splitBody } from './frames.js';

describe('bridge frames', () => {
  it('round-trip a header and a body, whatever the chunking', () => {
    const body = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251));
    const wire = Buffer.concat([...encodeFrame({ op: 'a', n: 1 }), ...encodeFrame({ op: 'b' }, body), ...encodeFrame({ op: 'c', s: 'é' })]);
    for (const size of [1, 7, 8, 9, 4096, wire.length]) {
      const decoder = new FrameDecoder(1 << 20);
      const frames = [];
      for (let at = 0; at < wire.length; at += size) frames.push(...decoder.push(wire.subarray(at, at + size)));
      expect(frames.map((f) => f.header)).toEqual([{ op: 'a', n: 1 }, { op: 'b' }, { op: 'c', s: 'é' }]);
      expect(frames[1]!.body.equals(body)).toBe(true);
      expect(frames[0]!.body.length).toBe(0);
    }
  });

  it('refuses a frame over the bound and a header without op', () => {
    expect(() => new FrameDecoder(100).push(Buffer.concat(encodeFrame({ op: 'x' }, Buffer.alloc(200))))).toThrow(/exceeds/);
    expect(() => new FrameDecoder(100).push(Buffer.concat(encodeFrame({ nop: 1 })))).toThrow(/op/);
  });

  it('several buffers make one body, and buffer_lengths cut it back into them', () => {
    const buffers = [Buffer.from('abc'), Buffer.alloc(0), Buffer.from([0, 255])];
    const [frame] = new FrameDecoder(1 << 20).push(Buffer.concat(encodeFrame({ op: 'w', buffer_lengths: [3, 0, 2] }, buffers)));
    expect(frame!.body.equals(Buffer.from([97, 98, 99, 0, 255]))).toBe(true);
    expect(splitBody(frame!.header.buffer_lengths, frame!.body).map((b) => [...b])).toEqual([[97, 98, 99], [], [0, 255]]);
    expect(splitBody(undefined, Buffer.alloc(0))).toEqual([]);
    expect(() => splitBody([4], frame!.body)).toThrow(/add up/);
    expect(() => splitBody([-1, 6], frame!.body)).toThrow(/non-negative/);
  });
});
