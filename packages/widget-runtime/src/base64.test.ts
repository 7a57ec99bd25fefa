import { describe, expect, it } from 'vitest';
import { decodeBuffer, decodeBuffers, encodeBuffer, encodeBuffers } from './base64.js';

describe('base64 buffers', () => {
  it('round-trips every byte value', () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    const view = decodeBuffer(encodeBuffer(bytes));
    expect(new Uint8Array(view.buffer, view.byteOffset, view.byteLength)).toEqual(bytes);
  });

  it('encodes only the viewed window of a typed array or DataView', () => {
    const backing = new Uint8Array([0, 1, 2, 3, 4]).buffer;
    expect(encodeBuffer(new Uint8Array(backing, 1, 2))).toBe(btoa('\x01\x02'));
    expect(encodeBuffer(new DataView(backing, 3, 2))).toBe(btoa('\x03\x04'));
    expect(encodeBuffer(new Float32Array([1]))).toBe(btoa(String.fromCharCode(...new Uint8Array(new Float32Array([1]).buffer))));
  });

  it('handles buffers larger than one encoding slice', () => {
    const bytes = Uint8Array.from({ length: 100_000 }, (_, i) => (i * 7) % 256);
    const view = decodeBuffer(encodeBuffer(bytes));
    expect(view.byteLength).toBe(100_000);
    expect(view.getUint8(99_999)).toBe((99_999 * 7) % 256);
  });

  it('empty or missing buffer lists are undefined on the way out and [] on the way in', () => {
    expect(encodeBuffers(undefined)).toBeUndefined();
    expect(encodeBuffers([])).toBeUndefined();
    expect(decodeBuffers(undefined)).toEqual([]);
  });

  it('decodes to DataViews', () => {
    const [view] = decodeBuffers(['AQID']);
    expect(view).toBeInstanceOf(DataView);
    expect([view!.getUint8(0), view!.getUint8(1), view!.getUint8(2)]).toEqual([1, 2, 3]);
  });
});
