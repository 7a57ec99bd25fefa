/**
 * Frames sent on a socket in one tick go out in one write: the worker answers pipelined calls in
 * batches, and a write (a syscall that wakes the peer) per frame was the largest cost of a
 * pipelined call in the gateway's profile, both towards clients and towards an instance's owner
 * (ws/owner-relay.ts). Uncorked before the event loop waits again, so nothing is delayed beyond
 * the current tick.
 */
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';

export class TickCork {
  private readonly tcp: Socket | undefined;
  private corked = false;

  constructor(socket: WebSocket) {
    // ws keeps its TCP socket in `_socket` (not typed, but what ws itself and its users rely on).
    this.tcp = (socket as unknown as { _socket?: Socket })._socket;
  }

  /** Corks the socket until the end of this tick; what is sent until then goes out in one write. */
  now(): void {
    if (this.corked || !this.tcp) return;
    this.corked = true;
    this.tcp.cork();
    process.nextTick(() => {
      this.corked = false;
      this.tcp!.uncork();
    });
  }
}
