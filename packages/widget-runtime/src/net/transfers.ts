/**
 * Calls and the binary data plane of /v1/interfaces/ws, on top of a Session.
 *
 * - `call(method, args, kwargs, {onItem})`: `call` → `result` (or `error`); a result with a MIME
 *   bundle (`display`, its binary data in the binary frames right after it) resolves as a
 *   `Display`. A generator method answers with `stream` frames: their items go to `onItem` (each a
 *   value or a `Display`) and the call resolves with their count at the final one; without
 *   `onItem` the call rejects with `stream_unsupported`.
 * - `upload(path, data)`: `chunk_start {mode: write|append, path}` → binary frames of at most
 *   uploadChunkBytes, each handed to the socket only while its `bufferedAmount` is below
 *   uploadHighWaterBytes (a Blob is read one slice at a time, so a 2 GiB File never sits in
 *   memory) → `chunk_end` → `chunk_done {path, bytes_written, mode}`. Progress counts the bytes
 *   that left the socket (handed minus `bufferedAmount`), and ends with a call at the total.
 * - `read(params)`: `chunk_start {mode: read, params}` → binary frames → `chunk_done {bytes_sent}`;
 *   the frames are collected into one Blob.
 *
 * Binary frames carry no id, so a socket carries one transfer at a time: transfers queue, in call
 * order, per session (handles sharing a socket share the queue). Calls do not queue.
 *
 * The protocol has no frame to cancel a transfer: aborting one that started closes the socket
 * (the gateway leaves an upload's target as it was and stops a read); the session reconnects as
 * after any drop, and calls in flight on that socket fail with `connection_lost`. Aborting one
 * that still waits in the queue just removes it.
 */
import { valueOfFrame } from '../display.js';
import { WidgetRuntimeError, abortError } from '../errors.js';
import type { Limits } from '../limits.js';
import type { JsonObject, ServerFrame, UploadResult } from '@portico/protocol';
import type { Channel, Exchange } from './exchanges.js';
import type { Session } from './session.js';

export type UploadData = Blob | ArrayBuffer | ArrayBufferView;

export interface UploadOptions {
  /** `write` (default) replaces the file atomically at the end; `append` adds to its end. */
  mode?: 'write' | 'append';
  /** Bytes that left this page so far, and the total; the last call has `sent === total`. */
  onProgress?: (sent: number, total: number) => void;
  /** Aborting a started upload closes the socket (see above); the file stays as it was. */
  signal?: AbortSignal;
}

export interface ReadOptions {
  /** Bytes received so far; the total is not known in advance (always undefined). */
  onProgress?: (received: number, total?: undefined) => void;
  /** Aborting a started read closes the socket (see above). */
  signal?: AbortSignal;
}

export interface CallOptions {
  /**
   * Takes the items of a generator method, in order, each its JSON value or a `Display`; call()
   * then resolves with the number of items once the stream ends. Without it, a generator method
   * rejects with `stream_unsupported`.
   */
  onItem?: (item: unknown) => void;
  /**
   * Takes what the method printed or logged while it ran (`stream` is `stdout` or `stderr`), in
   * order with its items. Without it, the page's console shows it (console.log / console.warn).
   */
  onOutput?: (stream: 'stdout' | 'stderr', text: string) => void;
}

/** A call's printed output where no onOutput takes it: the browser's console. */
function toConsole(stream: 'stdout' | 'stderr', text: string): void {
  (stream === 'stderr' ? console.warn : console.log)(`[portico-widget] ${text.replace(/\n$/, '')}`);
}

