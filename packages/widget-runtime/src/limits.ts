/**
 * Every bound and timing of the runtime, in one place, with its default. Sessions accept
 * overrides (tests shorten them); pages normally never need to.
 */
export interface Limits {
  /** First reconnect delay; doubles each failed attempt. */
  reconnectBaseMs: number;
  /** Cap of the reconnect delay. */
  reconnectMaxMs: number;
  /** Fraction of the delay that is randomized (0 = none, 1 = anywhere in [0, delay]). */
  reconnectJitter: number;
  /** Time from opening the socket to `widget_state`; past it the attempt counts as failed. */
  handshakeTimeoutMs: number;
  /**
   * Tries of the first connect (a page opened before its gateway listens, or while it starts): a
   * socket that cannot open, closes or times out before the first handshake is tried again after
   * the reconnect backoff (0.5 s, 1 s, 2 s, 4 s, 8 s by default, jittered) until this many tries
   * failed; then `open()` rejects. A gateway that answers with a refusal is not tried again.
   */
  firstConnectAttempts: number;
  /** A `ping` goes out this often while open; a ping still unanswered at the next tick drops the socket. */
  pingIntervalMs: number;
  /** `model.send()` calls kept while offline; one more throws `queue_full`. */
  offlineQueueMessages: number;
  /** How long `widget_manager.get_model()` / `host.getWidget()` wait for a model to appear. */
  getModelTimeoutMs: number;
  /** Default timeout of `experimental.invoke()` (anywidget's own default). */
  invokeTimeoutMs: number;
  /** How long a mounted widget shows the notice that its instance restarted (0: not shown). */
  restartNoticeMs: number;
  /** Size of each binary frame of an upload (the gateway reads in 1 MiB blocks too). */
  uploadChunkBytes: number;
  /** An upload hands the socket another frame only while its `bufferedAmount` is below this. */
  uploadHighWaterBytes: number;
  /** How often an upload looks at `bufferedAmount` while waiting for it to drain (and for progress). */
  uploadPollMs: number;
}

export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  reconnectBaseMs: 500,
  reconnectMaxMs: 30_000,
  reconnectJitter: 0.5,
  handshakeTimeoutMs: 15_000,
  firstConnectAttempts: 6,
  pingIntervalMs: 25_000,
  offlineQueueMessages: 256,
  getModelTimeoutMs: 10_000,
  invokeTimeoutMs: 3_000,
  restartNoticeMs: 8_000,
  uploadChunkBytes: 1024 * 1024,
  uploadHighWaterBytes: 4 * 1024 * 1024,
  uploadPollMs: 8,
});

export function withDefaults(overrides?: Partial<Limits>): Limits {
  return { ...DEFAULT_LIMITS, ...overrides };
}
