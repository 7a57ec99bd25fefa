import { describe, expect, it } from 'vitest';
import { putBuffers, removeBuffers } from './buffers.js';

const view = (...bytes: number[]) => new DataView(new Uint8Array(bytes).buffer);

describe('binary values in widget state', () => {
  it('removeBuffers takes binary values out (nested too) with their paths; putBuffers puts them back as DataViews', () => {
    const plain = { n: 1, tags: ['a'] };
    const state = { image: new Uint8Array([1, 2]), layers: [{ name: 'a', data: new Uint8Array([3]).buffer }], plain };
    const { value, paths, buffers } = removeBuffers(state);
    expect(value).toEqual({ image: null, layers: [{ name: 'a', data: null }], plain });
    expect(value.plain).toBe(plain); // untouched parts are not copied
    expect(paths).toEqual([['image'], ['layers', 0, 'data']]);
    expect(buffers.map((b) => [...b])).toEqual([[1, 2], [3]]);
    const back = putBuffers(JSON.parse(JSON.stringify(value)), paths, buffers.map((b) => new DataView(b.buffer, b.byteOffset, b.byteLength)));
    expect((back.image as DataView).getUint8(1)).toBe(2);
    expect(((back.layers as any)[0].data as DataView).getUint8(0)).toBe(3);
  });

  it('putBuffers refuses paths that do not fit, and never follows a prototype', () => {
    expect(() => putBuffers({ a: null }, [['a'], ['b']], [view(1)])).toThrow(/one per buffer/);
    expect(() => putBuffers({ a: null }, [['missing', 'x']], [view(1)])).toThrow(/does not lead/);
    expect(() => putBuffers({ a: null }, [[]], [view(1)])).toThrow(/not a list of keys/);
    expect(() => putBuffers({ a: null }, [['__proto__', 'polluted']], [view(1)])).toThrow(/does not lead/);
    expect(({} as any).polluted).toBeUndefined();
    expect(putBuffers({ a: 1 }, undefined, [])).toEqual({ a: 1 });
  });
});
