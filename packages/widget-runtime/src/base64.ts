/**
 * Binary buffers travel inside JSON frames as base64 strings: `model.send(…, buffers)` encodes
 * ArrayBuffer / typed arrays / DataViews, and `msg:custom` hands widgets DataViews, as in Jupyter.
 */

/** btoa() takes a "binary string"; building it in slices keeps the argument list of fromCharCode bounded. */
const SLICE = 0x8000;

export function encodeBuffer(buffer: ArrayBuffer | ArrayBufferView): string {
  const bytes = ArrayBuffer.isView(buffer)
    ? new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
    : new Uint8Array(buffer);
  let binary = '';
  for (let i = 0; i < bytes.length; i += SLICE) {
    binary += String.fromCharCode(...bytes.subarray(i, i + SLICE));
  }
  return btoa(binary);
}

export function decodeBuffer(base64: string): DataView {
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return new DataView(bytes.buffer);
}

export function encodeBuffers(buffers: ReadonlyArray<ArrayBuffer | ArrayBufferView> | undefined): string[] | undefined {
  return buffers && buffers.length > 0 ? buffers.map(encodeBuffer) : undefined;
}

export function decodeBuffers(buffers: readonly string[] | undefined): DataView[] {
  return (buffers ?? []).map(decodeBuffer);
}
