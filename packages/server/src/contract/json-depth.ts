/**
 * The nesting bound of client JSON (LIMITS.jsonDepthMax), checked on the raw text before it is
 * parsed, by the REST body reader and the WebSocket frame decoder alike, so that no path lets a
 * deeply nested request through: not to the Python worker, whose json decoder recurses (a 2 KB
 * call nested 1,200 deep raised RecursionError there), not to the gateway's own recursive walks
 * (JSON.stringify throws past a few thousand levels), and not to JSON.parse itself, which does not
 * recurse but spent seconds and gigabytes on a maximal frame of nested lists.
 *
 * The rule: the request itself (the body, the frame) is level 0, the envelope; every array or
 * object inside it is one level deeper than the one holding it. In `{"args": [[1]]}` the args
 * array is level 1 and the list inside it level 2. A value whose deepest container is deeper than
 * LIMITS.jsonDepthMax is refused with `invalid_argument` before anything reads it. Brackets inside
 * strings do not count (escapes included), so any text has one answer, JSON or not.
 */
import { LIMITS } from '../config/constants.js';
import { PorticoError } from '../errors.js';

/** The bytes (and UTF-16 code units) of JSON's structure, for the scanners here and in ws/decode.ts. */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;

/**
 * Where `text` first nests deeper than `max` levels below its envelope: the offset of the `[` or
 * `{` that opens the first too-deep container, or -1 when it stays within the bound.
 *
 * Every WebSocket frame and REST body passes here, so it is written for speed, and
 * `jsonTooDeepReference` below is the plain statement it must agree with (json-depth.test.ts
 * holds them to each other on generated text). Two steps: a text with no more opening brackets
 * in all than the envelope plus `max` levels cannot go deeper, whatever sits in its strings, and
 * counting them is a handful of indexOf calls for a usual call frame; only a text with more
 * brackets is walked character by character.
 *
 * @example jsonTooDeep('{"args":[[1]]}', 1) === 9 // the inner list is level 2
 */
export function jsonTooDeep(text: string, max: number = LIMITS.jsonDepthMax): number {
  // Bracket depth counts the envelope as 1: level L is depth L + 1.
  const limit = max + 1;
  if (fewBrackets(text, limit)) return -1;
  const n = text.length;
  let depth = 0;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Skip the string: up to its closing quote, stepping over each escaped character.
      for (i++; i < n; i++) {
        const s = text.charCodeAt(i);
        if (s === QUOTE) break;
        if (s === BACKSLASH) i++;
      }
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > limit) return i;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    }
  }
  return -1;
}

/** Whether `text` has at most `limit` opening brackets, counted inside strings too. */
function fewBrackets(text: string, limit: number): boolean {
  let count = 0;
  for (let i = text.indexOf('['); i !== -1; i = text.indexOf('[', i + 1)) if (++count > limit) return false;
  for (let i = text.indexOf('{'); i !== -1; i = text.indexOf('{', i + 1)) if (++count > limit) return false;
  return true;
}

/**
 * The plain statement of `jsonTooDeep`, one character at a time with the string state spelled
 * out. Kept beside the fast version as its oracle (STYLE.md §11); the gateway never calls it.
 */
export function jsonTooDeepReference(text: string, max: number = LIMITS.jsonDepthMax): number {
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
    } else if (ch === '"') {
      inString = true;
    } else if (ch === '[' || ch === '{') {
      depth += 1;
      if (depth - 1 > max) return i;
    } else if (ch === ']' || ch === '}') {
      depth -= 1;
    }
  }
  return -1;
}

/** Path segments shown in the refusal before it is cut short with an ellipsis. */
const PATH_SEGMENTS_SHOWN = 6;
/** Characters of one object key shown in the refusal. */
const KEY_CHARS_SHOWN = 32;

/*
 * What follows runs only for a refused request, so it is written plainly. It still reads the
 * text rather than parsing it: V8 took 12 s and 2 GB to parse a 64 MiB frame of nested lists,
 * and that is what a client can send to be refused.
 */

/**
 * The refusal of `text`, whose container opening at `offset` (from `jsonTooDeep`) is too deep:
 * `invalid_argument`, naming the bound and where it was crossed as a JSONPath from the envelope
 * (`$`), its first few steps only.
 *
 * @example "JSON nested deeper than 64 levels (at $.args[0][0][0][0][0]…)"
 */
