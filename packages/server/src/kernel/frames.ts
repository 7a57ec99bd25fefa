/**
 * Length-prefixed frames of the kernel bridge (see README.md in this folder):
 * `u32be header_len | u32be body_len | header JSON | body bytes`.
 */

export interface BridgeFrame {
  header: Record<string, unknown> & { op: string };
  body: Buffer;
  /** Present when `body` is the decoder's to reuse: call it once nothing refers to the body any more. */
  release?: () => void;
}

const EMPTY = Buffer.alloc(0);

/**
 * Encodes one frame (`header` may be its JSON text already) as the buffers to write: prefix and header in one, the body never copied
 * (several buffers, widget buffers say, make one body by following each other).
 */
export function encodeFrame(header: object | string, body: Buffer | readonly Buffer[] = EMPTY): Buffer[] {
  const parts = Buffer.isBuffer(body) ? [body] : body;
  const bodyLen = parts.reduce((sum, part) => sum + part.length, 0);
  const json = typeof header === 'string' ? header : JSON.stringify(header);
  const headerLen = Buffer.byteLength(json, 'utf8');
  const head = Buffer.allocUnsafe(8 + headerLen);
  head.writeUInt32BE(headerLen, 0);
  head.writeUInt32BE(bodyLen, 4);
  head.write(json, 8, 'utf8');
  return [head, ...parts.filter((part) => part.length > 0)];
}

/**
 * Frames waiting to be written together. A frame without body (nearly all of them: calls,
 * credits, cancels) waits as its header's JSON text, and `take` writes every waiting frame into
 * one buffer: one allocation per write instead of a buffer per frame and then their
 * concatenation (both were in the gateway's profile of pipelined calls). Past `coalesceBytes`
 * bodies are not copied: the parts are handed over as they are.
 */
export class FrameQueue {
  /** A header-only frame's JSON, or the encoded parts of a frame with a body. */
  private parts: Array<string | Buffer> = [];
  private bytes = 0;

  constructor(private readonly coalesceBytes: number) {}

  get empty(): boolean {
    return this.parts.length === 0;
  }

  /** Queues a frame; `header` may be its JSON text already. */
  push(header: object | string, body: readonly Buffer[] = []): void {
    if (body.length > 0 && body.some((part) => part.length > 0)) {
      for (const part of encodeFrame(header, body)) {
        this.parts.push(part);
        this.bytes += part.length;
      }
      return;
    }
    const json = typeof header === 'string' ? header : JSON.stringify(header);
    this.parts.push(json);
    this.bytes += 8 + Buffer.byteLength(json, 'utf8');
  }

  /** Every waiting frame, encoded: one buffer up to `coalesceBytes`, else the parts in order. */
  take(): Buffer[] {
    const parts = this.parts;
    const bytes = this.bytes;
    this.parts = [];
    this.bytes = 0;
    if (bytes > this.coalesceBytes) return parts.map((part) => (typeof part === 'string' ? headerOnly(part) : part));
    const out = Buffer.allocUnsafe(bytes);
    let at = 0;
    for (const part of parts) {
      if (typeof part === 'string') {
        const headerLen = out.write(part, at + 8, 'utf8');
        out.writeUInt32BE(headerLen, at);
        out.writeUInt32BE(0, at + 4);
        at += 8 + headerLen;
      } else {
        part.copy(out, at);
        at += part.length;
      }
    }
    return [out];
  }
}

function headerOnly(json: string): Buffer {
  const headerLen = Buffer.byteLength(json, 'utf8');
  const frame = Buffer.allocUnsafe(8 + headerLen);
  frame.writeUInt32BE(headerLen, 0);
  frame.writeUInt32BE(0, 4);
  frame.write(json, 8, 'utf8');
  return frame;
}

/**
 * The buffers a frame body carries, cut by the header's `buffer_lengths` (views, no copy).
 * Throws when the lengths do not describe the body.
 */
export function splitBody(lengths: unknown, body: Buffer): Buffer[] {
  if (lengths === undefined || lengths === null) lengths = [];
  if (!Array.isArray(lengths) || !lengths.every((n) => Number.isInteger(n) && n >= 0)) throw new Error('buffer_lengths must be a list of non-negative integers');
  const total = (lengths as number[]).reduce((sum, n) => sum + n, 0);
  if (total !== body.length) throw new Error(`buffer_lengths add up to ${total} bytes but the body has ${body.length}`);
  let offset = 0;
  return (lengths as number[]).map((n) => body.subarray(offset, (offset += n)));
}