/** Calls and transfers of one interface: what `WidgetHandle` and `Connection` expose. */
export interface InterfaceCalls {
  /**
   * Calls a public method of the interface and resolves with its return value: its JSON, or a
   * `Display` when the answer carries a MIME bundle (a figure, an image, a table).
   */
  call(method: string, args?: unknown[], kwargs?: JsonObject, options?: CallOptions): Promise<unknown>;
  /** Uploads `data` to `path` (relative to the interface folder). */
  upload(path: string, data: UploadData, options?: UploadOptions): Promise<UploadResult>;
  /** Reads through the interface's `read(params)` hook; resolves with the bytes as one Blob. */
  read(params?: JsonObject, options?: ReadOptions): Promise<Blob>;
}

/** The answer to one request: settles a promise from the frames (or the loss) that reach it. */
class Pending<T> implements Exchange {
  readonly promise: Promise<T>;
  settled = false;
  channel: Channel | undefined;
  binary?: (data: ArrayBuffer | Blob) => void;
  #resolve!: (value: T) => void;
  #reject!: (error: WidgetRuntimeError) => void;
  readonly #onFrame: (frame: ServerFrame, pending: Pending<T>, views: DataView[]) => void;

  constructor(onFrame: (frame: ServerFrame, pending: Pending<T>, views: DataView[]) => void, onBinary?: (data: ArrayBuffer | Blob) => void) {
    this.#onFrame = onFrame;
    this.promise = new Promise<T>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // The caller awaits it; this only keeps an early failure from counting as unhandled meanwhile.
    this.promise.catch(noop);
    if (onBinary) this.binary = (data) => void (this.settled || onBinary(data));
  }

  frame(frame: ServerFrame, views: DataView[] = []): void {
    if (this.settled) return;
    if (frame.type === 'error') this.fail(new WidgetRuntimeError(frame.payload.code, frame.payload.message));
    else this.#onFrame(frame, this, views);
  }

  lost(error: WidgetRuntimeError): void {
    this.fail(error);
  }

  resolve(value: T): void {
    if (this.settled) return;
    this.settled = true;
    this.channel?.finish();
    this.#resolve(value);
  }

  fail(error: WidgetRuntimeError): void {
    if (this.settled) return;
    this.settled = true;
    this.channel?.finish();
    this.#reject(error);
  }

  /** Resolves (never rejects) when settled. */
  get done(): Promise<void> {
    return this.promise.then(noop, noop);
  }
}

/** The gateway's bound on chunk_start's path. */
const MAX_PATH_LENGTH = 4096;

const unexpected = (frame: ServerFrame, what: string) => new WidgetRuntimeError('invalid_frame', `Unexpected '${frame.type}' frame answering ${what}`);

export class DataPlane implements InterfaceCalls {
  readonly #session: Session;
  readonly #limits: Limits;
  /** Settles when every transfer queued so far has settled. */
  #tail: Promise<unknown> = Promise.resolve();

  constructor(session: Session, limits: Limits) {
    this.#session = session;
    this.#limits = limits;
  }

  async call(method: string, args: unknown[] = [], kwargs: JsonObject = {}, options: CallOptions = {}): Promise<unknown> {
    if (typeof method !== 'string' || !method) throw new WidgetRuntimeError('invalid_argument', 'call() needs a method name');
    const { onItem } = options;
    if (onItem !== undefined && typeof onItem !== 'function') throw new WidgetRuntimeError('invalid_argument', 'call() options.onItem must be a function');
    let items = 0;
    const pending = new Pending<unknown>((frame, p, views) => {
      try {
        if (frame.type === 'result') p.resolve(valueOfFrame(frame, views));
        else if (frame.type === 'output') (options.onOutput ?? toConsole)(frame.payload.stream, frame.payload.text);
        else if (frame.type === 'stream' && !onItem) {
          p.fail(new WidgetRuntimeError('stream_unsupported', `'${method}' streams its results; pass options.onItem to call() to take them`));
        } else if (frame.type === 'stream') {
          if (frame.final) p.resolve(items);
          else {
            items += 1;
            const item = valueOfFrame(frame, views);
            try {
              onItem!(item);
            } catch (error) {
              console.error('[portico-widget] an onItem callback threw', error);
            }
          }
        } else p.fail(unexpected(frame, `call '${method}'`));
      } catch (error) {
        p.fail(error instanceof WidgetRuntimeError ? error : new WidgetRuntimeError('invalid_frame', String(error)));
      }
    });
    pending.channel = await this.#session.request({ type: 'call', method, args, kwargs }, pending);
    return pending.promise;
  }

