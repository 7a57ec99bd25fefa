/**
 * What the source API may touch, and where a request path leads on disk. A path is refused
 * before anything is read when it is not a plain relative path (`..`, absolute, drive letter,
 * empty or `.` segment, NUL: `forbidden`), when it lies in a folder the API never reaches
 * (hidden folders such as `.portico/` and `.git/`, `__pycache__`, `node_modules`, environments:
 * `forbidden`), or when its extension is not a source one (`not_source_file`). On disk, every
 * folder on the way and the file itself may be a symlink only when it resolves inside the base
 * directory to a place these same rules allow.
 */
import type { Stats } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { PorticoError } from '../errors.js';
import { walkConfined } from './confined-walk.js';
import { plainSegments } from './relative-path.js';

/**
 * The files the source API edits: interface modules, widget front ends (ES modules and
 * stylesheets) and the text that travels with them (portico.json, notes, fixtures).
 */
export const SOURCE_EXTENSIONS: ReadonlySet<string> = new Set(['.py', '.js', '.mjs', '.css', '.json', '.md', '.txt']);

/** Folders never listed or touched (besides every folder whose name starts with `.`), as the worker's module discovery. */
export const SKIPPED_DIRS: ReadonlySet<string> = new Set(['__pycache__', 'node_modules', 'site-packages', 'dist-packages', 'venv']);

/** A folder holding one of these is a Python environment (virtualenv, conda), not project source. */
export const ENVIRONMENT_MARKERS = ['pyvenv.cfg', 'conda-meta'] as const;

/** Whether a folder name is one the source API walks into (by name only; see ENVIRONMENT_MARKERS). */
export function walkableDirName(name: string): boolean {
  return !name.startsWith('.') && !SKIPPED_DIRS.has(name);
}

/** Whether a file name is a source file by name (not hidden, a source extension). */
export function sourceFileName(name: string): boolean {
  return !name.startsWith('.') && SOURCE_EXTENSIONS.has(path.extname(name).toLowerCase());
}

/** Whether `dir` is a Python environment. */
export async function isEnvironment(dir: string): Promise<boolean> {
  for (const marker of ENVIRONMENT_MARKERS) {
    if (await access(path.join(dir, marker)).then(() => true, () => false)) return true;
  }
  return false;
}

/**
 * Checks a request path without touching the disk and returns its segments. Backslashes count
 * as separators; the normalized path is `segments.join('/')`.
 */
export function sourceSegments(relative: string): string[] {
  const segments = plainSegments(relative, 'project');
  const shown = JSON.stringify(relative);
  const name = segments.at(-1)!;
  const blocked = segments.slice(0, -1).find((dir) => !walkableDirName(dir)) ?? (name.startsWith('.') ? name : undefined);
  if (blocked !== undefined) {
    throw new PorticoError('forbidden', `Path ${shown} lies in '${blocked}': hidden, cache and environment folders and hidden files are not source`);
  }
  if (!sourceFileName(name)) {
    throw new PorticoError('not_source_file', `Path ${shown} is not a source file; the source API edits ${[...SOURCE_EXTENSIONS].join(', ')} files`);
  }
  return segments;
}

/**
 * The Python module a source path defines: `pkg/mod.py` → `pkg.mod`, `pkg/__init__.py` → `pkg`;
 * null for other files and for paths that cannot be imported (`my-script.py`).
 */
export function moduleOf(relative: string): string | null {
  if (!relative.endsWith('.py')) return null;
  const parts = relative.slice(0, -'.py'.length).split('/');
  if (parts.at(-1) === '__init__') parts.pop();
  if (parts.length === 0 || !parts.every((part) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(part))) return null;
  return parts.join('.');
}

export interface Located {
  /** The normalized request path (`/`-separated). */
  path: string;
  /** Where the bytes are: the file, symlinks resolved (or where it would be created). */
  file: string;
  /** The file's stat when it exists (of the symlink's target for a link). */
  info: Stats | undefined;
}

/**
 * Whether `real` (absolute, symlinks resolved) lies strictly inside `base` at a place the rules
 * allow: a folder the API walks into, or a source file.
 */
export function allowedTarget(base: string, real: string, kind: 'dir' | 'file'): boolean {
  if (!real.startsWith(base + path.sep)) return false;
  const parts = path.relative(base, real).split(path.sep);
  const name = parts.at(-1)!;
  return parts.slice(0, -1).every(walkableDirName) && (kind === 'dir' ? walkableDirName(name) : sourceFileName(name));
}

/**
 * Follows `relative` from `base` (absolute, symlinks resolved) on disk (confined-walk.ts). With
 * `create`, missing folders are made one at a time, each inside a folder already checked.
 */
export async function locate(base: string, relative: string, { create = false } = {}): Promise<Located> {
  const segments = sourceSegments(relative);
  const escape = (what: string) => new PorticoError('forbidden', `Path ${JSON.stringify(relative)} leads ${what}`);
  const walked = await walkConfined(base, segments, {
    create,
    // A symlink's target must obey the rules the request path obeys.
    linked: (real, kind) => {
      if (!allowedTarget(base, real, kind)) throw escape('through a symlink outside the project, or to a place that is not source');
    },
    enter: async (real, shown) => {
      if (await isEnvironment(real)) throw escape(`into a Python environment ('${shown}')`);
    },
    broken: () => escape('through a broken symlink'),
  });
  return { path: segments.join('/'), ...walked };
}
