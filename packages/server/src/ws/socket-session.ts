/**
 * What every socket session shares: frames decoded and validated against the endpoint's
 * schemas, each handled without blocking the next, failures answered as `error` frames (the
 * socket stays usable), ping/close, and one teardown when the socket goes away. A frame with
 * `binary_buffers: n` is handled once the n binary frames right after it (its buffers) are in.
 */
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import type { z } from '../contract/zod.js';
import { PorticoError, toPorticoError } from '../errors.js';
import type { LogLine } from '../ops/logger.js';
import type { BindInput, Gateway } from '../service/gateway.js';
import { decodeFrame, type FrameId } from './decode.js';

/** A frame waiting for the binary frames that carry its buffers. */
interface Awaiting<F> {
  frame: F;
  id: FrameId;
  count: number;
  received: number;
  buffers: Buffer[];
  bytes: number;
  /** Over the bound: the rest of its buffers are swallowed, then this answers it. */
  refused?: PorticoError;
}

export abstract class SocketSession<F extends { type: string; id?: FrameId }> {
  protected closed = false;
  /** Frames being handled now, with the id each answers with (a call runs until its result or last stream item is sent). */
  private readonly handling = new Map<F, FrameId>();
  /** Frames handled since the socket opened (for its access line). */
  frames = 0;
  private awaiting: Awaiting<F> | undefined;
  /** The TCP socket under the WebSocket, corked while this tick's frames are queued (see `send`). */
  private readonly tcp: Socket | undefined;
  private corked = false;

  constructor(
    protected readonly socket: WebSocket,
    protected readonly gateway: Gateway,
    /** Project, interpreter and user from the upgrade request (a connect frame may override the project). */
    protected readonly binding: BindInput,
    protected readonly log: LogLine,
    private readonly schemas: Record<string, z.ZodType>,
  ) {
    // ws keeps its TCP socket in `_socket` (not typed, but what ws itself and its users rely on).
    this.tcp = (socket as unknown as { _socket?: Socket })._socket;
    socket.on('message', (data, isBinary) => this.receive(data as Buffer, isBinary));
    socket.on('close', () => this.teardown());
    socket.on('error', (err) => this.log(`websocket error: ${err.message}`));
  }

  /**
   * Handles one valid frame other than ping and close, with the buffers that came as binary
   * frames after it (`binary_buffers`); reject with a PorticoError to answer an error. A handler
   * may instead return nothing and call `frameEnded(frame)` once the frame is done (never while
   * `tracingFrames`, whose lines need the promise): the call path does, a promise fewer per call.
   */
  protected abstract handle(frame: F, buffers: Buffer[]): Promise<void> | undefined;

  /** Each frame gets a debug line with its duration (debug level): handlers must return their promise. */
  protected get tracingFrames(): boolean {
    return this.gateway.logger.isLevelEnabled('debug');
  }

  /** A frame whose handler returned nothing is done. */
  protected frameEnded(frame: F): void {
    this.handling.delete(frame);
  }

  /**
   * Closes the socket with `code` (4401: its credential expired; 1001: the gateway stops). With
   * `cutOff`, every frame still in flight is first answered with it, an `error` frame for its id
   * (the drain deadline: `shutting_down`). Everything the session started stops now, and frames
   * that still arrive during the closing handshake are ignored.
   */
  end(code: number, reason: string, cutOff?: PorticoError): void {
    if (!this.closed) {
      if (cutOff) {
        // A frame still waiting for its binary buffers was never handled: it is owed an answer too.
        const ids = this.awaiting ? [this.awaiting.id, ...this.owedAnswers()] : this.owedAnswers();
        for (const id of ids) this.sendError(id, cutOff);
      }
      this.teardown();
    }
    this.socket.close(code, reason);
  }

  /** The frames being handled now, with the id each answers with. */
  protected get framesInFlight(): ReadonlyMap<F, FrameId> {
    return this.handling;
  }

  /** The ids of what is in flight and owed an answer: one per frame being handled (a session with transfers spanning frames says more). */
  protected owedAnswers(): FrameId[] {
    return [...this.handling.values()];
  }

  /** Nothing is in flight: a shutdown may close this socket without cutting anything off. */
  get idle(): boolean {
    return this.handling.size === 0;
  }

  /** Releases what the session holds; runs once, when the socket closes or a close frame comes. */
  protected teardown(): void {
    this.closed = true;
  }

