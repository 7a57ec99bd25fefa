import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeFrame, FrameDecoder, FrameQueue, splitBody } from './frames.js';

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

  it('a frame queue writes what it holds as the frames themselves: one buffer, or the parts past its bound', () => {
    const body = [Buffer.from('abc'), Buffer.alloc(0), Buffer.from([0, 255])];
    const frames: Array<[object, Buffer[]]> = [
      [{ op: 'call', id: 1, s: 'é €' }, []],
      [{ op: 'widget_set', id: 2 }, body],
      [{ op: 'credit', id: 1, n: 4 }, [Buffer.alloc(0)]],
    ];
    const expected = Buffer.concat(frames.flatMap(([header, parts]) => encodeFrame(header, parts)));
    for (const bound of [1 << 20, 10]) {
      const queue = new FrameQueue(bound);
      expect(queue.empty).toBe(true);
      for (const [header, parts] of frames) queue.push(header, parts);
      expect(queue.empty).toBe(false);
      const written = queue.take();
      expect(written.length).toBe(bound > expected.length ? 1 : 5); // past the bound: each header, then each body part
      expect(Buffer.concat(written).equals(expected)).toBe(true);
      expect(queue.empty).toBe(true);
      expect(Buffer.concat(queue.take()).length).toBe(0);
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

  it('a chunk body that spans reads is filled in place and reused only after its release', () => {
    const decoder = new FrameDecoder(1 << 20, 1024, 2);
    const wire = (fill: number) => Buffer.concat(encodeFrame({ op: 'chunk', id: 1 }, Buffer.alloc(1000, fill)));
    const split = (bytes: Buffer) => [bytes.subarray(0, 300), bytes.subarray(300)];
    const [first] = split(wire(1)).flatMap((part) => decoder.push(part));
    expect(first!.body.equals(Buffer.alloc(1000, 1))).toBe(true);
    // Not released yet: the next chunk must not land in the first one's buffer.
    const [second] = split(wire(2)).flatMap((part) => decoder.push(part));
    expect(first!.body.equals(Buffer.alloc(1000, 1))).toBe(true);
    expect(second!.body.buffer).not.toBe(first!.body.buffer);
    first!.release!();
    const [third] = split(wire(3)).flatMap((part) => decoder.push(part));
    expect(third!.body.buffer).toBe(first!.body.buffer);
    expect(third!.body.equals(Buffer.alloc(1000, 3))).toBe(true);
    expect(second!.body.equals(Buffer.alloc(1000, 2))).toBe(true);
  });

  it('only chunk bodies that fit the pooled buffers are pooled; frames after a filled body still decode', () => {
    const decoder = new FrameDecoder(1 << 20, 1024, 2);
    const big = Buffer.concat(encodeFrame({ op: 'chunk', id: 1 }, Buffer.alloc(2000, 7)));
    const result = Buffer.concat(encodeFrame({ op: 'result', id: 2 }, Buffer.alloc(900, 8)));
    const next = Buffer.concat(encodeFrame({ op: 'end', id: 1 }));
    const wire = Buffer.concat([big, result, next]);
    const frames = [decoder.push(wire.subarray(0, 100)), decoder.push(wire.subarray(100, 2100)), decoder.push(wire.subarray(2100))].flat();
    expect(frames.map((f) => [f.header.op, f.body.length, f.release !== undefined])).toEqual([['chunk', 2000, false], ['result', 900, false], ['end', 0, false]]);
    expect(frames[0]!.body.equals(Buffer.alloc(2000, 7))).toBe(true);
    expect(frames[1]!.body.equals(Buffer.alloc(900, 8))).toBe(true);
  });

  it('reads in place: small frames survive the scratch buffer being reused, a large body is read straight into it', () => {
    const decoder = new FrameDecoder(1 << 20, 1 << 17, 2);
    const chunkBody = Buffer.from(Array.from({ length: 100_000 }, (_, i) => i % 253));
    const wire = Buffer.concat([
      ...encodeFrame({ op: 'result', id: 1 }, Buffer.from('first')),
      ...encodeFrame({ op: 'chunk', id: 2 }, chunkBody),
      ...encodeFrame({ op: 'result', id: 3 }, Buffer.from('last')),
    ]);
    // A reader that copies up to `size` bytes of the wire into whatever target it is given.
    const frames = [];
    const targets = [];
    for (let at = 0, step = 0; at < wire.length; step++) {
      const target = decoder.readTarget();
      targets.push(target.length);
      const n = wire.copy(target, 0, at, Math.min(wire.length, at + (step % 2 ? 30_000 : 70)));
      at += n;
      frames.push(...decoder.commitRead(n));
    }
    expect(frames.map((f) => [f.header.op, f.body.toString('latin1').length])).toEqual([['result', 5], ['chunk', 100_000], ['result', 4]]);
    expect(frames[0]!.body.toString()).toBe('first');
    expect(frames[1]!.body.equals(chunkBody)).toBe(true);
    expect(frames[2]!.body.toString()).toBe('last');
    // Once the chunk's header was in, reads were offered exactly the rest of its body.
    expect(targets.some((length) => length !== 65_536 && length < 100_000 && length > 60_000)).toBe(true);
  });

  it('a result of megabytes in its header, read through the reused scratch buffer, arrives intact', () => {
    const decoder = new FrameDecoder(1 << 26, 1 << 20, 16);
    const result = Array.from({ length: 200_000 }, (_, i) => `v${i}`);
    const wire = Buffer.concat([...encodeFrame({ op: 'result', id: 7, result }, []), ...encodeFrame({ op: 'result', id: 8 }, Buffer.from('next'))]);
    const frames = [];
    for (let at = 0; at < wire.length; ) {
      const n = wire.copy(decoder.readTarget(), 0, at, wire.length);
      at += n;
      frames.push(...decoder.commitRead(n));
    }
    expect(frames.map((f) => f.header.id)).toEqual([7, 8]);
    expect(frames[0]!.header.result).toEqual(result);
    expect(frames[1]!.body.toString()).toBe('next');
  });

  it('an idle decoder lets its pooled bodies go; one still reading keeps them', () => {
    const decoder = new FrameDecoder(1 << 20, 1024, 2);
    const wire = Buffer.concat(encodeFrame({ op: 'chunk', id: 1 }, Buffer.alloc(1000, 1)));
    const read = () => [wire.subarray(0, 300), wire.subarray(300)].flatMap((part) => decoder.push(part))[0]!;
    const first = read();
    first.release!();
    decoder.trimPool(); // a body was taken since the last trim: kept
    const second = read();
    expect(second.body.buffer).toBe(first.body.buffer);
    second.release!();
    decoder.trimPool();
    decoder.trimPool(); // nothing taken in between: dropped
    expect(read().body.buffer).not.toBe(first.body.buffer);
  });

  it('reading in place (cutFresh for a fresh read) gives the frames push gives, however the wire is cut', () => {
    // The reference: `push`, fed the wire in pieces. The fast path: reads into `readTarget`
    // committed with `commitRead`, whose fresh reads are cut by `cutFresh`.
    const frame = fc.record({
      op: fc.constantFrom('result', 'chunk', 'item', 'end', 'error'),
      fields: fc.dictionary(fc.constantFrom('id', 'payload', 's', 'n'), fc.jsonValue({ maxDepth: 2 })),
      body: fc.oneof(fc.constant(0), fc.nat(300), fc.integer({ min: 60_000, max: 140_000 })),
    });
    fc.assert(
      fc.property(fc.array(frame, { minLength: 1, maxLength: 12 }), fc.array(fc.integer({ min: 1, max: 90_000 }), { minLength: 1, maxLength: 8 }), (frames, sizes) => {
        const bodies = frames.map((f, i) => Buffer.alloc(f.body, i + 1));
        const wire = Buffer.concat(frames.flatMap((f, i) => encodeFrame({ ...f.fields, op: f.op }, bodies[i]!)));
        const decoded = (frames: Array<{ header: unknown; body: Buffer }>) => frames.map((f) => [f.header, f.body.toString('hex')]);

        const reference = new FrameDecoder(1 << 20, 1 << 17, 4);
        const pushed = [];
        for (let at = 0, step = 0; at < wire.length; step++) {
          const end = Math.min(wire.length, at + sizes[step % sizes.length]!);
          pushed.push(...reference.push(wire.subarray(at, end)));
          at = end;
        }

        const inPlace = new FrameDecoder(1 << 20, 1 << 17, 4);
        const read = [];
        for (let at = 0, step = 0; at < wire.length; step++) {
          const n = wire.copy(inPlace.readTarget(), 0, at, Math.min(wire.length, at + sizes[step % sizes.length]!));
          at += n;
          // Kept as handed on: what a read gives must survive the scratch buffer being written again.
          read.push(...inPlace.commitRead(n));
        }
        expect(decoded(read)).toEqual(decoded(pushed));
        expect(pushed.map((f) => f.header)).toEqual(frames.map((f) => JSON.parse(JSON.stringify({ ...f.fields, op: f.op }))));
      }),
      { numRuns: 300 },
    );
  });
});
