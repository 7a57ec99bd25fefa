/**
 * Deep equality for widget state (JSON values), so that a set or an incoming change that leaves a
 * value as it was emits no event, like Backbone's `_.isEqual`. Binary values (ArrayBuffer,
 * DataView, typed arrays) are equal when their bytes are, so a resync that brings the same image
 * again changes nothing; anything else that is not a plain object or array is compared by identity.
 */
import { bytesOf, isBinary } from './buffers.js';

export function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (isBinary(a) || isBinary(b)) return isBinary(a) && isBinary(b) && sameBytes(bytesOf(a), bytesOf(b));
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => deepEqual(item, b[i]));
  }
  if (Array.isArray(b) || !isPlain(a) || !isPlain(b)) return false;
  const keysA = Object.keys(a);
  if (keysA.length !== Object.keys(b).length) return false;
  return keysA.every((key) => Object.hasOwn(b, key) && deepEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]));
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
