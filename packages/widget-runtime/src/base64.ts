/**
 * Base64 buffers inside JSON frames: what gateways send a socket that did not ask for binary
 * frames (the runtime always asks; older gateways ignore it). Widgets get DataViews, as in Jupyter.
 */

export function decodeBuffer(base64: string): DataView {
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return new DataView(bytes.buffer);
}

export function decodeBuffers(buffers: readonly string[] | undefined): DataView[] {
  return (buffers ?? []).map(decodeBuffer);
}
