/** Reads a JSON request body within the size and nesting bounds, without a body-parser dependency. */
import type Koa from 'koa';
import { LIMITS } from '../config/constants.js';
import { jsonTooDeep, jsonTooDeepError } from '../contract/json-depth.js';
import { PorticoError } from '../errors.js';
import { ValidationFailure } from './errors.js';

export async function readJson(ctx: Koa.Context, limit: number = LIMITS.maxBodyBytes): Promise<unknown> {
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > limit) throw new PorticoError('payload_too_large', `Request body exceeds ${limit} bytes`);
  const text = (await readAll(ctx, limit)).toString('utf8');
  if (text.trim() === '') {
    throw new ValidationFailure([{ type: 'missing', loc: ['body'], msg: 'Field required' }]);
  }
  const type = ctx.get('content-type');
  if (type && !/^application\/([\w.+-]*\+)?json\b/i.test(type)) {
    throw new ValidationFailure([{ type: 'content_type', loc: ['body'], msg: `Expected application/json, got ${type}` }]);
  }
  // Before parsing: nothing nested past the bound goes further (contract/json-depth.ts).
  const tooDeep = jsonTooDeep(text);
  if (tooDeep !== -1) throw jsonTooDeepError(text, tooDeep);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ValidationFailure([{ type: 'json_invalid', loc: ['body'], msg: `JSON decode error: ${(err as Error).message}` }]);
  }
}

/**
 * The whole body, refused past `limit` bytes. Plain listeners rather than `for await`: the async
 * iterator's setup (a stream finished-watcher, promises per chunk) showed as a few KB allocated
 * per REST call in the gateway's heap profile, for a body that is one chunk.
 */
function readAll(ctx: Koa.Context, limit: number): Promise<Buffer> {
  const req = ctx.req;
  const prematureClose = () => Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
  return new Promise((resolve, reject) => {
    // Gone before its body was read (while authentication waited, say): no event will ever come.
    if (req.destroyed && !req.readableEnded) return reject(prematureClose());
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (err?: Error) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', done);
      req.off('close', onClose);
      if (err) reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        done(new PorticoError('payload_too_large', `Request body exceeds ${limit} bytes`));
        discardRest(ctx, limit);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      done();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    // A client that goes away mid-body: the iterator rejected with a premature close here too.
    const onClose = () => {
      if (!req.readableEnded) done(prematureClose());
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', done);
    req.on('close', onClose);
  });
}

/**
 * After a body over the limit: the 413 is answered with `Connection: close`, and what the client
 * still sends is read and dropped meanwhile, so that it sees the 413 rather than a reset
 * connection. A client that keeps sending past another `limit` bytes is cut off.
 */
function discardRest(ctx: Koa.Context, limit: number): void {
  const req = ctx.req;
  ctx.set('Connection', 'close');
  let dropped = 0;
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > limit) req.destroy();
  });
}
