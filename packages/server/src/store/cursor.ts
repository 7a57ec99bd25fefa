/**
 * Cursors of search pages: the position of the last record of a page in its sort order, bound to
 * the query that made it (a hash of its filters, sort and include_archived), base64url JSON that
 * only this encoding produces. Both stores issue and read them here, so a cursor means the same in each.
 */
import { createHash } from 'node:crypto';
import { PorticoError } from '../errors.js';
import { canonicalJson, isCompound } from './canonical-json.js';

/**
 * A place in the sort order. `key` holds, per sort key, the value's type rank and a scalar that
 * orders values within the rank, so comparisons never re-walk paths or re-serialize values.
 */
export interface Position {
  key: Array<number | string>;
  uuid: string;
}

/**
 * A short digest of what decides the result set and its order. Filters are sorted, since ANDing
 * is order-free, so a reordered but equal query keeps its cursors valid.
 */
export function queryHash(filters: ReadonlyArray<{ path: string[]; op: string; value: unknown }>, sorts: ReadonlyArray<{ path: string[]; direction: string }>, includeArchived: boolean): string {
  const normal = {
    filters: filters.map((filter) => canonicalJson([filter.path.join('.'), filter.op, filter.value])).sort(),
    sort: sorts.map((sort) => [sort.path.join('.'), sort.direction]),
    include_archived: includeArchived,
  };
  return createHash('sha256').update(canonicalJson(normal)).digest('base64url').slice(0, 12);
}

export function encodeCursor(hash: string, position: Position): string {
  return Buffer.from(JSON.stringify({ h: hash, k: position.key, u: position.uuid })).toString('base64url');
}

function cursorError(message: string): PorticoError {
  return new PorticoError('validation_error', message, { issues: [{ path: 'cursor', message }] });
}

export function decodeCursor(cursor: string, hash: string, keys: number): Position {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw cursorError('Malformed cursor');
  }
  if (!isCompound(decoded)) throw cursorError('Malformed cursor');
  const { h, k, u } = decoded as Record<string, unknown>;
  if (typeof h !== 'string' || typeof u !== 'string' || !Array.isArray(k) || k.length !== keys * 2 || !validKey(k)) {
    throw cursorError('Malformed cursor');
  }
  const position = { key: k as Array<number | string>, uuid: u };
  // Base64 decoding skips stray characters and JSON admits variants; only our own encoding passes.
  if (encodeCursor(h, position) !== cursor) throw cursorError('Malformed cursor');
  if (h !== hash) throw cursorError('The cursor belongs to another query (its filters, sort or include_archived differ)');
  return position;
}

function validKey(key: unknown[]): boolean {
  for (let at = 0; at < key.length; at += 2) {
    const [rank, scalar] = [key[at], key[at + 1]];
    if (typeof rank !== 'number' || !Number.isInteger(rank) || rank < 0 || rank > 7) return false;
    const expected = rank === 4 ? 'number' : rank >= 5 ? 'string' : null;
    if (expected ? typeof scalar !== expected : scalar !== 0) return false;
  }
  return true;
}
