/**
 * The gateway's end of the bridge to one worker (README.md in this folder): the requests in
 * flight by id and how each ends (its terminal frame, a timeout, a cancel, the worker's exit),
 * the credit streams and reads get back, the frames the worker pushes unsolicited, and the one
 * queue every frame to the worker leaves by.
 */
import type { Writable } from 'node:stream';
import { LIMITS } from '../config/constants.js';
import type { LineLevel } from '../ops/logger.js';
import { PorticoError } from '../errors.js';
import { FrameQueue, splitBody, type BridgeFrame } from './frames.js';
import { displayOf, type Display } from './display.js';
import { errorFromWorker } from './worker-errors.js';

/** A frame an instance pushes to every client attached to it. */
export interface Push {
  type: 'event' | 'widget_change' | 'widget_msg' | 'widget_reload' | 'instance_restarted';
  payload: unknown;
  /** Binary buffers of a widget push (the values at `payload.buffer_paths`, or a message's buffers). */
  buffers?: Buffer[];
  /** The display bundle of an `event` whose emitted value IPython could display (docs/writing/rich-results.md). */
  display?: Display;
}

/**
 * Where a streaming call delivers its items, synchronously and in order, each with its display
 * bundle when IPython could display it (docs/writing/rich-results.md); the returned promise paces the
 * generator (the worker gets credit for the next item when it settles).
 */
export type ItemSink = (payload: unknown, display?: Display) => void | Promise<void>;

/** How a call ended: its result (with its display bundle when it has one, docs/writing/rich-results.md), the end of its stream, or an error. */
export type CallOutcome = { ok: true; streamed: boolean; payload?: unknown; buffers?: Buffer[]; display?: Display } | { ok: false; error: PorticoError };

/** Receives a request's outcome, synchronously with the worker's terminal frame. */
export type Settled = (outcome: CallOutcome) => void;

export interface CallHandlers {
  /** Aborting it cancels the call in the worker (one listener per signal, however many calls). */
  signal?: AbortSignal | undefined;
  /** A call still running after this long is cancelled and fails with `timeout`. */
  timeoutMs?: number | undefined;
  onItem?: ItemSink | undefined;
  /** What the call's user code printed or logged (stdout or stderr), as it happens, in order with its items and events. */
  onOutput?: OutputSink | undefined;
  /**
   * Called synchronously when the worker's terminal frame arrives: a transport that sends the
   * final frame here keeps it in order with `event` pushes.
   */
  onSettled: Settled;
}

/** Where a call's printed output goes: its stream and its text (whole lines, or a last piece at its end). */
export type OutputSink = (stream: 'stdout' | 'stderr', text: string) => void;

/** A request waiting for its answer; no closures, so that a call allocates as little as it can. */
interface Pending {
  onItem: ItemSink | undefined;
  onOutput: OutputSink | undefined;
  onSettled: Settled;
  signal: AbortSignal | undefined;
  /** Chunks of a read the sink is done with and the worker has not been credited for yet. */
  owed: number;
  /** performance.now() after which the call times out. */
  deadline: number;
  timeoutMs: number;
}

/** Frames queued in one turn of the event loop up to this many bytes are joined into one write; beyond, written as they are. */
const COALESCE_BYTES = 256 * 1024;

export interface BridgeOptions {
  /** The worker's folder: its absolute path is taken out of the texts clients see. */
  project: string;
  onPush?: ((uuid: string, push: Push) => void) | undefined;
  log: (line: string, level?: LineLevel) => void;
}

export class Bridge {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly outbox = new FrameQueue(COALESCE_BYTES);
  /** Signals whose abort already cancels the calls under them. */
  private readonly listening = new WeakSet<AbortSignal>();
  private toWorker: Writable | undefined;
  /** Why the worker is gone, once it is: every request fails with it at once. */
  private gone: PorticoError | undefined;
  /** When the worker last answered a heartbeat, from its reading side (performance.now(); 0 until ready). */
  lastBeat = 0;

  constructor(private readonly options: BridgeOptions) {}

  /** Frames go to `stream` (the worker's fd 3) from now on. */
  open(stream: Writable): void {
    this.toWorker = stream;
  }

  /** The worker is gone: every request in flight fails with `error`, and so does every later one. */
  close(error: PorticoError): void {
    this.gone = error;
    for (const [id, entry] of [...this.pending]) this.settle(id, entry, { ok: false, error });
  }

  /** Number of requests waiting for an answer. */
  get size(): number {
    return this.pending.size;
  }

