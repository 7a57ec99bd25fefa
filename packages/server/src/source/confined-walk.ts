/**
 * The one walk of a client-named path below a folder the gateway owns, shared by the source API
 * (paths.ts `locate`) and uploads (service/uploads.ts): each folder on the way is entered by its
 * real path, a symlink only where the caller's rules admit its target; a missing folder is made
 * when `create` (one at a time, each inside a folder already checked, so nothing is ever created
 * through a link) or ends the walk; the last segment is followed through a symlink only where the
 * rules admit it. What a caller refuses differs (the source API keeps to source files and out of
 * environments, uploads to the interface folder); how the disk is walked does not.
 */
import type { Stats } from 'node:fs';
import { lstat, mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { PorticoError } from '../errors.js';

export interface WalkRules {
  /** Make missing folders on the way (else the walk ends at the first one missing). */
  create: boolean;
  /** Throws when a symlink's target (its real path) may not be used as a folder on the way, or as the file. */
  linked(real: string, kind: 'dir' | 'file'): void;
  /** Throws when a folder on the way (real path; `shown` is the request path up to it) may not be entered. */
  enter?(real: string, shown: string): Promise<void>;
  /** The error for a symlink that leads nowhere. */
  broken(): PorticoError;
}

export interface Walked {
  /** Where the bytes are: the file, symlinks resolved (or where it would be created). */
  file: string;
  /** The file's stat when it exists (of the symlink's target for a link). */
  info: Stats | undefined;
}

/** Walks `segments` (already checked as plain relative segments) from `base` (absolute, symlinks resolved). */
export async function walkConfined(base: string, segments: readonly string[], rules: WalkRules): Promise<Walked> {
  let dir = base;
  for (const [index, segment] of segments.slice(0, -1).entries()) {
    const next = path.join(dir, segment);
    const shown = segments.slice(0, index + 1).join('/');
    const info = await lstat(next).catch(() => undefined);
    if (!info) {
      if (!rules.create) return { file: path.join(next, ...segments.slice(index + 1)), info: undefined };
      await mkdir(next).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      dir = next;
      continue;
    }
    let real = next;
    if (info.isSymbolicLink()) {
      real = await realpath(next).catch(() => {
        throw rules.broken();
      });
      rules.linked(real, 'dir');
    }
    if (!(info.isSymbolicLink() ? await lstat(real) : info).isDirectory()) throw new PorticoError('conflict', `'${shown}' is a file, not a folder`);
    await rules.enter?.(real, shown);
    dir = real;
  }
  const file = path.join(dir, segments.at(-1)!);
  const info = await lstat(file).catch(() => undefined);
  if (!info?.isSymbolicLink()) return { file, info };
  const real = await realpath(file).catch(() => {
    throw rules.broken();
  });
  rules.linked(real, 'file');
  return { file: real, info: await lstat(real) };
}
