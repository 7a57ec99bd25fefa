/**
 * Length-prefixed frames of the kernel bridge (see README.md in this folder):
 * `u32be header_len | u32be body_len | header JSON | body bytes`.
 */

export interface BridgeFrame {
  header: Record<string, unknown> & { op: string };
  body: Buffer;
}

const EMPTY = Buffer.alloc(0);

/**
 * Encodes one frame as the buffers to write: prefix and header in one, the body never copied
 * (several buffers, widget buffers say, make one body by following each other).
 */
export function encodeFrame(header: object, body: Buffer | readonly Buffer[] = EMPTY): Buffer[] {
  const parts = Buffer.isBuffer(body) ? [body] : body;
  const bodyLen = parts.reduce((sum, part) => sum + part.length, 0);
  const json = JSON.stringify(header);
  const headerLen = Buffer.byteLength(json, 'utf8');
  const head = Buffer.allocUnsafe(8 + headerLen);
  head.writeUInt32BE(headerLen, 0);
  head.writeUInt32BE(bodyLen, 4);
  head.write(json, 8, 'utf8');
  return [head, ...parts.filter((part) => part.length > 0)];
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

/**
 * Incremental decoder. Chunks are kept in a list and only joined once a whole frame is there,
 * so a large frame arriving in many pipe reads costs one copy, not one per read.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(private readonly maxFrameBytes: number) {}

  /** Feeds bytes; returns every frame completed by them. Throws on a malformed frame. */
  push(chunk: Buffer): BridgeFrame[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const frames: BridgeFrame[] = [];
    for (;;) {
      if (this.buffered < 8) break;
      const prefix = this.peek(8);
      const headerLen = prefix.readUInt32BE(0);
      const bodyLen = prefix.readUInt32BE(4);
      if (headerLen + bodyLen > this.maxFrameBytes) {
        throw new Error(`bridge frame of ${headerLen + bodyLen} bytes exceeds ${this.maxFrameBytes}`);
      }
      const total = 8 + headerLen + bodyLen;
      if (this.buffered < total) break;
      const frame = this.take(total);
      const header = JSON.parse(frame.toString('utf8', 8, 8 + headerLen)) as BridgeFrame['header'];
      if (typeof header !== 'object' || header === null || typeof header.op !== 'string') {
        throw new Error('bridge frame header has no op');
      }
      frames.push({ header, body: bodyLen ? frame.subarray(8 + headerLen) : EMPTY });
    }
    return frames;
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
