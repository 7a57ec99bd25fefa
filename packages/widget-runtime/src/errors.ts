/**
 * The one error type of the runtime. Every failure a page can see (a rejected mount(), an
 * `error` event, the message drawn in the element) is a WidgetRuntimeError with a stable code:
 * the gateway's own codes (`unauthorized`, `not_found`, `read_only`, …) pass through unchanged,
 * and the runtime adds the few below for what only a browser can notice.
 */

/** Codes the runtime itself produces; anything else came from the gateway. */
export const RUNTIME_ERROR_CODES = {
  connection_failed: 'The WebSocket could not be opened, or closed before the interface was connected.',
  handshake_timeout: 'connect / widget_get got no answer in time.',
  load_failed: 'The widget module or stylesheet could not be fetched or imported.',
  invalid_module: 'The module does not export an anywidget widget (a default object or factory).',
  render_failed: 'initialize() or render() threw.',
  queue_full: 'Too many messages were sent while offline.',
  timeout: 'A request to another model or an invoke() got no answer in time.',
  closed: 'The widget was unmounted, or the connection closed.',
  connection_lost: 'The socket closed while a call or transfer waited for its answer (the gateway cancels it).',
  aborted: 'The AbortSignal given to upload() or read() fired.',
  stream_unsupported: 'The method is a generator (it answers with stream frames) and call() was given no onItem to take its items.',
  invalid_frame: 'The gateway sent a frame the runtime cannot use.',
  origin_refused: "The gateway does not accept this page's origin; the message names the option that allows it.",
  unreachable: 'The gateway did not answer at all (not running, or a wrong URL).',
} as const;

export type RuntimeErrorCode = keyof typeof RUNTIME_ERROR_CODES;

export class WidgetRuntimeError extends Error {
  override readonly name = 'WidgetRuntimeError';
  /** A runtime code (RUNTIME_ERROR_CODES) or the gateway's error code. */
  readonly code: RuntimeErrorCode | (string & {});

  constructor(code: RuntimeErrorCode | (string & {}), message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** Wraps anything thrown into a WidgetRuntimeError, keeping an existing one as is. */
export function toRuntimeError(error: unknown, code: RuntimeErrorCode): WidgetRuntimeError {
  if (error instanceof WidgetRuntimeError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new WidgetRuntimeError(code, message, { cause: error });
}

/** The error an aborted call or transfer rejects with (the signal's reason is its cause). */
export function abortError(signal: AbortSignal): WidgetRuntimeError {
  const reason = signal.reason instanceof Error && signal.reason.name !== 'AbortError' ? `: ${signal.reason.message}` : '';
  return new WidgetRuntimeError('aborted', `Aborted${reason}`, { cause: signal.reason });
}
