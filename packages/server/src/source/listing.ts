/**
 * The editable source files under a base directory, in path order, bounded. Folders the API never
 * reaches are not entered (hidden ones, `__pycache__`, `node_modules`, environments); symlinked
 * folders are not followed; a symlinked file is listed only when it resolves to a source file
 * inside the base.
 */
import type { Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { LIMITS } from '../config/constants.js';
import { allowedTarget, isEnvironment, moduleOf, sourceFileName, walkableDirName } from './paths.js';

export interface SourceFileEntry {
  path: string;
  module: string | null;
  size: number;
  mtime_ns: number;
}

export interface SourceListing {
  files: SourceFileEntry[];
  truncated: boolean;
}

/**
 * Lists up to `max` files. Entries are visited so that the walk yields paths in plain string
 * order (a folder sorts as its name plus `/`), so a truncated list is the first `max` paths.
 */
export async function listSources(base: string, max: number = LIMITS.sourceListMax): Promise<SourceListing> {
  const files: SourceFileEntry[] = [];
  let truncated = false;

  const walk = async (dir: string, prefix: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => [] as Dirent[]);
    const key = (entry: Dirent) => (entry.isDirectory() ? `${entry.name}/` : entry.name);
    entries.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
    for (const entry of entries) {
      if (truncated) return;
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (walkableDirName(entry.name) && !(await isEnvironment(full))) await walk(full, rel);
        continue;
      }
      if (!sourceFileName(entry.name) || !(entry.isFile() || (entry.isSymbolicLink() && (await linksInside(base, full))))) continue;
      const info = await stat(full, { bigint: true }).catch(() => undefined);
      if (!info?.isFile()) continue;
      if (files.length === max) {
        truncated = true;
        return;
      }
      files.push({ path: rel, module: moduleOf(rel), size: Number(info.size), mtime_ns: Number(info.mtimeNs) });
    }
  };

  await walk(base, '');
  return { files, truncated };
}

/** Whether a symlinked file resolves inside `base`, to a source file in a folder the API reaches. */
async function linksInside(base: string, link: string): Promise<boolean> {
  const real = await realpath(link).catch(() => undefined);
  return real !== undefined && allowedTarget(base, real, 'file');
}
