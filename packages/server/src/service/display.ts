/**
 * Rich results as clients receive them (docs/writing/rich-results.md), transport-free: `display` is the
 * MIME bundle (MIME type → data, as Jupyter's display_data carries it) beside `payload`, and
 * `metadata` by MIME type when there is any. Binary data (image/png, image/jpeg, …) is base64
 * text, as in Jupyter's messages and notebooks, unless the client takes binary buffers: then it
 * is null in `display` and `buffer_paths` (`[["image/png"]]`) places each buffer in it.
 */
import type { Display } from '../kernel/worker.js';

export type { Display };

/** What a result adds beside `payload`; `buffers` go apart when `binary`, else none. */
export interface DisplayFields {
  fields: { display: Record<string, unknown>; metadata?: Record<string, unknown>; buffer_paths?: string[][] };
  buffers: Buffer[];
}

/** The fields of `display` for a client: binary data as base64 text, or (`binary`) as buffers placed by buffer_paths. */
export function displayFields(display: Display, binary = false): DisplayFields {
  const data: Record<string, unknown> = {};
  const paths: string[][] = [];
  const buffers: Buffer[] = [];
  for (const [mime, value] of Object.entries(display.data)) {
    if (!Buffer.isBuffer(value)) data[mime] = value;
    else if (!binary) data[mime] = value.toString('base64');
    else {
      data[mime] = null;
      paths.push([mime]);
      buffers.push(value);
    }
  }
  const fields: DisplayFields['fields'] = { display: data };
  if (display.metadata) fields.metadata = display.metadata;
  if (buffers.length > 0) fields.buffer_paths = paths;
  return { fields, buffers };
}
