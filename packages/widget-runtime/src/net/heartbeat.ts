/**
 * A session's liveness check: a ping every interval; a socket that answered nothing since the
 * last unanswered ping is dead. Bytes still moving count as an answer: a ping can wait behind
 * megabytes of a transfer on a slow link, and bytes arriving, or leaving the send buffer, prove
 * the socket alive as well as a pong does.
 */
import type { WebSocketLike } from './socket.js';

export interface HeartbeatHooks {
  /** The socket being watched (none: the tick does nothing). */
  socket(): WebSocketLike | undefined;
  /** Sends a ping on it. */
  ping(): void;
  /** It answered nothing for a whole interval after a ping. */
  dead(socket: WebSocketLike): void;
}

export class Heartbeat {
  readonly #intervalMs: number;
  readonly #hooks: HeartbeatHooks;
  #timer: ReturnType<typeof setInterval> | undefined;
  #awaitingPong = false;
  /** Something arrived, or upload bytes left, since the last tick. */
  #activity = false;
  /** Binary bytes handed to the current socket, and the most of them seen gone. */
  #handed = 0;
  #gone = 0;

  constructor(intervalMs: number, hooks: HeartbeatHooks) {
    this.#intervalMs = intervalMs;
    this.#hooks = hooks;
  }

  /** A new socket: no binary bytes handed to it yet. */
  newSocket(): void {
    this.#handed = this.#gone = 0;
  }

  /** Binary bytes were handed to the socket. */
  handed(bytes: number): void {
    this.#handed += bytes;
  }

  /** A frame arrived. */
  activity(): void {
    this.#activity = true;
  }

  pong(): void {
    this.#awaitingPong = false;
  }

  start(): void {
    clearInterval(this.#timer);
    this.#awaitingPong = false;
    this.#activity = false;
    this.#timer = setInterval(() => this.#tick(), this.#intervalMs);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #tick(): void {
    const socket = this.#hooks.socket();
    if (!socket) return;
    const gone = this.#handed - (socket.bufferedAmount ?? 0);
    if (gone > this.#gone) {
      this.#gone = gone;
      this.#activity = true;
    }
    if (this.#awaitingPong && !this.#activity) {
      this.#hooks.dead(socket);
      return;
    }
    this.#activity = false;
    if (this.#awaitingPong) return;
    this.#awaitingPong = true;
    this.#hooks.ping();
  }
}
