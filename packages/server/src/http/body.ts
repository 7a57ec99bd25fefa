/** Reads a JSON request body within the size bound, without a body-parser dependency. */
import type Koa from 'koa';
import { LIMITS } from '../config/constants.js';
import { PorticoError } from '../errors.js';
import { ValidationFailure } from './errors.js';

export async function readJson(ctx: Koa.Context, limit: number = LIMITS.maxBodyBytes): Promise<unknown> {
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > limit) throw new PorticoError('payload_too_large', `Request body exceeds ${limit} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new PorticoError('payload_too_large', `Request body exceeds ${limit} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') {
    throw new ValidationFailure([{ type: 'missing', loc: ['body'], msg: 'Field required' }]);
  }
  const type = ctx.get('content-type');
  if (type && !/^application\/([\w.+-]*\+)?json\b/i.test(type)) {
    throw new ValidationFailure([{ type: 'content_type', loc: ['body'], msg: `Expected application/json, got ${type}` }]);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ValidationFailure([{ type: 'json_invalid', loc: ['body'], msg: `JSON decode error: ${(err as Error).message}` }]);
  }
}
