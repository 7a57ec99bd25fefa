import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { PorticoError } from '../errors.js';
import type { LineLevel } from '../ops/logger.js';
import { errorMiddleware, ValidationFailure } from './errors.js';

const servers: Array<{ close(): void }> = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

/** An app whose one handler throws `error`; returns the answer and what was logged. */
async function answerTo(error: unknown): Promise<{ status: number; body: Record<string, unknown>; logged: Array<[string, LineLevel | undefined]> }> {
  const logged: Array<[string, LineLevel | undefined]> = [];
  const app = new Koa();
  app.use(async (ctx, next) => {
    ctx.set('X-Request-Id', 'req-7');
    await next();
  });
  app.use(errorMiddleware((line, level) => logged.push([line, level])));
  app.use(() => {
    throw error;
  });
  const server = app.listen(0, '127.0.0.1');
  servers.push(server);
  await new Promise((resolve) => server.once('listening', resolve));
  const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/x`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, logged };
}

describe('HTTP error bodies', () => {
  it('every status but 400: detail is the message, with code and message beside it (and issues, exception)', async () => {
    const { status, body } = await answerTo(new PorticoError('not_found', "Interface 'x' not found"));
    expect(status).toBe(404);
    expect(body).toEqual({ detail: "Interface 'x' not found", code: 'not_found', message: "Interface 'x' not found" });
    const crashed = await answerTo(new PorticoError('worker_crashed', 'The worker died', { issues: [{ path: null, message: 'm' }] }));
    expect(crashed.body).toEqual({ detail: 'The worker died', code: 'worker_crashed', message: 'The worker died', issues: [{ path: null, message: 'm' }] });
  });

  it('400 keeps the structured detail the spec fixes, with code and message beside it too', async () => {
    const { status, body } = await answerTo(new PorticoError('call_failed', 'add() raised ValueError: no', { exception: 'ValueError' }));
    expect(status).toBe(400);
    expect(body).toEqual({ detail: { code: 'call_failed', message: 'add() raised ValueError: no', exception: 'ValueError' }, code: 'call_failed', message: 'add() raised ValueError: no' });
  });

  it('422 stays HTTPValidationError, with its code beside it', async () => {
    const { status, body } = await answerTo(new ValidationFailure([{ type: 'missing', loc: ['body', 'target'], msg: 'Field required' }]));
    expect(status).toBe(422);
    expect(body).toEqual({ detail: [{ type: 'missing', loc: ['body', 'target'], msg: 'Field required' }], code: 'validation_error', message: 'Invalid request: body.target: Field required' });
  });

  it('an unexpected failure: a generic 500 to the client, the stack in the log at error level', async () => {
    const { status, body, logged } = await answerTo(new TypeError('cannot read x of undefined'));
    expect(status).toBe(500);
    expect(body).toEqual({ detail: 'Internal gateway error', code: 'internal', message: 'Internal gateway error' });
    expect(JSON.stringify(body)).not.toMatch(/TypeError|at /);
    expect(logged).toHaveLength(1);
    const [line, level] = logged[0]!;
    expect(level).toBe('error');
    expect(line).toMatch(/^GET \/v1\/x failed \(request req-7\): TypeError: cannot read x of undefined\n\s+at /);
  });

  it('a refusal (a PorticoError) is not logged as a failure', async () => {
    const { logged } = await answerTo(new PorticoError('forbidden', 'no'));
    expect(logged).toEqual([]);
  });
});
