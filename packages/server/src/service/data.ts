/**
 * An interface's data folder as clients see it: where its data is (local, remote, evicted), the
 * files in it, and one file — as the reference server answers it (a `.json` file parsed, any other
 * file as its text) or as its bytes, binary-safe, for clients that ask — confined to the folder (no
 * `..`, no absolute paths, no symlinks leading out) and bounded.
 */
import { createReadStream, type ReadStream } from 'node:fs';
import { lstat, readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { LIMITS } from '../config/constants.js';
import { jsonTooDeep } from '../contract/json-depth.js';
import { PorticoError } from '../errors.js';
import { interfaceDir } from '../store/files.js';
import type { RequestContext } from './context.js';
import type { InterfaceService } from './interfaces.js';
import { isWithin } from '../source/relative-path.js';

export interface DataStatus {
  uuid: string;
  status: 'local' | 'remote' | 'evicted';
  /** The folder, relative to the project (local only). */
  path: string | null;
  files: number;
  bytes: number;
  /** meta.storage_uri, when the data lives elsewhere. */
  storage_uri: string | null;
  /** The reference server's fields: whether the folder is here (both), where, and whether its bytes are gone. */
  available: boolean;
  mounted: boolean;
  local_uri: string | null;
  bytes_missing: boolean;
}

export interface FileRead {
  stream: ReadStream;
  size: number;
  /** The byte range served (inclusive), and the whole file's size. */
  range: { start: number; end: number; total: number } | null;
  name: string;
}

/** Files under `dir`, relative, skipping dotfiles (temp files, markers of the store). */
async function walk(dir: string, prefix = ''): Promise<Array<{ path: string; size: number }>> {
  const entries = await readdir(path.join(dir, prefix), { withFileTypes: true }).catch(() => []);
  const out: Array<{ path: string; size: number }> = [];
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (entry.name.startsWith('.')) continue;
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...(await walk(dir, rel)));
    else if (entry.isFile()) out.push({ path: rel, size: (await stat(path.join(dir, rel))).size });
  }
  return out;
}

export class DataService {
  constructor(private readonly interfaces: InterfaceService) {}

  async status(ctx: RequestContext, uuid: string): Promise<DataStatus> {
    const record = await this.interfaces.get(ctx, uuid);
    const dir = interfaceDir(ctx.project.dir, uuid);
    const storageUri = typeof record.meta.storage_uri === 'string' ? record.meta.storage_uri : null;
    const present = await stat(dir).then((s) => s.isDirectory(), () => false);
    if (!present) {
      const remote = storageUri !== null && !storageUri.startsWith('file:');
      const absent = { available: false, mounted: false, local_uri: null, bytes_missing: !remote };
      return { uuid, status: remote ? 'remote' : 'evicted', path: null, files: 0, bytes: 0, storage_uri: storageUri, ...absent };
    }
    const files = await walk(dir);
    return {
      uuid,
      status: 'local',
      path: path.relative(ctx.project.dir, dir),
      files: files.length,
      bytes: files.reduce((n, f) => n + f.size, 0),
      storage_uri: storageUri,
      available: true,
      mounted: true,
      local_uri: dir,
      bytes_missing: false,
    };
  }

  async list(ctx: RequestContext, uuid: string): Promise<{ files: string[] }> {
    await this.interfaces.get(ctx, uuid);
    return { files: (await walk(interfaceDir(ctx.project.dir, uuid))).map((f) => f.path) };
  }

