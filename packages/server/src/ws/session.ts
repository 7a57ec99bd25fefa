/**
 * One session per socket on /v1/interfaces/ws: validates frames, connects to one interface,
 * runs calls concurrently (a slow call never blocks ping or another call), forwards the
 * interface's pushes, and cancels everything it started when the socket goes away.
 * Every failure answers an `error` frame and the socket stays usable.
 */
import type { WebSocket } from 'ws';
import { LIMITS } from '../config/constants.js';
import { ClientFrames, type ClientFrame } from '../contract/frames.js';
import { PorticoError } from '../errors.js';
import type { RequestContext } from '../service/context.js';
import type { BindInput, Gateway } from '../service/gateway.js';
import type { CallOutcome, InterfaceInfo } from '../service/interfaces.js';
import type { Listener } from '../service/projects.js';
import { Upload, uploadRoot } from '../service/uploads.js';
import { checkWidgetBuffers } from '../service/widgets.js';
import type { FrameId } from './decode.js';
import { SocketSession } from './socket-session.js';

interface Connection {
  ctx: RequestContext;
  record: InterfaceInfo;
  /** What this socket receives of the interface's pushes. */
  listener: Listener;
  detach: () => boolean;
}

/**
 * The one binary transfer a socket may have at a time (binary frames carry no id): an upload
 * receiving bytes, an upload being made durable after its chunk_end, or a read sending bytes.
 */
type Transfer = { id: FrameId; upload: Upload; finishing: boolean } | { id: FrameId; upload?: undefined };

type Frame<T extends ClientFrame['type']> = Extract<ClientFrame, { type: T }>;

export class Session extends SocketSession<ClientFrame> {
  private connection: Connection | undefined;
  private transfer: Transfer | undefined;
  /** The socket stopped reading because an upload's disk writes are behind. */
  private paused = false;
  private connecting: Promise<void> | undefined;
  /** Aborted when the socket goes away: cancels every call it started. */
  private readonly controller = new AbortController();

  constructor(socket: WebSocket, gateway: Gateway, binding: BindInput, log: (line: string) => void) {
    super(socket, gateway, binding, log, ClientFrames);
  }

  protected handle(frame: ClientFrame, buffers: Buffer[]): Promise<void> | undefined {
    switch (frame.type) {
      case 'connect':
        return this.connect(frame);
      case 'call':
        return this.call(frame);
      case 'chunk_start':
        return frame.mode === 'read' ? this.read(frame) : this.upload(frame);
      case 'chunk_end':
        return this.finishUpload(frame);
      case 'widget_get':
      case 'widget_set':
      case 'widget_msg':
        return this.widget(frame, buffers);
      case 'release':
        return this.release(frame);
      default:
        return Promise.resolve(); // ping and close: the base class answers them
    }
  }

  /** An upload or read spans frames: the socket is busy until it ends. */
  override get idle(): boolean {
    return super.idle && this.transfer === undefined;
  }

  /** A transfer is owed its answer by its id until it ends, between its frames too (a failed upload had it). */
  protected override owedAnswers(): FrameId[] {
    const ids = [...this.framesInFlight].filter(([frame]) => frame.type !== 'chunk_start' && frame.type !== 'chunk_end').map(([, id]) => id);
    if (this.transfer && !this.transfer.upload?.error) ids.push(this.transfer.id);
    return ids;
  }

  /**
   * Widget frames; the gateway answers the sender, and widget_set reaches every other client too.
   * `attached` are the buffers that came as binary frames; else base64 ones in the frame count.
   */
  private async widget(frame: Frame<'widget_get' | 'widget_set' | 'widget_msg'>, attached: Buffer[]): Promise<void> {
    const { ctx, record, listener } = await this.connected(frame.type);
    const { widgets } = this.gateway;
    const signal = this.controller.signal;
    if (frame.type === 'widget_get') {
      const { buffers, ...payload } = await widgets.state(ctx, record, signal);
      this.sendWidget({ type: 'widget_state', id: frame.id, payload }, buffers);
      return;
    }
    const buffers = attached.length > 0 ? attached : (frame.buffers ?? []).map((b) => Buffer.from(b, 'base64'));
    if (frame.type === 'widget_set') {
      const changes = { changes: frame.changes, ...(frame.buffer_paths ? { buffer_paths: frame.buffer_paths } : {}), buffers };
      const { buffers: normalized, ...payload } = await widgets.update(ctx, record, changes, listener, signal);
      this.sendWidget({ type: 'widget_change', id: frame.id, payload }, normalized);
    } else {
      const reply = await widgets.message(ctx, record, frame.content ?? null, buffers, signal);
      // One answer per message: the reply, or (the hook returned None) that it was handled.
      if (reply.has_reply) this.sendWidget({ type: 'widget_msg', id: frame.id, payload: { content: reply.reply } }, reply.buffers);
      else this.send({ type: 'widget_msg_done', id: frame.id });
    }
  }

