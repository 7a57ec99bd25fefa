/** JSON values compared and written the same everywhere: the key-order-free form both stores index and hash. */

export function isCompound(value: unknown): value is object {
  return value !== null && typeof value === 'object';
}

/** Deep JSON equality: key order is irrelevant, and `===` already keeps `true` apart from 1. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!isCompound(a) || !isCompound(b)) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    if (!Object.hasOwn(b, key) || !jsonEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false;
  }
  return true;
}

/**
 * Canonical JSON text: object keys sorted by UTF-16 code units, no whitespace. Written here rather
 * than taken from `canonicalize`, which throws on lone surrogates that stored strings may hold.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isCompound(value)) {
    const object = value as Record<string, unknown>;
    const members = Object.keys(object)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(object[key])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
