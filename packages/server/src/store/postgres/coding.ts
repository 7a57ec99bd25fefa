/**
 * How the PostgreSQL store writes strings. Every string of a record (text columns, and the
 * strings and keys inside the jsonb columns) is stored with each UTF-16 code unit u as the one
 * code point U+10000 + u. Why: the search semantics (query.ts) compare strings by UTF-16 code
 * units, and PostgreSQL compares text (in the "C" collation) by code points, which disagree
 * between U+E000–U+FFFF and the astral planes; PostgreSQL text cannot hold U+0000 nor a lone
 * surrogate, which JSON strings can; and a substring must stay a substring. With one code point
 * per code unit, all three hold exactly, and byte order is code-unit order.
 */
import { canonicalJson } from '../canonical-json.js';
import type { InterfaceRecord } from '../store.js';

/** Coded text: each code unit u becomes U+10000 + u, i.e. the surrogate pair (D800 + (u >> 10), DC00 + (u & 3FF)). */
export function codeText(text: string): string {
  const units = new Array<number>(text.length * 2);
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    units[2 * i] = 0xd800 + (unit >> 10);
    units[2 * i + 1] = 0xdc00 + (unit & 0x3ff);
  }
  return fromUnits(units);
}

/** The inverse of codeText. */
export function decodeText(coded: string): string {
  const units = new Array<number>(coded.length >> 1);
  for (let i = 0; i < units.length; i++) units[i] = ((coded.charCodeAt(2 * i) - 0xd800) << 10) | (coded.charCodeAt(2 * i + 1) - 0xdc00);
  return fromUnits(units);
}

/** String.fromCharCode in slices, since spreading a long array overflows the call stack. */
function fromUnits(units: number[]): string {
  let out = '';
  for (let at = 0; at < units.length; at += 8192) out += String.fromCharCode(...units.slice(at, at + 8192));
  return out;
}

/** A JSON value with every string and object key coded. */
export function codeValue(value: unknown): unknown {
  if (typeof value === 'string') return codeText(value);
  if (Array.isArray(value)) return value.map(codeValue);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, child]) => [codeText(key), codeValue(child)]));
  }
  return value;
}

/** The inverse of codeValue (Object.fromEntries, so a decoded `__proto__` key stays a plain key). */
export function decodeValue(value: unknown): unknown {
  if (typeof value === 'string') return decodeText(value);
  if (Array.isArray(value)) return value.map(decodeValue);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, child]) => [decodeText(key), decodeValue(child)]));
  }
  return value;
}

/**
 * How many code units of module, kind, class_name, created_by and label their b-tree indexes hold (and of a
 * count's value, counts.ts). PostgreSQL refuses an index row over about 2700 bytes and a coded
 * unit takes 4, so an index on the whole value failed (500) on a 1024-character label; these
 * columns take text of any length (created_by comes from a header, module and class_name from the
 * project's code, records from `portico index copy`). A prefix is bounded (512 bytes) and keeps
 * the order (a < b implies prefix(a) <= prefix(b)), so a condition on the prefix beside the one on
 * the whole value walks the index while the whole value decides.
 */
export const INDEXED_PREFIX = 128;

/**
 * The text columns indexed by their prefix. Schema version 3 builds these indexes for the first
 * four and INDEXED_PREFIX, version 5 the one on class_name, and a query reaches them only by
 * spelling the same expression: changing either takes a new migration.
 */
export const PREFIX_INDEXED: ReadonlySet<string> = new Set(['module', 'kind', 'created_by', 'label', 'class_name']);

/** The indexed prefix of a coded text expression, as the indexes spell it. */
export const indexedPrefix = (sql: string): string => `left(${sql}, ${INDEXED_PREFIX})`;

/** The indexed prefix of coded text, computed here (a coded unit is one surrogate pair in JavaScript). */
export const codedPrefix = (coded: string): string => coded.slice(0, 2 * INDEXED_PREFIX);

/** The columns of one record (see schema.ts; class_name came last, with version 5). */
export const RECORD_COLUMNS = ['uuid', 'module', 'kind', 'class_name', 'label', 'created_by', 'created_at', 'archived', 'config', 'predicate', 'version', 'meta'] as const;

/** A row as the database returns it. */
export type RecordRow = Record<(typeof RECORD_COLUMNS)[number], unknown>;

/** What insert writes: the record's columns plus `sort_text`, derived from the config. */
export const INSERT_COLUMNS = [...RECORD_COLUMNS, 'sort_text'] as const;

const SEGMENT = /^[A-Za-z0-9_-]+$/;

/**
 * The coded canonical JSON of every array and object in a config that a search path can reach,
 * keyed by that path ('a.0.b'; '' for the config itself). Sorting on a config path orders arrays and objects by this text
 * (query.ts, sortKey); computing it here, once per record, keeps its number formatting and key
 * order exactly JavaScript's.
 */
export function sortTexts(config: Record<string, unknown>): Record<string, string> {
  const texts: Record<string, string> = {};
  const visit = (value: unknown, at: string): void => {
    if (value === null || typeof value !== 'object') return;
    texts[at] = codeText(canonicalJson(value));
    const prefix = at ? `${at}.` : '';
    if (Array.isArray(value)) value.forEach((child, i) => visit(child, `${prefix}${i}`));
    else for (const [key, child] of Object.entries(value)) if (SEGMENT.test(key)) visit(child, `${prefix}${key}`);
  };
  visit(config, '');
  return texts;
}

/** The record's column values, coded, in INSERT_COLUMNS order (jsonb values as JSON text). */
export function recordValues(record: InterfaceRecord): unknown[] {
  return [
    codeText(record.uuid),
    codeText(record.module),
    codeText(record.kind),
    codeText(record.class_name),
    record.label === null ? null : codeText(record.label),
    codeText(record.created_by),
    codeText(record.created_at),
    record.archived,
    JSON.stringify(codeValue(record.config)),
    JSON.stringify(codeValue(record.predicate)),
    JSON.stringify(codeValue(record.version)),
    JSON.stringify(codeValue(record.meta)),
    JSON.stringify(sortTexts(record.config)),
  ];
}

export function rowRecord(row: RecordRow): InterfaceRecord {
  return {
    uuid: decodeText(row.uuid as string),
    module: decodeText(row.module as string),
    kind: decodeText(row.kind as string),
    class_name: decodeText(row.class_name as string),
    config: decodeValue(row.config) as Record<string, unknown>,
    predicate: decodeValue(row.predicate) as Record<string, unknown>,
    version: decodeValue(row.version) as unknown[],
    label: row.label === null ? null : decodeText(row.label as string),
    meta: decodeValue(row.meta) as Record<string, unknown>,
    created_by: decodeText(row.created_by as string),
    created_at: decodeText(row.created_at as string),
    archived: row.archived as boolean,
  };
}