  /** The connection, once a connect pipelined ahead of this frame has finished. */
  private async connected(what: string): Promise<Connection> {
    if (this.connecting) await this.connecting.catch(() => undefined);
    if (!this.connection) throw new PorticoError('not_connected', `Send connect before ${what}`);
    return this.connection;
  }

  /** Refuses a new transfer while another is active (binary frames carry no id to tell two apart). */
  private checkNoTransfer(): void {
    const current = this.transfer;
    // A failed upload only waits for its chunk_end to swallow its bytes: a new transfer replaces it.
    if (current && !(current.upload?.error && !current.finishing)) {
      throw new PorticoError('transfer_active', `Transfer '${current.id}' is still active on this socket; finish it before starting another`);
    }
  }

  /** chunk_start (write | append): from here on, binary frames are this upload's bytes. */
  private async upload(frame: Frame<'chunk_start'>): Promise<void> {
    this.checkNoTransfer();
    const { id } = frame;
    let reported = false;
    const transfer: Transfer = {
      id,
      finishing: false,
      upload: new Upload(
        this.connected('chunk_start').then((c) => uploadRoot(c.ctx, c.record.uuid)),
        frame.path,
        frame.mode === 'append' ? 'append' : 'write',
        {
          maxBytes: this.gateway.options.uploadMax,
          highWater: LIMITS.uploadHighWaterBytes,
          onDrain: () => this.resumeReading(),
          onFail: (error) => {
            if (reported || this.closed) return;
            reported = true;
            this.sendError(id, error);
          },
        },
      ),
    };
    this.transfer = transfer;
  }

  protected override receiveBinary(data: Buffer): void {
    const transfer = this.transfer;
    if (!transfer?.upload || transfer.finishing) {
      return this.sendError(undefined, new PorticoError('no_active_upload', 'Binary frame received without chunk_start (or after its chunk_end)'));
    }
    transfer.upload.write(data);
    if (transfer.upload.overHighWater && !this.paused) {
      this.paused = true;
      this.socket.pause();
    }
  }

  private resumeReading(): void {
    if (!this.paused) return;
    this.paused = false;
    this.socket.resume();
  }

  /** chunk_end: answers chunk_done once the bytes are durable under the final name. */
  private async finishUpload(frame: Frame<'chunk_end'>): Promise<void> {
    const transfer = this.transfer;
    if (!transfer?.upload || transfer.finishing) throw new PorticoError('no_active_upload', 'No active chunk upload');
    if (frame.id !== undefined && frame.id !== transfer.id) {
      throw new PorticoError('upload_id_mismatch', `chunk_end id '${frame.id}' does not match the active upload '${transfer.id}'`);
    }
    transfer.finishing = true;
    try {
      if (transfer.upload.error) return; // already answered with its error
      let done;
      try {
        done = await transfer.upload.finish();
      } catch (err) {
        if (transfer.upload.error && transfer.upload.error !== err) return;
        throw err;
      }
      this.gateway.metrics.uploadBytes.inc(done.bytes_written);
      this.send({ type: 'chunk_done', id: transfer.id, payload: done });
    } finally {
      if (this.transfer === transfer) this.transfer = undefined;
    }
  }

  /** chunk_start (read): the read hook's bytes as binary frames, at the client's pace. */
  private async read(frame: Frame<'chunk_start'>): Promise<void> {
    this.checkNoTransfer();
    const transfer: Transfer = { id: frame.id };
    this.transfer = transfer;
    try {
      const connection = await this.connected('chunk_start');
      let sent = 0;
      const outcome = await this.gateway.interfaces.read(connection.ctx, connection.record, frame.params ?? {}, {
        signal: this.controller.signal,
        onChunk: (chunk) => {
          sent += chunk.length;
          return this.sendChunk(chunk);
        },
      });
      this.gateway.metrics.readBytes.inc(sent);
      if (!outcome.ok) throw outcome.error;
      this.send({ type: 'chunk_done', id: frame.id, payload: { bytes_sent: sent } });
    } finally {
      if (this.transfer === transfer) this.transfer = undefined;
    }
  }