  protected send(frame: object): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    this.corkForThisTick();
    this.socket.send(this.text(frame as { type?: unknown; id?: FrameId }));
  }

  /**
   * A frame's JSON. One JSON cannot hold (a result nested past the stack, say) is answered, as
   * REST answers it, with an `internal` error for its id, and logged.
   */
  private text(frame: { type?: unknown; id?: FrameId }): string {
    try {
      return JSON.stringify(frame);
    } catch (err) {
      this.log(`a '${String(frame.type)}' frame could not be written: ${(err as Error)?.stack ?? err}`, 'error');
      const payload = new PorticoError('internal', 'The answer could not be written (details are in the gateway log)').toDetail();
      return JSON.stringify(frame.id === undefined ? { type: 'error', payload } : { type: 'error', id: frame.id, payload });
    }
  }

  /**
   * Frames sent in one tick go out in one write: the worker answers pipelined calls in batches,
   * and a write (a syscall that wakes the peer) per result frame was the largest cost of a
   * pipelined call in the gateway's profile. Uncorked before the event loop waits again, so
   * nothing is delayed beyond the current tick.
   */
  protected corkForThisTick(): void {
    if (this.corked || !this.tcp) return;
    this.corked = true;
    this.tcp.cork();
    process.nextTick(() => {
      this.corked = false;
      this.tcp!.uncork();
    });
  }

  protected sendError(id: FrameId, error: PorticoError): void {
    // The client reads the message; the operator's version (hosts, paths) goes to the log only.
    if (error.internal) this.log(`${error.code}: ${error.internal}`, 'warn');
    this.send(id === undefined ? { type: 'error', payload: error.toDetail() } : { type: 'error', id, payload: error.toDetail() });
  }

  /** A binary frame; endpoints without a data plane refuse it (the socket stays usable). */
  protected receiveBinary(_data: Buffer): void {
    this.sendError(undefined, new PorticoError('no_active_upload', 'Binary frame received without chunk_start'));
  }

  private receive(data: Buffer, isBinary: boolean): void {
    if (this.closed) return;
    const awaiting = this.awaiting;
    if (awaiting && isBinary) return this.collect(awaiting, data);
    if (awaiting) {
      this.awaiting = undefined;
      const error = new PorticoError('invalid_frame', `'${awaiting.frame.type}' announced ${awaiting.count} binary frames with its buffers but a text frame came after ${awaiting.received}; it was not delivered`);
      this.sendError(awaiting.id, error);
    }
    if (isBinary) return this.receiveBinary(data);
    const decoded = decodeFrame<F>(data, this.schemas);
    if (!decoded.ok) return this.sendError(decoded.id, decoded.error);
    const count = (decoded.frame as { binary_buffers?: number }).binary_buffers;
    if (count) {
      this.awaiting = { frame: decoded.frame, id: decoded.id, count, received: 0, buffers: [], bytes: 0 };
      return;
    }
    this.dispatch(decoded.frame, decoded.id, []);
  }

  /** One buffer of the awaited frame; the frame is handled (or refused) once all are in. */
  private collect(awaiting: Awaiting<F>, data: Buffer): void {
    awaiting.bytes += data.length;
    const max = this.gateway.widgets.bufferMax;
    if (!awaiting.refused && awaiting.bytes > max) {
      awaiting.refused = new PorticoError('payload_too_large', `'${awaiting.frame.type}' carries more than ${max} bytes of buffers (--widget-buffer-max); nothing of it was delivered`);
      awaiting.buffers = []; // swallow the rest, keep nothing
    }
    if (!awaiting.refused) awaiting.buffers.push(data);
    if (++awaiting.received < awaiting.count) return;
    this.awaiting = undefined;
    if (awaiting.refused) this.sendError(awaiting.id, awaiting.refused);
    else this.dispatch(awaiting.frame, awaiting.id, awaiting.buffers);
  }

  private dispatch(frame: F, id: FrameId, buffers: Buffer[]): void {
    if (frame.type === 'ping') return this.send({ type: 'pong', id: frame.id });
    if (frame.type === 'close') {
      if (!this.closed) this.teardown();
      this.socket.close(1000, 'closed by client');
      return;
    }
    this.handling.set(frame, id);
    this.frames += 1;
    const debug = this.tracingFrames;
    // The per-frame debug line is built only when it is written: calls are the hot path.
    const started = debug ? performance.now() : 0;
    let running: Promise<void> | undefined;
    try {
      running = this.handle(frame, buffers);
    } catch (err) {
      running = Promise.reject(err);
    }
    if (running === undefined) return; // the handler calls frameEnded(frame)
    const done = (code?: string) => {
      this.handling.delete(frame);
      if (!debug) return;
      // One line per frame at debug level; the socket's own line (info) comes when it closes.
      this.gateway.logger.debug({ frame: frame.type, id, ...(code ? { code } : {}), duration_ms: Math.round((performance.now() - started) * 100) / 100 }, 'frame');
    };
    // One then() rather than catch() and finally(): a promise and a microtask fewer per frame.
    running.then(
      () => done(),
      (err) => {
        const error = toPorticoError(err);
        try {
          if (!(err instanceof PorticoError)) this.log(`frame '${frame.type}' failed: ${(err as Error)?.stack ?? err}`, 'error');
          this.sendError(id, error);
        } finally {
          done(error.code);
        }
      },
    );
  }
}
