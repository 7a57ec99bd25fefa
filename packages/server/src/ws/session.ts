/**
 * One session per socket on /v1/interfaces/ws: validates frames, connects to one interface,
 * runs calls concurrently (a slow call never blocks ping or another call), forwards the
 * interface's pushes, and cancels everything it started when the socket goes away.
 * Every failure answers an `error` frame and the socket stays usable. When another gateway owns
 * the interface's live instance (several gateways on one index), the socket's frames go there
 * and its answers come back (ws/owner-relay.ts).
 */
import type { WebSocket } from 'ws';
import { ClientFrames, type ClientFrame } from '../contract/frames.js';
import { PorticoError } from '../errors.js';
import type { RequestContext } from '../service/context.js';
import type { BindInput, Gateway } from '../service/gateway.js';
import type { CallOutcome, InterfaceInfo, WaitListener } from '../service/interfaces.js';
import type { Listener } from '../service/projects.js';
import { checkWidgetBuffers } from '../service/widgets.js';
import type { FrameId } from './decode.js';
import { OwnerRelay, type RelayHost } from './owner-relay.js';
import { SocketSession } from './socket-session.js';
import { Transfers } from './transfers.js';

/**
 * The interface a socket is connected to, and where its live instance is: here (attached to it,
 * `local`), or at the gateway that owns it (`relay`, docs/operating/several-gateways.md). Neither: its
 * owner went away or another gateway took it over, and the next frame finds where it is now.
 */
interface Connection {
  ctx: RequestContext;
  record: InterfaceInfo;
  local?: { listener: Listener; detach: () => boolean };
  relay?: OwnerRelay<ClientFrame>;
}

type Frame<T extends ClientFrame['type']> = Extract<ClientFrame, { type: T }>;

export class Session extends SocketSession<ClientFrame> {
  private connection: Connection | undefined;
  private connecting: Promise<void> | undefined;
  /** Finding where the connected instance lives now (its owner went away). */
  private placing: Promise<void> | undefined;
  /** Aborted when the socket goes away: cancels every call it started. */
  private readonly controller = new AbortController();
  private readonly transfers = new Transfers({
    gateway: this.gateway,
    signal: this.controller.signal,
    closed: () => this.closed,
    send: (frame) => this.send(frame),
    sendError: (id, error) => this.sendError(id, error),
    sendChunk: (chunk) => this.sendChunk(chunk),
    pause: () => this.socket.pause(),
    resume: () => this.socket.resume(),
  });

  constructor(socket: WebSocket, gateway: Gateway, binding: BindInput, log: (line: string) => void) {
    super(socket, gateway, binding, log, ClientFrames);
  }

  protected handle(frame: ClientFrame, buffers: Buffer[]): Promise<void> | undefined {
    if (frame.type === 'connect') return this.connect(frame);
    if (frame.type === 'ping' || frame.type === 'close') return Promise.resolve(); // the base class answers them
    // Connected, and the instance where it was: served in this tick (the call path).
    const connection = !this.connecting && !this.placing && this.connection;
    if (connection && this.placed(connection)) return this.serve(connection, frame, buffers);
    if (!this.connection && !this.connecting) {
      // Refused now, before its bytes arrive: they and its chunk_end are swallowed, not answered again.
      if (frame.type === 'chunk_start' && frame.mode !== 'read') this.transfers.refused(frame.id);
      if (frame.type === 'chunk_end' && this.transfers.refusedAs(frame.id)) return this.transfers.finish(frame);
      throw notConnected(frame.type);
    }
    // Pipelined behind a connect, or its instance's owner changed: once it is known where it lives.
    this.connected(frame.type).then(
      (c) => this.serve(c, frame, buffers)?.then(
        () => this.frameEnded(frame),
        (err: unknown) => this.frameFailed(frame, err),
      ),
      (err: unknown) => this.frameFailed(frame, err),
    );
    return undefined;
  }

  /** An invalid chunk_start of an upload (no path, say) was answered: its bytes and chunk_end are not answered again. */
  protected override frameRefused(refused: { type?: string; mode?: unknown; id: FrameId }): void {
    if (refused.type === 'chunk_start' && refused.mode !== 'read') this.transfers.refused(refused.id);
  }