  /** release: drops the connected interface's live instance; the socket stays connected. */
  private async release(frame: Frame<'release'>): Promise<void> {
    const { ctx, record } = await this.connected('release');
    const payload = await this.gateway.interfaces.release(ctx, record.uuid);
    this.send({ type: 'released', id: frame.id, payload });
  }

  private async connect(frame: Frame<'connect'>): Promise<void> {
    if (this.connection || this.connecting) throw new PorticoError('already_connected', 'This socket is already connected to an interface');
    const attempt = (async () => {
      const ctx = await this.gateway.bind({ ...this.binding, project: frame.project || this.binding.project });
      const record = await this.gateway.interfaces.create(ctx, {
        target: frame.target,
        version: frame.version ?? [],
        uuid: frame.uuid ?? null,
        label: frame.label ?? null,
        meta: frame.meta ?? {},
      });
      if (this.closed) return;
      this.binaryBuffers = frame.buffers === 'binary';
      const listener: Listener = (push) => this.forward(push);
      const detach = ctx.project.attach(record.uuid, record.module, listener);
      this.connection = { ctx, record, listener, detach };
      this.send({ type: 'connected', id: frame.id, payload: record });
    })();
    this.connecting = attempt;
    try {
      await attempt;
    } finally {
      this.connecting = undefined;
    }
  }

  /** A push of the interface; one whose buffers exceed the bound is refused with an error frame. */
  private forward(push: Parameters<Listener>[0]): void {
    if (push.display) return void this.sendShown({ type: push.type, payload: push.payload }, push.display);
    if (push.type !== 'widget_change' && push.type !== 'widget_msg') return this.send({ type: push.type, payload: push.payload });
    try {
      checkWidgetBuffers(push.buffers ?? [], this.gateway.widgets.bufferMax, `A ${push.type} push`);
    } catch (err) {
      this.log(`${(err as Error).message}; not sent`);
      return this.sendError(undefined, err as PorticoError);
    }
    this.sendWidget({ type: push.type, payload: push.payload as Record<string, unknown> }, push.buffers ?? []);
  }

  /**
   * A call, without a promise: the frame ends (`frameEnded`) when its outcome is answered.
   * Connected (and no connect in progress), the request leaves in this tick; one pipelined
   * behind a connect waits for the connection first.
   */
  private call(frame: Frame<'call'>): undefined {
    const connection = !this.connecting && this.connection;
    if (connection) this.runCall(connection, frame);
    else this.connected('call').then((c) => this.runCall(c, frame)).catch((err: unknown) => this.frameFailed(frame, err));
    return undefined;
  }

  private runCall(connection: Connection, frame: Frame<'call'>): void {
    const { id } = frame;
    this.gateway.interfaces.call(
      connection.ctx,
      connection.record,
      { method: frame.method, args: frame.args ?? [], kwargs: frame.kwargs ?? {} },
      {
        signal: this.controller.signal,
        onItem: (payload, display) => {
          const item = { type: 'stream', id, payload, final: false };
          return display ? this.sendShown(item, display, true) : this.sendPaced(item);
        },
        // Never throws: it may run inside `call` (a worker already gone), where a throw would
        // also reach dispatch's catch and end the frame a second time.
        onSettled: (outcome: CallOutcome) => {
          try {
            if (!outcome.ok) this.sendError(id, outcome.error);
            else if (outcome.streamed) this.send({ type: 'stream', id, payload: null, final: true });
            else if (outcome.display) this.sendShown({ type: 'result', id, payload: outcome.payload }, outcome.display);
            else this.send({ type: 'result', id, payload: outcome.payload });
          } catch (err) {
            this.log(`call ${JSON.stringify(id)}: its answer could not be sent: ${(err as Error)?.message ?? err}`);
          } finally {
            this.frameEnded(frame);
          }
        },
      },
    );
  }

  /** Cancels calls in flight and detaches; the instance lives on (README "Lifetime"). */
  protected override teardown(): void {
    if (this.closed) return;
    super.teardown();
    this.controller.abort();
    // An upload cut off before chunk_end leaves the target as it was.
    void this.transfer?.upload?.abort();
    this.transfer = undefined;
    const connection = this.connection;
    this.connection = undefined;
    connection?.detach();
  }
}
