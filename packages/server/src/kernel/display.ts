/**
 * The display bundle of a worker frame (README.md in this folder, "Rich results"): a call's
 * `result`, a stream's `item` or an `emit()` `event`. The worker sends `display` (MIME type → text or JSON, null where the data is binary), `metadata`
 * when it has any, and the binary data as the frame's buffers, placed by `buffer_paths`
 * (`[["image/png"]]`). Here they become one `Display`, bounded by LIMITS.displayMaxBytes.
 */
import { LIMITS } from '../config/constants.js';
import { PorticoError } from '../errors.js';

/** A result as Jupyter's display_data carries it: data by MIME type (binary data as Buffers), metadata by MIME type. */
export interface Display {
  data: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}

/**
 * The Display of a frame with `display`, its binary data put back from `buffers`. Throws
 * `payload_too_large` over LIMITS.displayMaxBytes (binary data raw, text as UTF-8, JSON as its
 * text; the worker refuses such a bundle first, this is the gateway's own bound) and `internal`
 * when the frame does not fit together. `what` names the value in the message ("The result").
 */
export function displayOf(header: Record<string, unknown>, buffers: Buffer[], what = 'The result'): Display {
  const data = header.display;
  const paths = header.buffer_paths ?? [];
  if (typeof data !== 'object' || data === null || Array.isArray(data) || !Array.isArray(paths) || paths.length !== buffers.length) {
    throw new PorticoError('internal', 'The worker sent a display bundle that does not fit its buffers');
  }
  const placed: Record<string, unknown> = { ...(data as Record<string, unknown>) };
  let bytes = 0;
  for (const [i, path] of paths.entries()) {
    const mime = Array.isArray(path) && path.length === 1 ? path[0] : undefined;
    if (typeof mime !== 'string' || placed[mime] !== null) throw new PorticoError('internal', 'The worker sent a display bundle that does not fit its buffers');
    placed[mime] = buffers[i]!;
    bytes += buffers[i]!.length;
  }
  for (const value of Object.values(placed)) {
    if (typeof value === 'string') bytes += Buffer.byteLength(value, 'utf8');
    else if (!Buffer.isBuffer(value)) bytes += Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
  }
  if (bytes > LIMITS.displayMaxBytes) {
    throw new PorticoError('payload_too_large', `${what} has a display bundle of ${bytes} bytes; at most ${LIMITS.displayMaxBytes} are allowed (limits.displayMaxBytes)`);
  }
  const metadata = header.metadata;
  return typeof metadata === 'object' && metadata !== null && Object.keys(metadata).length > 0 ? { data: placed, metadata: metadata as Record<string, unknown> } : { data: placed };
}