  /**
   * Sends a request and registers its handlers; the outcome goes to `onSettled`. `header` is an
   * object without `id`, or a function of the id giving its JSON. Returns when it was sent
   * (performance.now()), or undefined when it was settled at once (the worker is gone, or
   * `signal` is aborted already). Throws, leaving nothing behind, when the header cannot be
   * encoded (a value JSON cannot carry).
   */
  submit(header: Record<string, unknown> | ((id: number) => string), handlers: CallHandlers, body: Buffer[]): number | undefined {
    const { signal, onSettled } = handlers;
    const early = this.gone ?? (signal?.aborted ? new PorticoError('cancelled', 'The call was cancelled') : undefined);
    if (early) {
      onSettled({ ok: false, error: early });
      return undefined;
    }
    const id = this.nextId++;
    if (signal) this.cancelOnAbort(signal);
    // Nothing in flight: the worker is waiting in its read, so this request is a lone one.
    const lone = this.pending.size === 0;
    // Sent before it is registered: a request whose header cannot be encoded (JSON.stringify
    // throws to the caller) leaves no pending entry behind to time out and settle it later. Its
    // answer cannot come before this returns: replies are read in a later I/O callback.
    if (typeof header === 'function') this.send(header(id), body, lone);
    else {
      header.id = id; // every caller hands over a fresh header
      this.send(header, body, lone);
    }
    const timeoutMs = handlers.timeoutMs ?? Infinity;
    const now = performance.now();
    this.pending.set(id, { onItem: handlers.onItem, onOutput: handlers.onOutput, onSettled, signal, owed: 0, deadline: now + timeoutMs, timeoutMs });
    return now;
  }

  /**
   * Queues a frame; everything queued in one turn of the event loop goes out in a single write
   * (setImmediate runs right after the turn's I/O callbacks): pipelined calls arriving on several
   * sockets at once reach the worker in one write, and every write wakes the worker.
   *
   * A `lone` request (nothing else in flight, nothing queued) is written at once instead: the
   * worker is idle in its read, and waiting for setImmediate would put the rest of the turn on
   * the latency of every isolated call. With calls in flight, the worker is busy anyway and
   * requests keep sharing a write.
   */
  send(header: object | string, body: Buffer[] = [], lone = false): void {
    if (!this.toWorker || this.gone) return;
    const scheduled = !this.outbox.empty;
    this.outbox.push(header, body);
    if (lone && !scheduled) this.flush();
    else if (!scheduled) setImmediate(() => this.flush());
  }

  /** Cancels calls past their deadline; they fail with `timeout` at once. */
  sweepDeadlines(): void {
    const now = performance.now();
    for (const [id, entry] of this.pending) {
      if (entry.deadline > now) continue;
      this.send({ op: 'cancel', id });
      this.settle(id, entry, {
        ok: false,
        error: new PorticoError('timeout', `The call exceeded its time limit of ${entry.timeoutMs} ms and was cancelled`),
      });
    }
  }

  /** A frame from the worker (other than `ready`): a push, or a reply to a request in flight. */
  dispatch(header: BridgeFrame['header'], body: Buffer, release?: () => void): void {
    const push = this.pushOf(header, body);
    if (push) {
      this.options.onPush?.(String(header.uuid), push);
      return;
    }
    const id = Number(header.id);
    const entry = this.pending.get(id);
    if (!entry) {
      if (header.op === 'heartbeat') this.lastBeat = performance.now();
      return release?.(); // a late reply to a call that already ended
    }
    switch (header.op) {
      case 'item':
      case 'chunk':
        return this.deliver(id, entry, header, body, release);
      case 'output':
        return entry.onOutput?.(header.stream === 'stderr' ? 'stderr' : 'stdout', String(header.text ?? ''));
      case 'end':
        return this.settle(id, entry, { ok: true, streamed: true, payload: header.bytes });
      case 'result':
        return this.settle(id, entry, this.resultOf(header, body));
      case 'resolved':
      case 'modules':
      case 'schema':
      case 'resources':
      case 'widget_assets':
      case 'invalidated':
        return this.settle(id, entry, { ok: true, streamed: false, payload: header });
      case 'error':
        return this.settle(id, entry, { ok: false, error: errorFromWorker(header, this.options.project) });
      default:
        this.log(`bridge: unexpected op '${header.op}' from worker`, 'error');
    }
  }

  private settle(id: number, entry: Pending, outcome: CallOutcome): void {
    this.pending.delete(id);
    entry.onSettled(outcome);
  }

  /**
   * Aborting `signal` cancels every call in flight under it. One listener per signal however
   * many calls (a socket's signal carries all of its calls); the calls are found among those in
   * flight when it fires, so a call costs no bookkeeping per signal.
   */
  private cancelOnAbort(signal: AbortSignal): void {
    if (this.listening.has(signal)) return;
    this.listening.add(signal);
    signal.addEventListener(
      'abort',
      () => {
        for (const [id, entry] of this.pending) if (entry.signal === signal) this.send({ op: 'cancel', id });
      },
      { once: true },
    );
  }

