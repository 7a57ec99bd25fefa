/** Turns one incoming WebSocket message into a validated frame, or the error to answer with. */
import type { z } from '../contract/zod.js';
import { ClientFrames } from '../contract/frames.js';
import { BACKSLASH, CLOSE_OBJECT, envelopeMember, jsonTooDeep, jsonTooDeepError, OPEN_ARRAY, OPEN_OBJECT, QUOTE } from '../contract/json-depth.js';
import { PorticoError } from '../errors.js';

export type FrameId = string | number | undefined;

/** A refused frame keeps its `type` when it had a known one, and a chunk_start its `mode` (so a refused upload's binary frames can be told from strays). */
export type Decoded<F> = { ok: true; frame: F; id: FrameId } | { ok: false; error: PorticoError; id: FrameId; type?: string; mode?: unknown };

/** Decodes a JSON text frame (binary frames belong to the data plane and never come here). */
export function decodeFrame<F>(data: Buffer, schemas: Record<string, z.ZodType>): Decoded<F> {
  const text = data.toString('utf8');
  // Before parsing: nothing nested past the bound goes further (contract/json-depth.ts).
  const tooDeep = jsonTooDeep(text);
  if (tooDeep !== -1) return { ok: false, error: jsonTooDeepError(text, tooDeep), id: envelopeMember(text, 'id', exactId) };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    // Its id, where the text has one, as a frame nested too deep is answered.
    return { ok: false, error: new PorticoError('invalid_frame', `Frame is not valid JSON: ${(err as Error).message}`), id: envelopeMember(text, 'id', exactId) };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { ok: false, error: new PorticoError('invalid_frame', 'Frame must be a JSON object with a string "type"'), id: undefined };
  }
  const { type, id: rawId } = raw as { type: unknown; id?: unknown };
  const id = typeof rawId === 'string' ? rawId : typeof rawId === 'number' ? numericId(data, text, rawId) : undefined;
  if (typeof id === 'string' && typeof rawId === 'number') return { ok: false, error: inexactId(type, id), id };
  if (typeof type !== 'string') return { ok: false, error: new PorticoError('invalid_frame', 'Frame must be a JSON object with a string "type"'), id };
  const schema = Object.hasOwn(schemas, type) ? schemas[type] : undefined;
  if (!schema) return { ok: false, error: new PorticoError('unknown_frame', `Unknown frame type '${type}'`), id };
  if (type === 'call' && schema === ClientFrames.call) {
    const call = plainCall(raw as Record<string, unknown>);
    if (call) return { ok: true, frame: call as F, id };
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: i.path.join('.') || null, message: i.message }));
    const what = issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ');
    return { ok: false, error: new PorticoError('invalid_frame', `Invalid '${type}' frame: ${what}`, { issues }), id, type, mode: (raw as { mode?: unknown }).mode };
  }
  return { ok: true, frame: parsed.data as F, id };
}

/**
 * A `call` frame that plainly satisfies ClientFrames.call, as that schema would give it back
 * (unknown keys dropped); undefined for anything else, which the schema then checks and words
 * the error for. Calls are the hot path, and the schema's safeParse was the largest single cost
 * of decoding one in the gateway's profile. decode.test.ts holds it to the schema on generated
 * call frames: a field added to ClientFrames.call must be added here too.
 */
function plainCall(raw: Record<string, unknown>): object | undefined {
  const { id, method, args, kwargs } = raw;
  if (typeof method !== 'string' || method.length === 0) return undefined;
  if (id !== undefined && !(typeof id === 'string' ? id.length <= 256 : Number.isFinite(id))) return undefined;
  if (args !== undefined && !Array.isArray(args)) return undefined;
  if (kwargs !== undefined && (typeof kwargs !== 'object' || kwargs === null || Array.isArray(kwargs))) return undefined;
  const frame: Record<string, unknown> = { type: 'call', method };
  if (id !== undefined) frame.id = id;
  if (args !== undefined) frame.args = args;
  if (kwargs !== undefined) frame.kwargs = kwargs;
  return frame;
}

/*
 * Numeric ids. JSON.parse reads every number as a double, so an id like 9007199254740993 (past
 * 2^53) or 1.00000000000000000001 would come back changed, and 1e400 as null. An id is echoed as
 * a number only when the double is exactly what the client wrote and, for an integer, within
 * ±Number.MAX_SAFE_INTEGER (what every JSON client reads exactly); else the frame is refused with
 * `invalid_frame`, its id the number's text as a string. The text is read from the frame.
 */

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * The frame's numeric id `parsed` as the gateway may echo it: the number, or its source text (a
 * string) when the double is not exactly that. Nearly every numeric id is a plain integer where
 * `plainIntegerId` reads it from the bytes at once; any other is read by the walk of
 * `envelopeMember` (the reference: whatever else names "id", however the key is spelled).
 */
function numericId(data: Buffer, text: string, parsed: number): string | number {
  if (plainIntegerId(data) === parsed) return parsed;
  const found = envelopeMember(text, 'id', exactId);
  // Duplicate "id" members (JSON.parse keeps the last): refused unless they agree.
  return found === parsed ? parsed : typeof found === 'string' ? found : String(parsed);
}

const COMMA = 0x2c;
const MINUS = 0x2d;
const COLON = 0x3a;
/** Digits of an integer every double holds (10^15 < 2^53). */
const PLAIN_DIGITS = 15;