  /** One frame for the connected instance: relayed to its owner, or served here. */
  private serve(connection: Connection, frame: Exclude<ClientFrame, { type: 'connect' | 'ping' | 'close' }>, buffers: Buffer[]): Promise<void> | undefined {
    if (connection.relay) return void connection.relay.forward(frame, buffers);
    switch (frame.type) {
      case 'call':
        return this.runCall(connection, frame);
      case 'chunk_start':
        return frame.mode === 'read' ? this.transfers.read(connection, frame) : this.transfers.upload(connection, frame);
      case 'chunk_end':
        return this.transfers.finish(frame);
      case 'widget_get':
      case 'widget_set':
      case 'widget_msg':
        return this.widget(connection, frame, buffers);
      case 'release':
        return this.release(connection, frame);
    }
  }

  /** Whether the connection's instance is where the socket sends its frames. */
  private placed(connection: Connection): boolean {
    return connection.relay !== undefined || (connection.local !== undefined && this.gateway.ownership.holds(connection.ctx.project.dir, connection.record.uuid));
  }

  /** An upload or read spans frames: the socket is busy until it ends. */
  override get idle(): boolean {
    return super.idle && !this.transfers.active;
  }

  /** A transfer is owed its answer by its id until it ends, between its frames too (a failed upload had it). */
  protected override owedAnswers(): FrameId[] {
    const ids = [...this.framesInFlight].filter(([frame]) => frame.type !== 'chunk_start' && frame.type !== 'chunk_end').map(([, id]) => id);
    const owed = this.transfers.owed;
    if (owed !== undefined) ids.push(owed);
    return ids;
  }

  /**
   * Widget frames; the gateway answers the sender, and widget_set reaches every other client too.
   * `attached` are the buffers that came as binary frames; else base64 ones in the frame count.
   */
  private async widget({ ctx, record, local }: Connection, frame: Frame<'widget_get' | 'widget_set' | 'widget_msg'>, attached: Buffer[]): Promise<void> {
    const { widgets } = this.gateway;
    const signal = this.controller.signal;
    if (frame.type === 'widget_get') {
      const { buffers, ...payload } = await widgets.state(ctx, record, signal, this.waiting(frame.id));
      this.sendWidget({ type: 'widget_state', id: frame.id, payload }, buffers);
      return;
    }
    const buffers = attached.length > 0 ? attached : (frame.buffers ?? []).map((b) => Buffer.from(b, 'base64'));
    if (frame.type === 'widget_set') {
      const changes = { changes: frame.changes, ...(frame.buffer_paths ? { buffer_paths: frame.buffer_paths } : {}), buffers };
      const { buffers: normalized, ...payload } = await widgets.update(ctx, record, changes, local!.listener, signal, this.waiting(frame.id));
      this.sendWidget({ type: 'widget_change', id: frame.id, payload }, normalized);
    } else {
      const reply = await widgets.message(ctx, record, frame.content ?? null, buffers, signal, this.waiting(frame.id));
      // One answer per message: the reply, or (the hook returned None) that it was handled.
      if (reply.has_reply) this.sendWidget({ type: 'widget_msg', id: frame.id, payload: { content: reply.reply } }, reply.buffers);
      else this.send({ type: 'widget_msg_done', id: frame.id });
    }
  }

  /** The connection, once a connect pipelined ahead of this frame has finished and it is known where its instance lives. */
  private async connected(what: string): Promise<Connection> {
    if (this.connecting) await this.connecting.catch(() => undefined);
    const connection = this.connection;
    if (!connection) throw notConnected(what);
    if (!this.placed(connection)) {
      await this.placeAgain(connection);
      if (!this.placed(connection)) throw new PorticoError('owner_lost', 'Where the live instance of this interface lives now is not known yet; retry');
    }
    return connection;
  }

  /** Finds where the instance lives now, once for every frame waiting on it. */
  private placeAgain(connection: Connection): Promise<void> {
    this.placing ??= this.place(connection).finally(() => (this.placing = undefined));
    return this.placing;
  }

