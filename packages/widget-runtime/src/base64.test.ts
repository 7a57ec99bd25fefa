import { describe, expect, it } from 'vitest';
import { decodeBuffer, decodeBuffers } from './base64.js';

const encode = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

describe('base64 buffers', () => {
  it('decodes every byte value', () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    const view = decodeBuffer(encode(bytes));
    expect(new Uint8Array(view.buffer, view.byteOffset, view.byteLength)).toEqual(bytes);
  });

  it('a missing buffer list is no buffers', () => {
    expect(decodeBuffers(undefined)).toEqual([]);
  });

  it('decodes to DataViews', () => {
    const [view] = decodeBuffers(['AQID']);
    expect(view).toBeInstanceOf(DataView);
    expect([view!.getUint8(0), view!.getUint8(1), view!.getUint8(2)]).toEqual([1, 2, 3]);
  });
});