/** Bytes of the buffer reads from the worker land in while no large body is being filled (one read's worth, as libuv reads). */
const SCRATCH_BYTES = 64 * 1024;

/** Frame ops whose bodies may come from the decoder's pool: a read's chunks, the bulk of the traffic. */
const POOLED_OPS = new Set(['chunk']);

/**
 * Incremental decoder. A frame that arrives whole in one read is cut out of it (no copy). A frame
 * whose body spans reads gets its body buffer as soon as its header is in, and every later read
 * is copied straight into it: one copy, and nothing kept per read. Fed by `readTarget` and
 * `commitRead` (the worker's reply socket reads into the buffer it is given), a body that
 * spans reads is read in place and the reads themselves allocate nothing.
 *
 * Chunk bodies of at most `poolBufferBytes` come from a free list (`release` gives one back):
 * a 1 GiB read allocated a fresh 1 MiB buffer per chunk, and collecting those (old-space GCs
 * forced by external memory) was over half the gateway's time during a read. The list holds at
 * most `poolMax` buffers; a frame not released is simply collected.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** The frame whose body is being filled across reads. */
  private filling: { header: BridgeFrame['header']; body: Buffer; filled: number; release?: () => void } | undefined;
  private readonly pool: Buffer[] = [];
  /** A pooled body was handed out since the last `trimPool`. */
  private poolTaken = false;
  /** What `readTarget` handed out last: the rest of the filling body, or the scratch buffer. */
  private readingBody = false;
  private scratch: Buffer | undefined;

  constructor(
    private readonly maxFrameBytes: number,
    private readonly poolBufferBytes = 0,
    private readonly poolMax = 0,
  ) {}

  /**
   * Lets the free pooled bodies go unless one was handed out since the last call: called
   * periodically, so a worker keeps a read's buffers (up to `poolMax` of them) only while reads go on.
   */
  trimPool(): void {
    if (!this.poolTaken) this.pool.length = 0;
    this.poolTaken = false;
  }

  /**
   * Where the next read from the worker should put its bytes (see `commitRead`): the rest of the
   * body being filled, so a large body is read straight into place, else a reused scratch buffer.
   */
  readTarget(): Buffer {
    this.readingBody = this.filling !== undefined;
    if (this.filling) return this.filling.body.subarray(this.filling.filled);
    return (this.scratch ??= Buffer.allocUnsafeSlow(SCRATCH_BYTES));
  }

  /** `n` bytes were read into the buffer `readTarget` returned; returns every frame they completed. */
  commitRead(n: number): BridgeFrame[] {
    if (!this.readingBody) return this.buffered === 0 ? this.cutFresh(this.scratch!, n) : this.push(this.scratch!.subarray(0, n), true);
    const filling = this.filling!;
    filling.filled += n;
    if (filling.filled < filling.body.length) return [];
    this.filling = undefined;
    return [{ header: filling.header, body: filling.body, ...(filling.release ? { release: filling.release } : {}) }];
  }

  /**
   * Feeds bytes; returns every frame completed by them. Throws on a malformed frame.
   * `transient`: `chunk` is reused after this call, so whatever is kept of it is copied.
   */
  push(chunk: Buffer, transient = false): BridgeFrame[] {
    const frames: BridgeFrame[] = [];
    if (this.filling) {
      chunk = this.fill(chunk, frames);
      if (chunk.length === 0) return frames;
    }
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.buffered < 8) break;
      const prefix = this.peek(8);
      const headerLen = prefix.readUInt32BE(0);
      const bodyLen = prefix.readUInt32BE(4);
      this.checkSize(headerLen, bodyLen);
      const total = 8 + headerLen + bodyLen;
      if (this.buffered >= total) {
        const frame = this.take(total);
        const header = parseHeader(frame, 0, headerLen);
        const body = bodyLen ? frame.subarray(8 + headerLen) : EMPTY;
        frames.push({ header, body: transient && bodyLen ? Buffer.from(body) : body });
        continue;
      }
      if (this.buffered < 8 + headerLen) break;
      // The header is in, the body is not: give the body its buffer now and fill it from here on.
      const head = this.take(8 + headerLen);
      const header = parseHeader(head, 0, headerLen);
      const rest = this.chunks;
      this.chunks = [];
      this.buffered = 0;
      this.filling = { header, filled: 0, ...this.bodyBuffer(header.op, bodyLen) };
      for (const part of rest) this.fill(part, frames);
      break;
    }
    // Only what is still a view of `chunk` needs a copy: earlier parts were copied when they came
    // (copying them on every read made a large result held across reads cost its size squared).
    if (transient) this.chunks = this.chunks.map((part) => (part.buffer === chunk.buffer ? Buffer.from(part) : part));
    return frames;
  }

  /**
   * The usual read, with nothing held from earlier ones: the frames it holds whole are cut
   * straight out of the scratch buffer (bodies copied, as it is reused), and only a partial
   * frame at its end goes through `push`. A pipelined batch of small replies was in the
   * gateway's profile as the views, array copies and joins `push` makes of a read. The
   * reference is `push`: frames.test.ts holds the two to the same frames on generated reads.
   */
  private cutFresh(scratch: Buffer, n: number): BridgeFrame[] {
    const frames: BridgeFrame[] = [];
    let at = 0;
    while (n - at >= 8) {
      const headerLen = scratch.readUInt32BE(at);
      const bodyLen = scratch.readUInt32BE(at + 4);
      this.checkSize(headerLen, bodyLen);
      const end = at + 8 + headerLen + bodyLen;
      if (end > n) break;
      const header = parseHeader(scratch, at, headerLen);
      frames.push({ header, body: bodyLen ? Buffer.from(scratch.subarray(end - bodyLen, end)) : EMPTY });
      at = end;
    }
    if (at === n) return frames;
    const rest = this.push(scratch.subarray(at, n), true);
    return frames.length === 0 ? rest : frames.concat(rest);
  }

  private checkSize(headerLen: number, bodyLen: number): void {
    if (headerLen + bodyLen > this.maxFrameBytes) throw new Error(`bridge frame of ${headerLen + bodyLen} bytes exceeds ${this.maxFrameBytes}`);
  }

  /** Copies what `chunk` holds of the body being filled; returns the bytes past its end. */
  private fill(chunk: Buffer, frames: BridgeFrame[]): Buffer {
    const filling = this.filling!;
    const n = Math.min(chunk.length, filling.body.length - filling.filled);
    chunk.copy(filling.body, filling.filled, 0, n);
    filling.filled += n;
    if (filling.filled === filling.body.length) {
      frames.push({ header: filling.header, body: filling.body, ...(filling.release ? { release: filling.release } : {}) });
      this.filling = undefined;
    }
    return chunk.subarray(n);
  }

  private bodyBuffer(op: string, size: number): { body: Buffer; release?: () => void } {
    if (!POOLED_OPS.has(op) || size > this.poolBufferBytes) return { body: Buffer.allocUnsafe(size) };
    this.poolTaken = true;
    const whole = this.pool.pop() ?? Buffer.allocUnsafeSlow(this.poolBufferBytes);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      if (this.pool.length < this.poolMax) this.pool.push(whole);
    };
    return { body: whole.subarray(0, size), release };
  }

  private peek(n: number): Buffer {
    const first = this.chunks[0]!;
    if (first.length >= n) return first;
    const joined = Buffer.concat(this.chunks);
    this.chunks = [joined];
    return joined;
  }

  private take(n: number): Buffer {
    const first = this.chunks[0]!;
    if (first.length === n) {
      this.chunks.shift();
    } else if (first.length > n) {
      this.chunks[0] = first.subarray(n);
      this.buffered -= n;
      return first.subarray(0, n);
    } else {
      const joined = Buffer.concat(this.chunks, this.buffered);
      this.chunks = joined.length > n ? [joined.subarray(n)] : [];
      this.buffered -= n;
      return joined.subarray(0, n);
    }
    this.buffered -= n;
    return first;
  }
}

/** The header of the frame at `at` in `bytes`. */
function parseHeader(bytes: Buffer, at: number, headerLen: number): BridgeFrame['header'] {
  const header = JSON.parse(bytes.toString('utf8', at + 8, at + 8 + headerLen)) as BridgeFrame['header'];
  if (typeof header !== 'object' || header === null || typeof header.op !== 'string') {
    throw new Error('bridge frame header has no op');
  }
  return header;
}
