/**
 * Entity tags of source files and the conditional headers that use them (RFC 9110 §13). A
 * source file's tag is strong: the MD5 hex of its bytes, quoted in headers (`"9e107d9d…"`) and
 * bare in bodies, as the reference server does.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { PorticoError } from '../errors.js';

/** The MD5 hex of `bytes` (unquoted). */
export function sourceEtag(bytes: Buffer): string {
  return createHash('md5').update(bytes).digest('hex');
}

/** The MD5 hex of a file's bytes, read as a stream (the file may exceed what is kept in memory). */
export async function fileEtag(file: string): Promise<string> {
  const hash = createHash('md5');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export function quoted(etag: string): string {
  return `"${etag}"`;
}

/** The conditional request headers of a write (absent headers are undefined). */
export interface Preconditions {
  ifMatch?: string | undefined;
  ifNoneMatch?: string | undefined;
}

interface Tag {
  weak: boolean;
  value: string;
}

/**
 * `*` or the tags of a list header. Tags are quoted by the RFC; a bare token is accepted too
 * (clients often send the body's unquoted `etag`).
 */
function parseTags(header: string): '*' | Tag[] {
  if (header.trim() === '*') return '*';
  return header
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
    .map((item) => {
      const weak = /^W\//i.test(item);
      const value = (weak ? item.slice(2) : item).replace(/^"(.*)"$/, '$1');
      return { weak, value };
    });
}

/**
 * Evaluates If-Match, then If-None-Match, against the file's current tag (null: no file), and
 * throws `precondition_failed` (412) when one fails:
 *
 * - If-Match `*` needs the file to exist; a list needs its current tag, compared strongly (a weak
 *   tag never matches).
 * - If-None-Match `*` needs the file to be absent (create-only); a list fails when it holds the
 *   current tag (weak comparison).
 */
export function checkPreconditions(pre: Preconditions, current: string | null, shown: string): void {
  if (pre.ifMatch !== undefined && pre.ifMatch.trim() !== '') {
    const tags = parseTags(pre.ifMatch);
    if (current === null) {
      throw new PorticoError('precondition_failed', `If-Match failed: '${shown}' does not exist`);
    }
    if (tags !== '*' && !tags.some((tag) => !tag.weak && tag.value === current)) {
      throw new PorticoError('precondition_failed', `If-Match failed: '${shown}' has changed (its ETag is now ${quoted(current)})`);
    }
  }
  if (pre.ifNoneMatch !== undefined && pre.ifNoneMatch.trim() !== '' && current !== null) {
    const tags = parseTags(pre.ifNoneMatch);
    if (tags === '*') throw new PorticoError('precondition_failed', `If-None-Match: * failed: '${shown}' already exists`);
    if (tags.some((tag) => tag.value === current)) {
      throw new PorticoError('precondition_failed', `If-None-Match failed: '${shown}' still has ETag ${quoted(current)}`);
    }
  }
}

/** Whether a GET's If-None-Match names the current tag (weak comparison): answer 304. */
export function notModified(ifNoneMatch: string | undefined, current: string): boolean {
  if (!ifNoneMatch?.trim()) return false;
  const tags = parseTags(ifNoneMatch);
  return tags === '*' || tags.some((tag) => tag.value === current);
}