  /**
   * Finds where the connection's instance lives and goes there: attached here when this gateway
   * owns it, else relayed to its owner. An owner that cannot be reached, or that moved the
   * instance on, is asked again (its lease ends within the lease time, then a gateway takes it).
   */
  private async place(connection: Connection): Promise<void> {
    const { ctx, record } = connection;
    for (let attempt = 1; ; attempt++) {
      const owner = await this.gateway.ownership.locate(ctx, record.uuid);
      if (this.closed) return;
      if (owner.local) {
        // Still attached when this gateway turned out to hold it after all (it asked the database again).
        if (connection.local) return;
        const listener: Listener = (push) => this.forward(push);
        connection.local = { listener, detach: ctx.project.attach(record.uuid, record.module, listener) };
        return;
      }
      // Attached until now: it heard the instance_restarted of the copy here, which another gateway's replaces.
      connection.local?.detach();
      connection.local = undefined;
      try {
        const buffers = this.binaryBuffers ? 'binary' : 'base64';
        connection.relay = await OwnerRelay.open(owner, this.gateway.ownership.forwardHeaders(ctx), this.gateway.ownership.forwardParams(ctx), { uuid: record.uuid, buffers }, this.relayHost(connection), this.gateway.ownership.leaseMs);
        if (this.closed) connection.relay.close();
        // A connect starts its relay once it answered `connected`; a socket already connected, now.
        else if (connection === this.connection) connection.relay.start();
        return;
      } catch (err) {
        const unreachable = (err as { unreachable?: boolean }).unreachable === true;
        if (unreachable) this.gateway.ownership.unreachable(owner.owner);
        const moved = (err as PorticoError).code === 'instance_moved';
        if (moved) this.gateway.ownership.forget(ctx, record.uuid);
        if (attempt >= 3 || !(unreachable || moved)) throw err;
      }
    }
  }

  /** What the relay to the owner of `connection`'s instance tells this socket. */
  private relayHost(connection: Connection): RelayHost<ClientFrame> {
    return {
      toClient: (data, isBinary) => this.sendRelayed(data, isBinary),
      ended: (frame) => this.frameEnded(frame),
      lost: (error, owed, unreachable) => {
        const relay = connection.relay;
        connection.relay = undefined;
        if (unreachable && relay) this.gateway.ownership.unreachable(relay.owner);
        for (const frame of owed) this.frameFailed(frame, error);
        if (this.closed) return;
        // The instance there is gone with it: its next use makes it again, with its saved widget state.
        const { uuid } = connection.record;
        this.send({ type: 'instance_restarted', payload: { uuid, reason: 'owner_lost', message: 'The gateway that owned this live instance went away (or gave it up); its next use makes it again, with its saved widget state' } });
        // Placed again now, not on the next frame: a socket that only listens (events, widget
        // pushes) hears the new owner's pushes too.
        this.placeAgain(connection).catch((err: unknown) => this.log(`socket on ${uuid}: its instance's new owner is not found yet: ${(err as Error).message}`, 'warn'));
      },
    };
  }

  protected override receiveBinary(data: Buffer): void {
    const relay = this.connection?.relay;
    // An upload's bytes for the owner: the socket stops reading while the owner's socket is behind.
    if (relay) return this.transfers.pauseUntil(relay.forwardBinary(data));
    this.transfers.receive(data);
  }

  /** release: drops the connected interface's live instance; the socket stays connected. */
  private async release({ ctx, record }: Connection, frame: Frame<'release'>): Promise<void> {
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
      }, this.waiting(frame.id));
      // With `cached` as REST answers it, computed now: the record is kept, its runs change.
      const [payload] = await this.gateway.executions.withCached(ctx, [record]);
      if (this.closed) return;
      this.binaryBuffers = frame.buffers === 'binary';
      const connection: Connection = { ctx, record };
      await this.place(connection);
      if (this.closed) return void connection.local?.detach();
      this.connection = connection;
      this.send({ type: 'connected', id: frame.id, payload });
      connection.relay?.start();
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
  private runCall(connection: Connection, frame: Frame<'call'>): undefined {
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
        onOutput: (stream, text) => this.send({ type: 'output', id, payload: { stream, text } }),
        onWaiting: this.waiting(id),
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

  /** While the request `id` waits for a worker whose Slurm job is pending: a `waiting` frame whenever its state or reason changes. */
  private waiting(id: FrameId | undefined): WaitListener {
    return (payload) => this.send({ type: 'waiting', id, payload });
  }

  /** Cancels calls in flight and detaches; the instance lives on (docs/writing/lifetime.md). */
  protected override teardown(): void {
    if (this.closed) return;
    super.teardown();
    this.controller.abort();
    this.transfers.abort();
    const connection = this.connection;
    this.connection = undefined;
    connection?.local?.detach();
    connection?.relay?.close();
  }
}

function notConnected(what: string): PorticoError {
  return new PorticoError('not_connected', `Send connect before ${what}`);
}
