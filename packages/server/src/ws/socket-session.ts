/**
 * What every socket session shares: frames decoded and validated against the endpoint's
 * schemas, each handled without blocking the next, failures answered as `error` frames (the
 * socket stays usable), ping/close, one teardown when the socket goes away, and sending: frames
 * corked per tick, frames with binary buffers, stream items and read chunks paced by the socket's
 * queue. A frame with `binary_buffers: n` is handled once the n binary frames right after it (its
 * buffers) are in.
 */
import type { WebSocket } from 'ws';
import { LIMITS } from '../config/constants.js';
import type { z } from '../contract/zod.js';
import { PorticoError, toPorticoError } from '../errors.js';
import type { LogLine } from '../ops/logger.js';
import { displayFields, type Display } from '../service/display.js';
import type { BindInput, Gateway } from '../service/gateway.js';
import { decodeFrame, type Decoded, type FrameId } from './decode.js';
import { TickCork } from './tick-cork.js';

const BINARY_FRAME = { binary: true, compress: false } as const;
const TEXT_FRAME = { binary: false } as const;

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
  /** When each frame being handled began (performance.now()), kept only while frames are traced (debug level). */
  private readonly began = new Map<F, number>();
  /** Frames handled since the socket opened (for its access line). */
  frames = 0;
  private awaiting: Awaiting<F> | undefined;
  /** This tick's frames go out in one write (see `send`). */
  private readonly cork: TickCork;
  /** The client asked (connect `buffers: binary`) for binary data as binary frames, not base64. */
  protected binaryBuffers = false;

  constructor(
    protected readonly socket: WebSocket,
    protected readonly gateway: Gateway,
    /** Project, interpreter and user from the upgrade request (a connect frame may override the project). */
    protected readonly binding: BindInput,
    protected readonly log: LogLine,
    private readonly schemas: Record<string, z.ZodType>,
  ) {
    this.cork = new TickCork(socket);
    socket.on('message', (data, isBinary) => this.receive(data as Buffer, isBinary));
    socket.on('close', () => this.teardown());
    socket.on('error', (err) => this.log(`websocket error: ${err.message}`));
  }

  /**
   * Handles one valid frame other than ping and close, with the buffers that came as binary
   * frames after it (`binary_buffers`). Every frame ends by `frameEnded` (or `frameFailed`,
   * which answers an `error` frame for its id): a handler that returns a promise has the frame
   * ended when it settles (a rejection with a PorticoError answers that error); one that returns
   * nothing ends the frame itself (the call path: a promise fewer per call).
   */
  protected abstract handle(frame: F, buffers: Buffer[]): Promise<void> | undefined;

  /** `frame` is done (its answer was sent); at debug level, its line with its duration is written. */
  protected frameEnded(frame: F, code?: string): void {
    const id = this.handling.get(frame);
    this.handling.delete(frame);
    const began = this.began.get(frame);
    if (began === undefined) return;
    this.began.delete(frame);
    // One line per frame at debug level; the socket's own line (info) comes when it closes.
    this.gateway.logger.debug({ frame: frame.type, id, ...(code ? { code } : {}), duration_ms: Math.round((performance.now() - began) * 100) / 100 }, 'frame');
  }

  /** `frame` failed with `err`: answered with an `error` frame for its id (logged when it is no PorticoError), then ended. */
  protected frameFailed(frame: F, err: unknown): void {
    const error = toPorticoError(err);
    try {
      if (!(err instanceof PorticoError)) this.log(`frame '${frame.type}' failed: ${(err as Error)?.stack ?? err}`, 'error');
      this.sendError(this.handling.get(frame), error);
    } finally {
      this.frameEnded(frame, error.code);
    }
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

  /** Frames sent in one tick go out in one write (ws/tick-cork.ts). */
  protected corkForThisTick(): void {
    this.cork.now();
  }

  /**
   * Sends a widget frame with its buffers: as binary frames right after it (`binary_buffers`)
   * when the client asked for them, else base64 in `payload.buffers` (always present on widget_msg,
   * as clients of the base64 form expect). Text and binary frames go out in one synchronous
   * step, so nothing can come between them.
   */
  protected sendWidget(frame: { type: string; id?: FrameId; payload: Record<string, unknown> }, buffers: Buffer[]): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    if (this.binaryBuffers && buffers.length > 0) {
      this.socket.send(JSON.stringify({ ...frame, binary_buffers: buffers.length }));
      for (const buffer of buffers) this.socket.send(buffer, { binary: true });
      return;
    }
    const encoded = buffers.length > 0 || frame.type === 'widget_msg' ? { buffers: buffers.map((b) => b.toString('base64')) } : {};
    this.send({ ...frame, payload: { ...frame.payload, ...encoded } });
  }

  /**
   * A result, stream item or event with its display bundle (docs/writing/rich-results.md): binary data
   * as binary frames right after it (`binary_buffers`, placed in `display` by `buffer_paths`) on a
   * socket connected with buffers: binary, as widget buffers travel, sent in one synchronous step
   * so that nothing comes between them; else base64 text in `display`, as Jupyter sends it.
   * `paced` (stream items): resolves once the socket's queue is below its high-water mark again.
   */
  protected sendShown(frame: { type: string; id?: FrameId; payload: unknown; final?: boolean }, display: Display, paced = false): Promise<void> | undefined {
    const { fields, buffers } = displayFields(display, this.binaryBuffers);
    if (buffers.length === 0) {
      if (paced) return this.sendPaced({ ...frame, ...fields });
      this.send({ ...frame, ...fields });
      return undefined;
    }
    if (this.socket.readyState !== this.socket.OPEN) return paced ? Promise.reject(new Error('socket closed')) : undefined;
    this.corkForThisTick();
    this.socket.send(JSON.stringify({ ...frame, ...fields, binary_buffers: buffers.length }), TEXT_FRAME);
    const last = buffers.pop()!;
    for (const buffer of buffers) this.socket.send(buffer, BINARY_FRAME);
    if (!paced || this.socket.bufferedAmount < LIMITS.socketHighWaterBytes) {
      this.socket.send(last, BINARY_FRAME);
      return undefined;
    }
    return new Promise((resolve, reject) => this.socket.send(last, BINARY_FRAME, (err) => (err ? reject(err) : resolve())));
  }

  /** Sends a stream item as JSON text, and resolves once the socket's queue is below its high-water mark again. */
  protected sendPaced(frame: object): Promise<void> | undefined {
    if (this.socket.readyState !== this.socket.OPEN) return Promise.reject(new Error('socket closed'));
    const data = JSON.stringify(frame);
    this.corkForThisTick();
    if (this.socket.bufferedAmount < LIMITS.socketHighWaterBytes) {
      this.socket.send(data, TEXT_FRAME);
      return undefined;
    }
    return new Promise((resolve, reject) => this.socket.send(data, TEXT_FRAME, (err) => (err ? reject(err) : resolve())));
  }

  /**
   * A message relayed from an instance's owner, as it came (ws/owner-relay.ts); a promise while
   * the socket's queue is over its high-water mark, resolved once this message is written.
   */
  protected sendRelayed(data: Buffer, isBinary: boolean): Promise<void> | undefined {
    if (this.socket.readyState !== this.socket.OPEN) return undefined;
    this.corkForThisTick();
    const options = isBinary ? BINARY_FRAME : TEXT_FRAME;
    if (this.socket.bufferedAmount < LIMITS.socketHighWaterBytes) {
      this.socket.send(data, options);
      return undefined;
    }
    return new Promise((resolve) => this.socket.send(data, options, () => resolve()));
  }

  /**
   * Sends a read's chunk as a binary frame and resolves once the socket has written it: the
   * worker's decoder reuses the Buffer after that, and credit for the next chunk waits for it, so
   * a read keeps at most its window of chunks in the gateway.
   */
  protected sendChunk(chunk: Buffer): Promise<void> {
    if (this.socket.readyState !== this.socket.OPEN) return Promise.reject(new Error('socket closed'));
    this.corkForThisTick();
    // A read's bytes are never deflated (docs/operating/sockets.md).
    return new Promise((resolve, reject) => this.socket.send(chunk, BINARY_FRAME, (err) => (err ? reject(err) : resolve())));
  }

  protected sendError(id: FrameId, error: PorticoError): void {
    // The client reads the message; the operator's version (hosts, paths) goes to the log only.
    if (error.internal) this.log(`${error.code}: ${error.internal}`, 'warn');
    this.send(id === undefined ? { type: 'error', payload: error.toDetail() } : { type: 'error', id, payload: error.toDetail() });
  }

  /** A frame that failed validation was answered with its error; a session whose frames span several messages (an upload) hears of it here. */
  protected frameRefused(_refused: Extract<Decoded<F>, { ok: false }>): void {}

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
    if (!decoded.ok) {
      this.sendError(decoded.id, decoded.error);
      return this.frameRefused(decoded);
    }
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
    // Timed only when its debug line will be written: calls are the hot path.
    if (this.gateway.logger.isLevelEnabled('debug')) this.began.set(frame, performance.now());
    let running: Promise<void> | undefined;
    try {
      running = this.handle(frame, buffers);
    } catch (err) {
      return this.frameFailed(frame, err);
    }
    // One then() rather than catch() and finally(): a promise and a microtask fewer per frame.
    running?.then(
      () => this.frameEnded(frame),
      (err) => this.frameFailed(frame, err),
    );
  }
}
