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
import { SocketSession } from './socket-session.js';

interface Connection {
  ctx: RequestContext;
  record: InterfaceInfo;
  detach: () => boolean;
}

export class Session extends SocketSession<ClientFrame> {
  private connection: Connection | undefined;
  private connecting: Promise<void> | undefined;
  /** Aborted when the socket goes away: cancels every call it started. */
  private readonly controller = new AbortController();

  constructor(socket: WebSocket, gateway: Gateway, binding: BindInput, log: (line: string) => void) {
    super(socket, gateway, binding, log, ClientFrames);
  }

  protected async handle(frame: ClientFrame): Promise<void> {
    if (frame.type === 'connect') return this.connect(frame);
    if (frame.type === 'call') return this.call(frame);
  }

  private async connect(frame: Extract<ClientFrame, { type: 'connect' }>): Promise<void> {
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
      const detach = ctx.project.attach(record.uuid, (push) => this.send({ type: push.type, payload: push.payload }));
      this.connection = { ctx, record, detach };
      this.send({ type: 'connected', id: frame.id, payload: record });
    })();
    this.connecting = attempt;
    try {
      await attempt;
    } finally {
      this.connecting = undefined;
    }
  }

  private async call(frame: Extract<ClientFrame, { type: 'call' }>): Promise<void> {
    // A call pipelined right behind its connect waits for it.
    if (this.connecting) await this.connecting.catch(() => undefined);
    const connection = this.connection;
    if (!connection) throw new PorticoError('not_connected', 'Send connect before call');
    const { id } = frame;
    await this.gateway.interfaces.call(
      connection.ctx,
      connection.record,
      { method: frame.method, args: frame.args ?? [], kwargs: frame.kwargs ?? {} },
      {
        signal: this.controller.signal,
        onItem: (payload) => this.sendPaced({ type: 'stream', id, payload, final: false }),
        onSettled: (outcome: CallOutcome) => {
          if (!outcome.ok) this.sendError(id, outcome.error);
          else if (outcome.streamed) this.send({ type: 'stream', id, payload: null, final: true });
          else this.send({ type: 'result', id, payload: outcome.payload });
        },
      },
    );
  }

  /** Sends, and resolves once the socket's queue is below its high-water mark again. */
  private sendPaced(frame: object): Promise<void> | undefined {
    if (this.socket.readyState !== this.socket.OPEN) return Promise.reject(new Error('socket closed'));
    if (this.socket.bufferedAmount < LIMITS.socketHighWaterBytes) {
      this.socket.send(JSON.stringify(frame));
      return undefined;
    }
    return new Promise((resolve, reject) => this.socket.send(JSON.stringify(frame), (err) => (err ? reject(err) : resolve())));
  }

  /** Cancels calls in flight, detaches, and evicts the instance when no other client is attached. */
  protected override teardown(): void {
    if (this.closed) return;
    super.teardown();
    this.controller.abort();
    const connection = this.connection;
    this.connection = undefined;
    if (connection && connection.detach()) this.gateway.interfaces.release(connection.ctx, connection.record.uuid);
  }
}