export function jsonTooDeepError(text: string, offset: number, max: number = LIMITS.jsonDepthMax): PorticoError {
  return new PorticoError('invalid_argument', `JSON nested deeper than ${max} levels (at ${pathTo(text, offset)})`);
}

/**
 * The JSONPath of the value that starts at `offset`: one step per container open there, its
 * current index or key. Only the first steps are kept; the containers before `offset` are never
 * deeper than the bound, so neither are these stacks.
 */
function pathTo(text: string, offset: number): string {
  const isArray: boolean[] = [];
  const index: number[] = [];
  const keyStart: number[] = [];
  const keyEnd: number[] = [];
  let depth = 0;
  let keyNext = false;
  for (let i = 0; i < offset; i++) {
    const ch = text[i];
    const top = depth - 1;
    if (ch === '"') {
      const start = i;
      i = stringEnd(text, i);
      if (keyNext && top < PATH_SEGMENTS_SHOWN) [keyStart[top], keyEnd[top]] = [start, i + 1];
      keyNext = false;
    } else if (ch === '[' || ch === '{') {
      if (depth < PATH_SEGMENTS_SHOWN) [isArray[depth], index[depth], keyStart[depth], keyEnd[depth]] = [ch === '[', 0, 0, 0];
      depth += 1;
      keyNext = ch === '{';
    } else if (ch === ']' || ch === '}') {
      depth -= 1;
      keyNext = false;
    } else if (ch === ',' && top >= 0) {
      if (top >= PATH_SEGMENTS_SHOWN) continue;
      if (isArray[top]) index[top] += 1;
      else keyNext = true;
    }
  }
  let path = '$';
  for (let d = 0; d < Math.min(depth, PATH_SEGMENTS_SHOWN); d++) {
    if (isArray[d]) {
      path += `[${index[d]}]`;
      continue;
    }
    const key = shorten(stringValue(text.slice(keyStart[d], keyEnd[d])) ?? '');
    path += /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
  }
  return depth > PATH_SEGMENTS_SHOWN ? `${path}…` : path;
}

/**
 * The envelope's member `name` when it holds a string or a number, read from the text without
 * parsing it: the id of a refused frame, so that its error answers it. The first such member
 * counts; undefined when there is none, or the envelope is no object. A number's source text
 * becomes its value through `readNumber` (the WebSocket decoder keeps the text of an id that a
 * double would change, ws/decode.ts).
 */
export function envelopeMember(text: string, name: string, readNumber: (source: string) => string | number = Number): string | number | undefined {
  let depth = 0;
  let keyNext = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '"') {
      const start = i;
      i = stringEnd(text, i);
      if (depth === 1 && keyNext && stringValue(text.slice(start, i + 1)) === name) return scalarAt(text, i + 1, readNumber);
      keyNext = false;
    } else if (ch === '[' || ch === '{') {
      if (depth === 0 && ch === '[') return undefined;
      depth += 1;
      keyNext = depth === 1;
    } else if (ch === ']' || ch === '}') {
      depth -= 1;
    } else if (ch === ',') {
      keyNext = depth === 1;
    }
  }
  return undefined;
}

/** The offset of the quote that closes the string opening at `start` (or the text's end). */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
  return i;
}

/** A JSON string literal's value; undefined when it is not one. */
function stringValue(literal: string): string | undefined {
  if (!literal.includes('\\')) return literal.length >= 2 && literal.endsWith('"') ? literal.slice(1, -1) : undefined;
  try {
    return JSON.parse(literal) as string;
  } catch {
    return undefined;
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** The string or number after the colon that follows a key ending before `offset`. */
function scalarAt(text: string, offset: number, readNumber: (source: string) => string | number): string | number | undefined {
  const colon = /\s*:\s*/y;
  colon.lastIndex = offset;
  if (!colon.test(text)) return undefined;
  const at = colon.lastIndex;
  if (text[at] === '"') return stringValue(text.slice(at, stringEnd(text, at) + 1));
  NUMBER.lastIndex = at;
  const number = NUMBER.exec(text);
  return number ? readNumber(number[0]) : undefined;
}

/** An object key, shortened for a message. */
function shorten(key: string): string {
  return key.length > KEY_CHARS_SHOWN ? `${key.slice(0, KEY_CHARS_SHOWN)}…` : key;
}