  /**
   * One file as the reference server answers it: a `.json` file's parsed value, any other file's
   * UTF-8 text (a JSON string). Bounded by LIMITS.fileReadMax like the bytes (`payload_too_large`
   * beyond: read its bytes in parts). A file that is not UTF-8, a `.json` file that does not parse
   * (or nests deeper than LIMITS.jsonDepthMax) has no such answer: `file_needs_raw`, whose message
   * says how to ask for its bytes.
   *
   * @example await data.read(ctx, uuid, 'result.json') // { loss: 0.25 }
   */
  async read(ctx: RequestContext, uuid: string, relative: string): Promise<unknown> {
    const { real, size } = await this.locate(ctx, uuid, relative);
    const asRaw = 'ask for its bytes with ?raw=true or Accept: application/octet-stream';
    if (size > LIMITS.fileReadMax) {
      throw new PorticoError('payload_too_large', `File '${relative}' has ${size} bytes, over the ${LIMITS.fileReadMax}-byte bound; ${asRaw}, in parts with a Range header`);
    }
    const bytes = await readFile(real);
    // It may have grown since: the bound holds for what was read.
    if (bytes.length > LIMITS.fileReadMax) return this.read(ctx, uuid, relative);
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw new PorticoError('file_needs_raw', `File '${relative}' is not UTF-8 text; ${asRaw}`);
    }
    // As the reference decides it: by the name's ending, case-sensitively.
    if (!relative.endsWith('.json')) return text;
    // Deeper than the bound, the answer would be more than the gateway serializes safely.
    if (jsonTooDeep(text) !== -1) throw new PorticoError('file_needs_raw', `File '${relative}' nests deeper than ${LIMITS.jsonDepthMax} levels; ${asRaw}`);
    try {
      return JSON.parse(text);
    } catch {
      throw new PorticoError('file_needs_raw', `File '${relative}' is not valid JSON; ${asRaw}`);
    }
  }

  /**
   * Opens one file's bytes for reading. A file larger than LIMITS.fileReadMax needs a `range`
   * (bytes=start-end), and a range is served up to that bound too.
   */
  async open(ctx: RequestContext, uuid: string, relative: string, range?: string): Promise<FileRead> {
    const { real, size: total, name } = await this.locate(ctx, uuid, relative);
    let start = 0;
    let end = total - 1;
    let ranged = false;
    if (range) {
      const m = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
      if (!m || (m[1] === '' && m[2] === '')) throw new PorticoError('invalid_argument', `Unsupported Range '${range}'; use bytes=start-end`);
      if (m[1] === '') {
        start = Math.max(0, total - Number(m[2]));
      } else {
        start = Number(m[1]);
        end = m[2] === '' ? total - 1 : Math.min(Number(m[2]), total - 1);
      }
      if (start >= total || start > end) throw new PorticoError('range_not_satisfiable', `Range '${range}' is outside the file's ${total} bytes`);
      end = Math.min(end, start + LIMITS.fileReadMax - 1);
      ranged = true;
    } else if (total > LIMITS.fileReadMax) {
      throw new PorticoError('payload_too_large', `File '${relative}' has ${total} bytes, over the ${LIMITS.fileReadMax}-byte bound; read it in parts with a Range header`);
    }
    const size = total === 0 ? 0 : end - start + 1;
    return {
      stream: createReadStream(real, size ? { start, end } : { start: 0, end: -1 }),
      size,
      range: ranged ? { start, end, total } : null,
      name,
    };
  }

  /** The file's real path inside the interface folder: `forbidden` outside it, `not_found` when it is not a regular file. */
  private async locate(ctx: RequestContext, uuid: string, relative: string): Promise<{ real: string; size: number; name: string }> {
    await this.interfaces.get(ctx, uuid);
    const root = interfaceDir(ctx.project.dir, uuid);
    const segments = relative.split('/');
    if (!relative || path.isAbsolute(relative) || segments.some((s) => s === '' || s === '.' || s === '..' || s.includes('\0'))) {
      throw new PorticoError('forbidden', `Path '${relative}' is not a plain relative path inside the interface folder`);
    }
    const file = path.join(root, ...segments);
    const notFound = () => new PorticoError('not_found', `File '${relative}' not found`);
    const info = await lstat(file).catch(() => undefined);
    if (!info) throw notFound();
    // Symlinks are followed only when they stay inside the folder.
    const [realRoot, real] = await Promise.all([realpath(root), realpath(file).catch(() => undefined)]);
    if (!real || !isWithin(real, realRoot)) {
      throw new PorticoError('forbidden', `Path '${relative}' leads outside the interface folder`);
    }
    const target = await stat(real);
    if (!target.isFile()) throw notFound();
    return { real, size: target.size, name: segments.at(-1)! };
  }
}
