/** Turns one incoming WebSocket message into a validated frame, or the error to answer with. */
import type { z } from '../contract/zod.js';
import { ClientFrames } from '../contract/frames.js';
import { envelopeMember, jsonTooDeep, jsonTooDeepError } from '../contract/json-depth.js';
import { PorticoError } from '../errors.js';

export type FrameId = string | number | undefined;

export type Decoded<F> = { ok: true; frame: F; id: FrameId } | { ok: false; error: PorticoError; id: FrameId };

/** Decodes a JSON text frame (binary frames belong to the data plane and never come here). */
export function decodeFrame<F>(data: Buffer, schemas: Record<string, z.ZodType>): Decoded<F> {
  const text = data.toString('utf8');
  // Before parsing: nothing nested past the bound goes further (contract/json-depth.ts).
  const tooDeep = jsonTooDeep(text);
  if (tooDeep !== -1) return { ok: false, error: jsonTooDeepError(text, tooDeep), id: envelopeMember(text, 'id') };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: new PorticoError('invalid_frame', `Frame is not valid JSON: ${(err as Error).message}`), id: undefined };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || typeof (raw as { type?: unknown }).type !== 'string') {
    return { ok: false, error: new PorticoError('invalid_frame', 'Frame must be a JSON object with a string "type"'), id: undefined };
  }
  const { type, id: rawId } = raw as { type: string; id?: unknown };
  const id = typeof rawId === 'string' || typeof rawId === 'number' ? rawId : undefined;
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
    return { ok: false, error: new PorticoError('invalid_frame', `Invalid '${type}' frame: ${what}`, { issues }), id };
  }
  return { ok: true, frame: parsed.data as F, id };
}

/**
 * A `call` frame that plainly satisfies ClientFrames.call, as that schema would give it back
 * (unknown keys dropped); undefined for anything else, which the schema then checks and words
 * the error for. Calls are the hot path, and the schema's safeParse was the largest single cost
 * of decoding one in the gateway's profile.
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
