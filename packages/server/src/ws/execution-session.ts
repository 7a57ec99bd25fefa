/**
 * One session per socket on /v1/executions/ws: attaches to one run by uuid, follows it (output
 * appended to output.log, status changes, events the run emitted), and answers calls to the
 * run's methods (status, output, cancel). Following stops by itself once the run has ended and
 * everything it wrote was sent; closing the socket stops it at once.
 */
import type { WebSocket } from 'ws';
import { LIMITS } from '../config/constants.js';
import { ExecutionClientFrames, type ExecutionClientFrame } from '../contract/frames.js';
import { PorticoError } from '../errors.js';
import type { RequestContext } from '../service/context.js';
import type { BindInput, Gateway } from '../service/gateway.js';
import { SocketSession } from './socket-session.js';

/** How often a followed run is looked at. */
const FOLLOW_MS = 200;

export class ExecutionSession extends SocketSession<ExecutionClientFrame> {
  private attached: { ctx: RequestContext; uuid: string } | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(socket: WebSocket, gateway: Gateway, binding: BindInput, log: (line: string) => void) {
    super(socket, gateway, binding, log, ExecutionClientFrames);
  }

  protected async handle(frame: ExecutionClientFrame): Promise<void> {
    const { executions } = this.gateway;
    switch (frame.type) {
      case 'connect': {
        if (this.attached) throw new PorticoError('already_connected', 'This socket is already attached to an execution');
        const ctx = await this.gateway.bind({ ...this.binding, project: frame.project || this.binding.project });
        const info = await executions.info(ctx, frame.target);
        if (this.closed) return;
        this.attached = { ctx, uuid: frame.target };
        this.send({ type: 'connected', id: frame.id, payload: info });
        const { size } = await executions.output(ctx, frame.target, { tail: 0 });
        this.follow(frame.offset ?? Math.max(0, size - LIMITS.outputWindowDefault), 0, info.status);
        return;
      }
      case 'call': {
        if (!this.attached) throw new PorticoError('not_connected', 'Send connect before call');
        const { ctx, uuid } = this.attached;
        const kwargs = (frame.kwargs ?? {}) as { offset?: number; tail?: number; limit?: number };
        let payload: unknown = null;
        if (frame.method === 'status') payload = await executions.info(ctx, uuid);
        else if (frame.method === 'output') payload = await executions.output(ctx, uuid, kwargs);
        else await executions.cancel(ctx, uuid);
        return this.send({ type: 'result', id: frame.id, payload });
      }
    }
  }

  /** One look at the run every FOLLOW_MS: new output, new events, a changed status. */
  private follow(offset: number, eventOffset: number, lastStatus: string): void {
    const tick = async () => {
      if (this.closed || !this.attached) return;
      const { ctx, uuid } = this.attached;
      const { executions } = this.gateway;
      // Wait for a slow client instead of queueing without bound.
      if (this.socket.bufferedAmount < LIMITS.socketHighWaterBytes) {
        const info = await executions.info(ctx, uuid);
        const window = await executions.output(ctx, uuid, { offset, limit: LIMITS.outputWindowMax });
        if (window.size > window.offset) {
          this.send({ type: 'output', payload: { output: window.output, offset: window.offset, size: window.size } });
          offset = window.offset + Math.min(window.limit, window.size - window.offset); // bytes, not decoded text
        }
        const { events, next } = await executions.events(ctx, uuid, eventOffset);
        eventOffset = next;
        for (const event of events) this.send({ type: 'event', payload: event });
        if (info.status !== lastStatus) {
          lastStatus = info.status;
          this.send({ type: 'status', payload: info });
        }
        const ended = ['finished', 'failed', 'interrupted'].includes(info.status);
        if (ended && offset >= window.size && events.length === 0) return; // everything was sent
      }
      if (!this.closed) this.timer = setTimeout(() => void tick().catch((err) => this.log(`follow: ${err}`)), FOLLOW_MS);
    };
    void tick().catch((err) => this.log(`follow: ${err}`));
  }

  protected override teardown(): void {
    super.teardown();
    clearTimeout(this.timer);
  }
}
