/**
 * Binary values in widget state, as anywidget hosts carry them: a value may be an ArrayBuffer or
 * any ArrayBufferView (DataView, typed array) anywhere inside objects and arrays. On the wire the
 * binary values travel apart, as buffers, and `buffer_paths` says where each one goes back
 * (`[["image"], ["layers", 2, "data"]]`); widgets receive them as DataViews, as in Jupyter.
 */
import type { BufferPath, JsonObject } from '@portico/protocol';

export type Binary = ArrayBuffer | ArrayBufferView;

export function isBinary(value: unknown): value is Binary {
  return value instanceof ArrayBuffer || ArrayBuffer.isView(value);
}

/** The bytes of a binary value, as a view on them (no copy). */
export function bytesOf(value: Binary): Uint8Array {
  return value instanceof ArrayBuffer ? new Uint8Array(value) : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
}

/**
 * `value` with every binary value replaced by null (objects and arrays are copied only where one
 * was found), the paths of those values and their bytes, in the same order.
 */
export function removeBuffers(value: JsonObject): { value: JsonObject; paths: BufferPath[]; buffers: Uint8Array[] } {
  const paths: BufferPath[] = [];
  const buffers: Uint8Array[] = [];
  const walk = (node: unknown, path: BufferPath): unknown => {
    if (isBinary(node)) {
      paths.push(path);
      buffers.push(bytesOf(node));
      return null;
    }
    if (Array.isArray(node)) {
      const items = node.map((item, i) => walk(item, [...path, i]));
      return items.some((item, i) => item !== node[i]) ? items : node;
    }
    if (node !== null && typeof node === 'object' && Object.getPrototypeOf(node) === Object.prototype) {
      const entries = Object.entries(node).map(([key, item]) => [key, walk(item, [...path, key])] as const);
      return entries.some(([key, item]) => item !== (node as JsonObject)[key]) ? Object.fromEntries(entries) : node;
    }
    return node;
  };
  return { value: walk(value, []) as JsonObject, paths, buffers };
}

/**
 * Puts `buffers[i]` at `paths[i]` inside `value` (changed in place) and returns it. Throws when
 * the paths do not fit: a frame like that is malformed. Only own properties are followed (the
 * sender put null at each path), so a path through `__proto__` can never reach a prototype.
 */
export function putBuffers(value: JsonObject, paths: unknown, buffers: DataView[]): JsonObject {
  if (buffers.length === 0 && paths === undefined) return value;
  if (!Array.isArray(paths) || paths.length !== buffers.length) throw new Error(`buffer_paths must list ${buffers.length} paths, one per buffer`);
  paths.forEach((path: unknown, i) => {
    if (!Array.isArray(path) || path.length === 0) throw new Error(`buffer path ${JSON.stringify(path)} is not a list of keys`);
    let node: any = value;
    path.forEach((step, depth) => {
      if (node === null || typeof node !== 'object' || !Object.hasOwn(node, step)) throw new Error(`buffer path ${JSON.stringify(path)} does not lead into the value`);
      if (depth < path.length - 1) node = node[step];
    });
    node[path.at(-1)] = buffers[i];
  });
  return value;
}