  upload(path: string, data: UploadData, options: UploadOptions = {}): Promise<UploadResult> {
    const mode = options.mode ?? 'write';
    if (typeof path !== 'string' || !path) return Promise.reject(new WidgetRuntimeError('invalid_argument', 'upload() needs a path'));
    if (mode !== 'write' && mode !== 'append') return Promise.reject(new WidgetRuntimeError('invalid_argument', `Unknown upload mode '${String(mode)}'`));
    const source = sliceable(data);
    if (!source) return Promise.reject(new WidgetRuntimeError('invalid_argument', 'upload() takes a Blob, an ArrayBuffer or an ArrayBufferView'));
    // The gateway refuses longer paths without starting an upload; its bytes would then be strays.
    if (path.length > MAX_PATH_LENGTH) return Promise.reject(new WidgetRuntimeError('invalid_argument', `The upload path is longer than ${MAX_PATH_LENGTH} characters`));
    return this.#exclusive(() => this.#upload(path, mode, source, options), options.signal);
  }

  read(params: JsonObject = {}, options: ReadOptions = {}): Promise<Blob> {
    return this.#exclusive(() => this.#read(params, options), options.signal);
  }

  /** Runs transfers one at a time, in call order; one aborted while queued leaves the queue at once. */
  #exclusive<T>(run: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    const previous = this.#tail;
    const result = (async () => {
      await untilAborted(previous, signal);
      return run();
    })();
    // The next transfer waits for both: this one may leave early (aborted) while `previous` runs on.
    this.#tail = Promise.allSettled([previous, result]);
    return result;
  }

  async #upload(path: string, mode: 'write' | 'append', source: Sliceable, options: UploadOptions): Promise<UploadResult> {
    const { signal, onProgress } = options;
    const { uploadChunkBytes, uploadHighWaterBytes, uploadPollMs } = this.#limits;
    const total = source.size;
    const pending = new Pending<UploadResult>((frame, p) => {
      if (frame.type === 'chunk_done' && 'path' in frame.payload) p.resolve(frame.payload);
      else p.fail(unexpected(frame, `upload '${path}'`));
    });
    const channel = (pending.channel = await this.#session.request({ type: 'chunk_start', mode, path }, pending, { signal, binary: true }));
    /** Fails the upload and closes the socket: the only way to stop the gateway from keeping it. */
    const cancel = (error: WidgetRuntimeError) => {
      if (pending.settled) return;
      pending.fail(error);
      channel.abort(new WidgetRuntimeError(error.code, `Upload to '${path}' stopped (${error.message}); the socket is reopened`));
    };
    const onAbort = () => cancel(abortError(signal!));
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort(); // aborted while chunk_start went out

    let handed = 0;
    let reported = -1;
    const progress = (sent = Math.min(total, Math.max(0, handed - channel.bufferedAmount))) => {
      if (!onProgress || sent <= reported) return;
      reported = sent;
      notify(onProgress, sent, total);
    };
    const tick = () => Promise.race([pending.done, delay(uploadPollMs)]);
    const readSlice = (offset: number) => {
      const slice = source.slice(offset, Math.min(offset + uploadChunkBytes, total));
      slice.catch(noop); // read ahead: it may never be awaited if the upload ends first
      return slice;
    };
    try {
      let next = total > 0 ? readSlice(0) : undefined;
      for (let offset = 0; next && !pending.settled; ) {
        const bytes = await Promise.race([next, pending.done]);
        while (!pending.settled && channel.bufferedAmount >= uploadHighWaterBytes) {
          progress();
          await tick();
        }
        if (!bytes || pending.settled) break;
        offset += bytes.byteLength;
        next = offset < total ? readSlice(offset) : undefined;
        if (!channel.sendBinary(bytes)) break; // the socket went: `lost` has failed the upload
        handed += bytes.byteLength;
        progress();
      }
      // Also after a refusal (payload_too_large, forbidden, …): the gateway then swallows the
      // bytes still on their way and frees the socket without answering. After an abort or a
      // drop the socket is gone and nothing is sent.
      channel.send({ type: 'chunk_end' });
      while (!pending.settled && handed - channel.bufferedAmount < total) {
        progress();
        await tick();
      }
      if (!pending.settled) progress();
      const result = await pending.promise;
      progress(total);
      return result;
    } catch (error) {
      // A slice that could not be read (a File changed or went away meanwhile).
      cancel(error instanceof WidgetRuntimeError ? error : new WidgetRuntimeError('load_failed', `Upload to '${path}' failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error }));
      throw error;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async #read(params: JsonObject, options: ReadOptions): Promise<Blob> {
    const { signal, onProgress } = options;
    const parts: Array<ArrayBuffer | Blob> = [];
    let received = 0;
    const pending = new Pending<Blob>(
      (frame, p) => {
        if (frame.type === 'chunk_done' && 'bytes_sent' in frame.payload) {
          const sent = frame.payload.bytes_sent;
          if (sent === received) p.resolve(new Blob(parts));
          else p.fail(new WidgetRuntimeError('invalid_frame', `The read ended with ${sent} bytes sent, but ${received} arrived`));
        } else p.fail(unexpected(frame, 'a read'));
      },
      (data) => {
        parts.push(data);
        received += data instanceof ArrayBuffer ? data.byteLength : data.size;
        if (onProgress) notify(onProgress, received, undefined);
      },
    );
    const channel = (pending.channel = await this.#session.request({ type: 'chunk_start', mode: 'read', params }, pending, { signal, binary: true }));
    const onAbort = () => {
      if (pending.settled) return;
      pending.fail(abortError(signal!));
      channel.abort(new WidgetRuntimeError('aborted', 'Read aborted: the socket is reopened'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort(); // aborted while chunk_start went out
    try {
      return await pending.promise;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** Upload data as something sliced lazily: a Blob is read one slice at a time. */
interface Sliceable {
  readonly size: number;
  slice(start: number, end: number): Promise<ArrayBuffer | ArrayBufferView>;
}

function sliceable(data: UploadData): Sliceable | undefined {
  if (typeof Blob !== 'undefined' && data instanceof Blob) {
    return {
      size: data.size,
      slice: (start, end) =>
        data
          .slice(start, end)
          .arrayBuffer()
          .catch((error: unknown) => {
            throw new WidgetRuntimeError('load_failed', `Cannot read bytes ${start}-${end} of the upload: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
          }),
    };
  }
  if (data instanceof ArrayBuffer) {
    return { size: data.byteLength, slice: async (start, end) => new Uint8Array(data, start, end - start) };
  }
  if (ArrayBuffer.isView(data)) {
    const { buffer, byteOffset, byteLength } = data;
    return { size: byteLength, slice: async (start, end) => new Uint8Array(buffer, byteOffset + start, end - start) };
  }
  return undefined;
}

/** Waits for `promise` (which never rejects) unless `signal` fires first. */
function untilAborted(promise: Promise<unknown>, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortError(signal));
  if (!signal) return promise.then(noop);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}

/** Calls a progress callback; one that throws is logged and does not break the transfer. */
function notify<A extends unknown[]>(callback: (...args: A) => void, ...args: A): void {
  try {
    callback(...args);
  } catch (error) {
    console.error('[portico-widget] an onProgress callback threw', error);
  }
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const noop = () => undefined;