  /**
   * A stream item or a read's chunk, delivered synchronously (in order with events); credit goes
   * back once the sink is ready. A chunk's body goes back to the decoder once the sink settles (it
   * no longer refers to it then); a sink that failed may still hold it, so that body is left to
   * the collector.
   */
  private deliver(id: number, entry: Pending, header: BridgeFrame['header'], body: Buffer, release: (() => void) | undefined): void {
    if (!entry.onItem) return;
    const chunk = header.op === 'chunk';
    let ready;
    if (!chunk && header.display !== undefined) {
      const display = this.itemDisplay(id, entry, header, body);
      if (!display) return;
      ready = entry.onItem(header.payload, display);
    } else {
      ready = entry.onItem(chunk ? body : header.payload);
    }
    if (ready) {
      ready.then(
        () => {
          release?.();
          this.grantCredit(id, chunk);
        },
        () => this.send({ op: 'cancel', id }),
      );
    } else {
      release?.();
      this.grantCredit(id, chunk);
    }
  }

  /** A `result` frame as the call's outcome. */
  private resultOf(header: BridgeFrame['header'], body: Buffer): CallOutcome {
    // Nearly every result: no buffers, no display bundle, nothing to cut.
    if (body.length === 0 && header.buffer_lengths === undefined && header.display === undefined) return { ok: true, streamed: false, payload: header.payload };
    const buffers = this.buffersOf(header, body);
    if (!buffers) return { ok: false, error: new PorticoError('internal', 'The worker sent buffers that do not match their lengths') };
    if (header.display !== undefined) {
      try {
        return { ok: true, streamed: false, payload: header.payload, display: displayOf(header, buffers) };
      } catch (err) {
        return { ok: false, error: err as PorticoError };
      }
    }
    return { ok: true, streamed: false, payload: header.payload, ...(buffers.length ? { buffers } : {}) };
  }

  /**
   * Credits the worker for an item or chunk its sink is done with. A read's chunks are credited
   * LIMITS.readCreditBatch at a time: every credit wakes the worker (a context switch on a
   * loaded machine), which for a read of 1 MiB chunks cost more wall time than anything else.
   * Holding back fewer than the window never stalls a read: a worker out of credit has its whole
   * window in the gateway, and every chunk of it is released in time.
   */
  private grantCredit(id: number, chunk: boolean): void {
    const entry = this.pending.get(id);
    if (!entry) return;
    entry.owed += 1;
    if (chunk && entry.owed < LIMITS.readCreditBatch) return;
    this.send({ op: 'credit', id, n: entry.owed });
    entry.owed = 0;
  }

  /** The display bundle of a stream item; undefined when it does not fit (the call is cancelled and fails). */
  private itemDisplay(id: number, entry: Pending, header: BridgeFrame['header'], body: Buffer): Display | undefined {
    const buffers = this.buffersOf(header, body);
    let error = new PorticoError('internal', 'The worker sent buffers that do not match their lengths');
    if (buffers) {
      try {
        return displayOf(header, buffers, 'A stream item');
      } catch (err) {
        error = err as PorticoError;
      }
    }
    this.send({ op: 'cancel', id });
    this.settle(id, entry, { ok: false, error });
    return undefined;
  }

  /** The buffers of a frame's body (`buffer_lengths`); undefined, and logged, when they do not fit. */
  private buffersOf(header: BridgeFrame['header'], body: Buffer): Buffer[] | undefined {
    try {
      return splitBody(header.buffer_lengths, body);
    } catch (err) {
      this.log(`bridge: ${header.op} frame: ${(err as Error).message}`, 'error');
      return undefined;
    }
  }

  /** The client frame an unsolicited worker frame becomes, if it is one. */
  private pushOf(header: BridgeFrame['header'], body: Buffer): Push | undefined {
    switch (header.op) {
      case 'event': {
        if (header.display === undefined) return { type: 'event', payload: header.payload };
        // The worker bounds bundles first: one that does not fit here is logged, the event sent without it.
        try {
          const buffers = this.buffersOf(header, body);
          if (!buffers) throw new Error('its buffers do not match their lengths');
          return { type: 'event', payload: header.payload, display: displayOf(header, buffers, 'An event') };
        } catch (err) {
          this.log(`bridge: event frame: ${(err as Error).message}; sent without its display bundle`, 'error');
          return { type: 'event', payload: header.payload };
        }
      }
      case 'widget_change':
      case 'widget_msg': {
        if (header.op === 'widget_msg' && header.id !== undefined) return undefined; // a request's echo, never sent
        const buffers = this.buffersOf(header, body) ?? [];
        const payload = header.op === 'widget_change' ? { changes: header.changes, ...(header.buffer_paths ? { buffer_paths: header.buffer_paths } : {}) } : { content: header.content ?? null };
        return { type: header.op, payload, buffers };
      }
      default:
        return undefined;
    }
  }

  private flush(): void {
    const parts = this.outbox.take();
    if (parts.length === 1) {
      this.toWorker?.write(parts[0]!);
      return;
    }
    // Widget buffers of megabytes: hand the parts over as they are (one writev), not copied into one.
    this.toWorker?.cork();
    for (const part of parts) this.toWorker?.write(part);
    this.toWorker?.uncork();
  }

  private log(line: string, level?: LineLevel): void {
    this.options.log(line, level);
  }
}
