/**
 * A call answered as it happens over plain HTTP (`curl -N`): `POST /v1/interfaces/call` with
 * `Accept: application/x-ndjson` answers one JSON object per line, and with
 * `Accept: text/event-stream` the same objects as server-sent events (`event: <type>`, `data:
 * <json>`). The objects are the WebSocket's frames, without ids: `waiting` while the call waits for
 * a worker whose Slurm job is pending, `stream` for each item a generator yields, `event` for what
 * the method emits meanwhile, `output` for what it prints, and one last line that ends the call: the
 * final `stream` frame (`final: true`), a `result`, or an `error` ({code, message, …}). Display
 * bundles are in them as in REST answers (binary data base64).
 *
 * Nothing is sent before the call's first line: a call that fails at once (no such method, bad
 * arguments) answers its usual JSON error status; one that failed after a line (a `waiting`, say)
 * ends with its `error` line. The response paces the generator (an item waits while the client is
 * behind), and a client that goes away cancels the call inside Python.
 */
import { PassThrough } from 'node:stream';
import type Koa from 'koa';
import { toPorticoError } from '../errors.js';
import type { CallOutcome, WaitListener } from '../service/interfaces.js';
import { displayFields, type Display } from '../service/display.js';
import type { Gateway } from '../service/gateway.js';
import type { RequestContext } from '../service/context.js';

export type StreamFormat = 'ndjson' | 'sse';

export const STREAM_TYPES: Record<StreamFormat, string> = {
  ndjson: 'application/x-ndjson',
  sse: 'text/event-stream',
};

/** The streamed format `accept` asks for, if it names one (before any plain JSON it also names). */
export function streamFormat(accept: string | undefined): StreamFormat | undefined {
  if (!accept) return undefined;
  for (const part of accept.split(',')) {
    const type = part.split(';')[0]!.trim().toLowerCase();
    if (type === STREAM_TYPES.ndjson) return 'ndjson';
    if (type === STREAM_TYPES.sse) return 'sse';
    if (type === 'application/json') return undefined;
  }
  return undefined;
}

interface Line {
  type: 'waiting' | 'stream' | 'event' | 'output' | 'result' | 'error';
  [field: string]: unknown;
}

const shown = (line: Line, display?: Display): Line => (display ? { ...line, ...displayFields(display).fields } : line);

/** The instance a streamed call runs on, found or made; a wait for its worker is told to `onWaiting`. */
export type FindInstance = (onWaiting: WaitListener) => Promise<{ uuid: string; module: string }>;

/** Calls `input` on the instance `find` gives and answers it on `ctx` in `format` as it happens. */
export async function streamCall(
  ctx: Koa.Context,
  gateway: Gateway,
  bound: RequestContext,
  find: FindInstance,
  input: { method: string; args?: unknown[]; kwargs?: Record<string, unknown> },
  format: StreamFormat,
  signal: AbortSignal,
): Promise<void> {
  const out = new PassThrough();
  const encode = format === 'ndjson' ? (line: Line) => `${JSON.stringify(line)}\n` : (line: Line) => `event: ${line.type}\ndata: ${JSON.stringify(line)}\n\n`;
  let open = false;
  /** The call ended before the response began: its lines wait in `held`, then the response ends. */
  let endedEarly = false;
  let began!: (failure?: { error: unknown }) => void;
  const beginning = new Promise<{ error: unknown } | undefined>((resolve) => (began = resolve));
  const held: Line[] = [];
  /** Writes a line; resolves when the client took it (so a generator waits for a slow client). */
  const write = (line: Line): void | Promise<void> => {
    if (!open) {
      held.push(line);
      began();
      return;
    }
    if (out.destroyed) return;
    if (!out.write(encode(line))) return new Promise((resolve) => out.once('drain', resolve).once('close', resolve));
  };
  const onWaiting: WaitListener = (notice) => void write({ type: 'waiting', payload: notice });
  let detach = () => {};
  const settle = (outcome: CallOutcome) => {
    detach();
    if (!open && held.length === 0 && !outcome.ok) return began({ error: outcome.error });
    const last: Line = !outcome.ok
      ? { type: 'error', payload: outcome.error.toDetail() }
      : outcome.streamed
        ? { type: 'stream', payload: null, final: true }
        : shown({ type: 'result', payload: outcome.payload }, outcome.display);
    void write(last);
    if (open) out.end();
    else endedEarly = true;
  };
  find(onWaiting).then(
    (record) => {
      detach = bound.project.attach(record.uuid, record.module, (push) => {
        if (push.type === 'event') void write(shown({ type: 'event', payload: push.payload }, push.display));
      });
      gateway.interfaces.call(bound, record as never, input, {
        signal,
        onWaiting,
        onItem: (payload, display) => write(shown({ type: 'stream', payload }, display)),
        onOutput: (stream, text) => void write({ type: 'output', payload: { stream, text } }),
        onSettled: settle,
      });
    },
    // No instance (no such class, a bad config, no worker): its usual error status, or its line.
    (err: unknown) => (!open && held.length === 0 ? began({ error: err }) : settle({ ok: false, error: toPorticoError(err) })),
  );
  const failure = await beginning;
  if (failure) throw failure.error;
  ctx.status = 200;
  ctx.type = STREAM_TYPES[format];
  ctx.set('Cache-Control', 'no-cache');
  ctx.set('X-Accel-Buffering', 'no'); // a proxy in front (nginx) passes each line on at once
  ctx.body = out;
  open = true;
  for (const line of held.splice(0)) out.write(encode(line));
  if (endedEarly) out.end();
}
