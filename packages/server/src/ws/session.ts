/**
 * One session per socket on /v1/interfaces/ws: validates frames, connects to one interface,
 * runs calls concurrently (a slow call never blocks ping or another call), forwards the
 * interface's pushes, and cancels everything it started when the socket goes away.
 * Every failure answers an `error` frame and the socket stays usable.
 */
import type { WebSocket } from 'ws';
import { LIMITS } from '../config/constants.js';
import { ClientFrames, type ClientFrame } from '../contract/frames.js';
import { PorticoError, toPorticoError } from '../errors.js';
import type { RequestContext } from '../service/context.js';
import type { BindInput, Gateway } from '../service/gateway.js';
import type { CallOutcome, InterfaceInfo } from '../service/interfaces.js';
import { decodeFrame, type FrameId } from './decode.js';

interface Connection {
  ctx: RequestContext;
  record: InterfaceInfo;
  detach: () => boolean;
}

export class Session {
  private connection: Connection | undefined;
  private connecting: Promise<void> | undefined;
  /** Aborted when the socket goes away: cancels every call it started. */
  private readonly controller = new AbortController();
  private closed = false;

  constructor(
    private readonly socket: WebSocket,
    private readonly gateway: Gateway,
    /** Project, interpreter and user from the upgrade request (a connect frame may override the project). */
    private readonly binding: BindInput,
    private readonly log: (line: string) => void,
  ) {
    socket.on('message', (data, isBinary) => this.receive(data as Buffer, isBinary));
    socket.on('close', () => this.teardown());
    socket.on('error', (err) => this.log(`websocket error: ${err.message}`));
  }

  private receive(data: Buffer, isBinary: boolean): void {
    const decoded = decodeFrame<ClientFrame>(data, isBinary, ClientFrames);
    if (!decoded.ok) {
      this.sendError(decoded.id, decoded.error);
      return;
    }
    this.handle(decoded.frame).catch((err) => {
      if (!(err instanceof PorticoError)) this.log(`frame '${decoded.frame.type}' failed: ${(err as Error)?.stack ?? err}`);
      this.sendError(decoded.id, toPorticoError(err));
    });
  }

  private async handle(frame: ClientFrame): Promise<void> {
    switch (frame.type) {
      case 'ping':
        return this.send({ type: 'pong', id: frame.id });
      case 'close':
        this.teardown();
        this.socket.close(1000, 'closed by client');
        return;
      case 'connect':
        return this.connect(frame);
      case 'call':
        return this.call(frame);
    }
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

  private send(frame: object): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    this.socket.send(JSON.stringify(frame));
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

  private sendError(id: FrameId, error: PorticoError): void {
    const frame: Record<string, unknown> = { type: 'error', payload: error.toDetail() };
    if (id !== undefined) frame.id = id;
    this.send(frame);
  }

  /** Cancels calls in flight, detaches, and evicts the instance when no other client is attached. */
  private teardown(): void {
    if (this.closed) return;
    this.closed = true;
    this.controller.abort();
    const connection = this.connection;
    this.connection = undefined;
    if (connection && connection.detach()) this.gateway.interfaces.release(connection.ctx, connection.record.uuid);
  }
}