/**
 * The id when it is an integer of at most PLAIN_DIGITS digits written plainly where clients put
 * it: the envelope's last member (`…,"id":7}`: the widget runtime; also the member JSON.parse
 * keeps) or a member before the envelope's first array or object (`{"type":"call","id":7,…}`: the
 * Python client). Read from the bytes, which costs next to nothing (string reads right after
 * JSON.parse cost a visible share of decoding a call); undefined for anything else.
 */
function plainIntegerId(data: Buffer): number | undefined {
  return lastMemberId(data) ?? leadingMemberId(data);
}

function lastMemberId(data: Buffer): number | undefined {
  let i = spaceBefore(data, data.length - 1);
  if (data[i] !== CLOSE_OBJECT) return undefined;
  i = spaceBefore(data, i - 1);
  let value = 0;
  let scale = 1;
  const end = i;
  for (let c = data[i]!; c >= 0x30 && c <= 0x39; c = data[--i]!) {
    value += (c - 0x30) * scale;
    scale *= 10;
  }
  if (i === end || end - i > PLAIN_DIGITS) return undefined;
  if (data[i] === MINUS) {
    value = -value;
    i -= 1;
  }
  i = spaceBefore(data, i);
  if (data[i] !== COLON) return undefined; // also a fraction or an exponent: `.5`, `e5`
  i = spaceBefore(data, i - 1);
  if (data[i] !== QUOTE || data[i - 1] !== 0x64 || data[i - 2] !== 0x69 || data[i - 3] !== QUOTE) return undefined;
  // `"id"` opened right after `{` or `,`: a key of the envelope, not the tail of a longer one (`"x\"id"`).
  i = spaceBefore(data, i - 4);
  return data[i] === COMMA || data[i] === OPEN_OBJECT ? value : undefined;
}

function leadingMemberId(data: Buffer): number | undefined {
  let i = spaceAfter(data, 0);
  if (data[i] !== OPEN_OBJECT) return undefined;
  i = spaceAfter(data, i + 1);
  for (;;) {
    if (data[i] !== QUOTE) return undefined;
    const id = data[i + 1] === 0x69 && data[i + 2] === 0x64 && data[i + 3] === QUOTE;
    i = spaceAfter(data, stringEnd(data, i) + 1);
    if (data[i] !== COLON) return undefined;
    i = spaceAfter(data, i + 1);
    if (id) return integerAt(data, i);
    // Skip a scalar value; an array or object ends the search.
    if (data[i] === QUOTE) i = stringEnd(data, i) + 1;
    else while (i < data.length && data[i] !== COMMA && data[i] !== CLOSE_OBJECT && data[i] !== OPEN_ARRAY && data[i] !== OPEN_OBJECT) i++;
    i = spaceAfter(data, i);
    if (data[i] !== COMMA) return undefined;
    i = spaceAfter(data, i + 1);
  }
}

/** The plain integer starting at `i` (a number that goes on as a fraction or exponent is none). */
function integerAt(data: Buffer, i: number): number | undefined {
  const negative = data[i] === MINUS;
  if (negative) i += 1;
  const start = i;
  let value = 0;
  for (let c = data[i]!; c >= 0x30 && c <= 0x39; c = data[++i]!) value = value * 10 + (c - 0x30);
  if (i === start || i - start > PLAIN_DIGITS || isNumberChar(data[i]!)) return undefined;
  return negative ? -value : value;
}

/** The offset of the quote that closes the string opening at `start` (or past the end). */
function stringEnd(data: Buffer, start: number): number {
  let i = start + 1;
  while (i < data.length && data[i] !== QUOTE) i += data[i] === BACKSLASH ? 2 : 1;
  return i;
}

function spaceAfter(data: Buffer, i: number): number {
  while (isSpace(data[i]!)) i++;
  return i;
}

function spaceBefore(data: Buffer, i: number): number {
  while (isSpace(data[i]!)) i--;
  return i;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** A character of a JSON number. */
function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === MINUS || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45;
}

/** The number `source` (JSON number text) when a double holds it exactly (a safe integer when whole), else `source`. */
function exactId(source: string): string | number {
  const value = Number(source);
  if (!Number.isFinite(value) || (Number.isInteger(value) && !Number.isSafeInteger(value))) return source;
  return decimal(source) === decimal(String(value)) ? value : source;
}

/** A JSON number's exact decimal value, written one way: sign, digits without outer zeros, exponent. */
function decimal(source: string): string {
  const [, sign, whole, fraction = '', exponent = '0'] = DECIMAL.exec(source)!;
  const digits = (whole! + fraction).replace(/^0+/, '');
  if (!digits) return '0';
  const significant = digits.replace(/0+$/, '');
  return `${sign}${significant}e${Number(exponent) - fraction.length + digits.length - significant.length}`;
}

function inexactId(type: unknown, source: string): PorticoError {
  const message = `${source} cannot be echoed exactly: a numeric id must be an integer within ±${Number.MAX_SAFE_INTEGER} or a number a double holds as written (send any other as a string)`;
  const frame = typeof type === 'string' ? `'${type}' frame` : 'frame';
  return new PorticoError('invalid_frame', `Invalid ${frame}: id: ${message}`, { issues: [{ path: 'id', message }] });
}
