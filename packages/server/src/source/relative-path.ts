/**
 * Paths a client names, relative to a folder the gateway owns (an interface folder, a project):
 * one check of their shape before the disk is touched, and one test of where a resolved path lies.
 */
import path from 'node:path';
import { PorticoError } from '../errors.js';

/**
 * The segments of a plain relative path. Backslashes count as separators; absolute paths, drive
 * letters, empty, `.` and `..` segments and NUL are refused with `forbidden`, naming `place`.
 * The normalized path is `segments.join('/')`.
 */
export function plainSegments(relative: string, place: string): string[] {
  const unified = relative.replaceAll('\\', '/');
  const segments = unified.split('/');
  if (!relative || relative.includes('\0') || unified.startsWith('/') || /^[A-Za-z]:/.test(unified) || segments.some((s) => s === '' || s === '.' || s === '..')) {
    throw new PorticoError('forbidden', `Path ${JSON.stringify(relative)} must be a plain relative path inside the ${place} (no '..', no absolute path, no empty or '.' segment)`);
  }
  return segments;
}

/** Whether `child` is `parent` or lies under it (both absolute; compare real paths for symlinks). */
export function isWithin(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);
}
