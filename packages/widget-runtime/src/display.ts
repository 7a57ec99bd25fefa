/**
 * Rich values (gateway docs/writing/rich-results.md): a method result, a stream item or an `emit()`
 * event that IPython could display arrives with its MIME bundle, as Jupyter's display_data carries
 * one. The runtime hands such a value to the page as a `Display` (the bundle, its metadata and the
 * JSON payload, if any), and `renderDisplay(el, display)` shows it in an element: the richest
 * representation that is safe, images as <img> (no script runs in an image, SVG included), HTML
 * in a sandboxed iframe without scripts, the rest as text. Image bytes that are not what their
 * MIME type says show an error notice (and the next representation), never a broken page.
 */
import { WidgetRuntimeError } from './errors.js';
import type { DisplayFields, JsonObject } from '@portico/protocol';

/** Image types shown as <img>, in the order they are preferred; the bytes must start with `magic`. */
const IMAGES: ReadonlyArray<{ mime: string; name: string; magic?: (bytes: Uint8Array) => boolean }> = [
  { mime: 'image/png', name: 'PNG', magic: (b) => startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  { mime: 'image/jpeg', name: 'JPEG', magic: (b) => startsWith(b, [0xff, 0xd8, 0xff]) },
  { mime: 'image/gif', name: 'GIF', magic: (b) => startsWith(b, [0x47, 0x49, 0x46, 0x38]) },
  { mime: 'image/webp', name: 'WebP', magic: (b) => startsWith(b, [0x52, 0x49, 0x46, 0x46]) && startsWith(b.subarray(8), [0x57, 0x45, 0x42, 0x50]) },
  { mime: 'image/svg+xml', name: 'SVG' },
];

/** Every MIME type renderDisplay shows, richest first. */
export const DISPLAY_ORDER = [...IMAGES.map((image) => image.mime), 'text/html', 'text/markdown', 'text/latex', 'application/json', 'text/plain'] as const;

/**
 * A value with its MIME bundle: `data` (MIME type → data: text types as strings, JSON types as
 * JSON values, binary types as a `Uint8Array` when they came as binary frames, which the runtime
 * asks for, else base64 text), `metadata` by MIME type, and `payload`, the value's JSON (null
 * when JSON cannot carry it, as for a figure).
 */
export class Display {
  readonly data: Readonly<Record<string, unknown>>;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly payload: unknown;

  constructor(data: Record<string, unknown>, metadata: Record<string, unknown> = {}, payload: unknown = null) {
    this.data = data;
    this.metadata = metadata;
    this.payload = payload;
  }

  /** The bytes of a binary MIME type (`image/png`), decoded from base64 if needed; undefined when absent or not binary. */
  bytes(mime: string): Uint8Array | undefined {
    const value = this.data[mime];
    if (value instanceof Uint8Array) return value;
    if (typeof value !== 'string') return undefined;
    try {
      return fromBase64(value);
    } catch {
      return undefined;
    }
  }

  /** The text/plain representation ('' when the bundle has none). */
  toString(): string {
    const text = this.data['text/plain'];
    return typeof text === 'string' ? text : '';
  }
}

/**
 * The value a result, stream item or event frame carries: its payload, or a `Display` when it has a
 * bundle. `views` are the binary frames that followed it. Throws `invalid_frame` when the display
 * fields are malformed or do not fit the buffers.
 */
export function valueOfFrame(frame: DisplayFields & { type: string; payload?: unknown }, views: readonly DataView[]): unknown {
  const { display, metadata, buffer_paths: paths } = frame;
  if (display === undefined) {
    if (views.length > 0) throw new WidgetRuntimeError('invalid_frame', `A ${frame.type} frame without display was followed by ${views.length} binary frames`);
    return frame.payload;
  }
  if (!isPlainObject(display)) throw new WidgetRuntimeError('invalid_frame', `A ${frame.type} frame's display is not an object`);
  if (metadata !== undefined && !isPlainObject(metadata)) throw new WidgetRuntimeError('invalid_frame', `A ${frame.type} frame's metadata is not an object`);
  const data: Record<string, unknown> = { ...display };
  const placed = paths ?? [];
  if (!Array.isArray(placed) || placed.length !== views.length) {
    throw new WidgetRuntimeError('invalid_frame', `A ${frame.type} frame's buffer_paths must name ${views.length} MIME types, one per binary frame`);
  }
  placed.forEach((path, i) => {
    const mime = Array.isArray(path) && path.length === 1 ? path[0] : undefined;
    if (typeof mime !== 'string' || !Object.hasOwn(data, mime)) {
      throw new WidgetRuntimeError('invalid_frame', `A ${frame.type} frame's buffer path ${JSON.stringify(path)} names no MIME type of its display`);
    }
    const view = views[i]!;
    data[mime] = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  });
  return new Display(data, metadata ?? {}, frame.payload ?? null);
}

/** What can be rendered: a Display, a `{data, metadata}` bundle, or a REST answer `{display, metadata, payload}`. */
export type Displayable = Display | { data: Record<string, unknown>; metadata?: Record<string, unknown> } | { display: Record<string, unknown>; metadata?: Record<string, unknown> };

/** The representation renderDisplay picks: its MIME type and how it is shown. */
export type Representation =
  | { mime: string; kind: 'image'; bytes?: Uint8Array; svg?: string }
  | { mime: string; kind: 'html'; html: string }
  | { mime: string; kind: 'text'; text: string };

/**
 * The representations to show, in order: the first usable one of DISPLAY_ORDER, preceded by an
 * error for each richer image whose data is not what its MIME type says (`errors`). Pure: it
 * runs without a DOM.
 */
export function chooseRepresentation(bundle: Displayable): { shown: Representation | undefined; errors: string[] } {
  const { data } = normalize(bundle);
  const errors: string[] = [];
  for (const mime of DISPLAY_ORDER) {
    if (!Object.hasOwn(data, mime)) continue;
    const value = data[mime];
    const image = IMAGES.find((candidate) => candidate.mime === mime);
    if (image) {
      if (mime === 'image/svg+xml') {
        const text = value instanceof Uint8Array ? new TextDecoder().decode(value) : value;
        if (typeof text === 'string' && /<svg[\s>]/i.test(text)) return { shown: { mime, kind: 'image', svg: text }, errors };
        errors.push(`The ${mime} data is not an SVG image.`);
        continue;
      }
      let bytes: Uint8Array | undefined;
      try {
        bytes = value instanceof Uint8Array ? value : typeof value === 'string' ? fromBase64(value) : undefined;
      } catch {
        bytes = undefined;
      }
      if (bytes && image.magic?.(bytes)) return { shown: { mime, kind: 'image', bytes }, errors };
      errors.push(`The ${mime} data is not a ${image.name} image.`);
      continue;
    }
    if (mime === 'text/html') {
      if (typeof value === 'string') return { shown: { mime, kind: 'html', html: value }, errors };
      continue;
    }
    if (mime === 'application/json') return { shown: { mime, kind: 'text', text: JSON.stringify(value, null, 2) ?? String(value) }, errors };
    if (typeof value === 'string') return { shown: { mime, kind: 'text', text: value }, errors };
  }
  return { shown: undefined, errors };
}

/**
 * Shows a value's bundle inside `el` (replacing its children): a `div.portico-display` with
 * `data-mime` set to the MIME type shown, holding an <img> (PNG, JPEG, GIF, WebP, SVG), a sandboxed
 * <iframe> without scripts (HTML, sized to its content) or a <pre> (Markdown and LaTeX as their
 * source, JSON pretty-printed, plain text). Image data that is not what its MIME type says, or
 * that the browser cannot decode, shows `div.portico-display-error[role=alert]` naming it, and
 * the next representation. Resolves with the MIME type shown once images have loaded (or failed)
 * and the HTML is sized; '' when the bundle has nothing to show.
 */
export async function renderDisplay(el: HTMLElement, value: Displayable): Promise<string> {
  const { data, metadata } = normalize(value);
  const box = document.createElement('div');
  box.className = 'portico-display';
  el.replaceChildren(box);
  let remaining: Record<string, unknown> = data;
  for (;;) {
    const { shown, errors } = chooseRepresentation({ data: remaining });
    for (const message of errors) box.append(notice(message));
    if (!shown) {
      box.dataset.mime = '';
      return '';
    }
    box.dataset.mime = shown.mime;
    const meta = isPlainObject(metadata[shown.mime]) ? (metadata[shown.mime] as JsonObject) : {};
    if (shown.kind === 'text') {
      box.append(textBlock(shown.text));
      return shown.mime;
    }
    if (shown.kind === 'html') {
      await showHtml(box, shown.html);
      return shown.mime;
    }
    if (await showImage(box, shown, meta, typeof data['text/plain'] === 'string' ? (data['text/plain'] as string) : '')) return shown.mime;
    // The browser could not decode it: say so, and try what comes after this type.
    box.append(notice(`The ${shown.mime} data could not be shown as an image.`));
    const rest = DISPLAY_ORDER.slice(DISPLAY_ORDER.indexOf(shown.mime as (typeof DISPLAY_ORDER)[number]) + 1);
    remaining = Object.fromEntries(Object.entries(data).filter(([mime]) => rest.includes(mime as (typeof DISPLAY_ORDER)[number])));
  }
}

function normalize(value: Displayable): { data: Record<string, unknown>; metadata: Record<string, unknown> } {
  const data = value instanceof Display || !('display' in value) ? value.data : value.display;
  const metadata = value.metadata;
  return { data: isPlainObject(data) ? data : {}, metadata: isPlainObject(metadata) ? metadata : {} };
}

function notice(message: string): HTMLElement {
  const div = document.createElement('div');
  div.className = 'portico-display-error';
  div.setAttribute('role', 'alert');
  div.textContent = message;
  return div;
}

function textBlock(text: string): HTMLElement {
  const pre = document.createElement('pre');
  pre.className = 'portico-display-text';
  pre.textContent = text;
  return pre;
}

/** An <img> of the data; resolves false (and leaves nothing) when the browser cannot decode it. */
function showImage(box: HTMLElement, shown: Extract<Representation, { kind: 'image' }>, meta: JsonObject, alt: string): Promise<boolean> {
  const img = document.createElement('img');
  img.className = 'portico-display-image';
  img.alt = alt;
  img.style.maxWidth = '100%';
  for (const side of ['width', 'height'] as const) {
    if (typeof meta[side] === 'number' && meta[side] > 0) img.setAttribute(side, String(meta[side]));
  }
  const url = shown.svg !== undefined ? URL.createObjectURL(new Blob([shown.svg], { type: shown.mime })) : URL.createObjectURL(new Blob([shown.bytes! as BlobPart], { type: shown.mime }));
  return new Promise((resolve) => {
    img.onload = () => {
      URL.revokeObjectURL(url);
      resolve(true);
    };
    img.onerror = () => {
      URL.revokeObjectURL(url);
      img.remove();
      resolve(false);
    };
    img.src = url;
    box.append(img);
  });
}

/** Scripts never run: no `allow-scripts`, and a CSP forbidding them besides. */
const HTML_HEAD =
  '<!doctype html><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="script-src \'none\'; object-src \'none\'">' +
  '<style>body{margin:0;font:13px/1.4 system-ui,sans-serif;color:#222}table{border-collapse:collapse}th,td{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}img{max-width:100%}</style>';

/**
 * HTML in an iframe sandboxed without `allow-scripts` (so no script, inline handler or
 * javascript: URL runs) but with `allow-same-origin`, so that the page can read its height.
 */
function showHtml(box: HTMLElement, html: string): Promise<void> {
  const frame = document.createElement('iframe');
  frame.className = 'portico-display-html';
  frame.setAttribute('sandbox', 'allow-same-origin');
  frame.setAttribute('title', 'HTML output');
  frame.style.cssText = 'width:100%;border:0;display:block';
  return new Promise((resolve) => {
    frame.onload = () => {
      const doc = frame.contentDocument;
      // The <html> element's own box: scrollHeight would be at least the iframe's default 150 px.
      if (doc) frame.style.height = `${Math.ceil(doc.documentElement.getBoundingClientRect().height)}px`;
      resolve();
    };
    frame.srcdoc = HTML_HEAD + html;
    box.append(frame);
    // A detached element never loads its iframe.
    if (!frame.isConnected) resolve();
  });
}

function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  return bytes.length >= prefix.length && prefix.every((byte, i) => bytes[i] === byte);
}

function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}
