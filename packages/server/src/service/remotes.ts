/**
 * Remote modules: shareable interfaces a project resolves by URL or path. A project declares
 * them in `<project>/portico.json`:
 *
 *   { "remotes": { "shared.model": { "url": "https://host/model.py", "sha256": "…" },
 *                  "helpers":      { "file": "../lib/helpers.py" },
 *                  "linked":       { "link": "../lib/linked.py", "sha256": "…" } } }
 *
 * A remote is fetched on first use into `<project>/.portico/remotes/<a/b>.py`, where the worker
 * imports it like any project module (project files win). It is never silently re-fetched, and
 * a content that does not match its pin is refused — at fetch time and at every use.
 */
import { createHash } from 'node:crypto';
import { lstatSync, statSync, watch as fsWatch, type FSWatcher } from 'node:fs';
import { lstat, mkdir, readFile, stat, symlink, unlink } from 'node:fs/promises';
import { get } from 'node:https';
import path from 'node:path';
import { PorticoError } from '../errors.js';
import { STORE_DIR, writeAtomic } from '../store/files.js';

export const REMOTES_FILE = 'portico.json';
export const REMOTES_DIR = 'remotes';
/** Largest remote module fetched, in bytes. */
const MAX_REMOTE_BYTES = 8 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 30_000;

export interface RemoteSpec {
  kind: 'url' | 'file' | 'link';
  source: string;
  sha256: string | null;
}

export interface RemoteInfo extends RemoteSpec {
  module: string;
  /** Where the module lives once fetched, relative to the project. */
  path: string;
  fetched: boolean;
}

const MODULE_RE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

function invalid(message: string): PorticoError {
  return new PorticoError('invalid_argument', `${REMOTES_FILE}: ${message}`);
}

/** What each project's portico.json declares, or the read in progress, while it holds (see readRemotes). */
const declared = new Map<string, Promise<Map<string, RemoteSpec>>>();

/**
 * How long a watched answer is kept at most. inotify sees no change made by another machine on
 * a shared file system (NFS, several gateways on one project, DESIGN §8): such an edit is seen
 * within this time instead of never.
 */
const RECHECK_MS = 1000;

/** Parsed portico.json per project, kept while the file's mtime and size are unchanged. */
const parsedFiles = new Map<string, { stamp: string; specs: Map<string, RemoteSpec> }>();

/** Per project folder, whether a watcher tells when its portico.json may have changed. */
const watched = new Map<string, boolean>();

/**
 * The remotes a project declares (an absent file declares none), asked on every create (every
 * REST call). The answer is kept until the file may have changed: a watcher on the project
 * folder forgets it when an event names portico.json, names nothing, or is about the folder
 * itself, and it is read again after RECHECK_MS in any case. A stat per call, even synchronous, showed in a REST call's CPU profile. Where there is
 * no watcher (the folder cannot be watched) or it cannot see every change (portico.json is a
 * symbolic link, whose target may change elsewhere), the file's mtime and size are checked on
 * every call instead, and calls made while one check is in progress share its answer.
 */
export function readRemotes(project: string): Promise<Map<string, RemoteSpec>> {
  let answer = declared.get(project);
  if (answer) return answer;
  // Watching before reading: a change made meanwhile forgets this very answer.
  const watching = watch(project);
  const reading = readRemotesNow(project);
  answer = reading.then(({ specs }) => specs);
  const read = answer;
  read.then((specs) => settled.set(read, specs), () => undefined);
  declared.set(project, answer);
  const forget = () => {
    if (declared.get(project) === answer) declared.delete(project);
  };
  reading.then(({ linked }) => (watching && !linked ? setTimeout(forget, RECHECK_MS).unref() : forget()), forget);
  return answer;
}

/** Starts watching a project folder for changes of portico.json; false when it cannot be watched. */
function watch(project: string): boolean {
  let watching = watched.get(project);
  if (watching !== undefined) return watching;
  const stop = () => {
    watcher?.close();
    watched.delete(project);
    declared.delete(project);
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = fsWatch(project, { persistent: false }, (_event, name) => {
      if (name === REMOTES_FILE || name === null) declared.delete(project);
      else if (name === path.basename(project)) stop(); // the folder itself was moved or removed
    });
    watcher.on('error', stop);
    watching = true;
  } catch {
    watching = false; // inotify watches exhausted, a file system without notifications, …
  }
  watched.set(project, watching);
  return watching;
}

async function readRemotesNow(project: string): Promise<{ specs: Map<string, RemoteSpec>; linked: boolean }> {
  const file = path.join(project, REMOTES_FILE);
  // Synchronous stats that return nothing for a missing file: the promise versions cost a
  // thread-pool round trip and an ENOENT Error with its stack for a project without remotes.
  const link = lstatSync(file, { throwIfNoEntry: false });
  const info = link?.isSymbolicLink() ? statSync(file, { throwIfNoEntry: false }) : link;
  const linked = link?.isSymbolicLink() ?? false;
  if (!info) return { specs: new Map(), linked };
  const stamp = `${info.mtimeMs}:${info.size}`;
  const cached = parsedFiles.get(project);
  if (cached?.stamp === stamp) return { specs: cached.specs, linked };
  const specs = parseRemotes(await readFile(file, 'utf8'));
  parsedFiles.set(project, { stamp, specs });
  return { specs, linked };
}

function parseRemotes(text: string): Map<string, RemoteSpec> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw invalid(`not valid JSON: ${(err as Error).message}`);
  }
  const remotes = (parsed as { remotes?: unknown })?.remotes ?? {};
  if (typeof remotes !== 'object' || remotes === null || Array.isArray(remotes)) throw invalid('"remotes" must be an object');
  const specs = new Map<string, RemoteSpec>();
  for (const [module, raw] of Object.entries(remotes)) {
    if (!MODULE_RE.test(module)) throw invalid(`'${module}' is not a dotted module name`);
    const entry = raw as Record<string, unknown>;
    const kinds = (['url', 'file', 'link'] as const).filter((k) => typeof entry?.[k] === 'string');
    if (kinds.length !== 1) throw invalid(`'${module}' needs exactly one of "url", "file" or "link"`);
    const kind = kinds[0]!;
    const source = entry[kind] as string;
    if (kind === 'url' && !source.startsWith('https://')) throw invalid(`'${module}': only https URLs are fetched`);
    const sha256 = entry.sha256 ?? null;
    if (sha256 !== null && (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/i.test(sha256))) {
      throw invalid(`'${module}': "sha256" must be 64 hex characters`);
    }
    specs.set(module, { kind, source, sha256: sha256?.toLowerCase() ?? null });
  }
  return specs;
}

function localPath(project: string, module: string): string {
  return path.join(project, STORE_DIR, REMOTES_DIR, ...module.split('.')) + '.py';
}

function digest(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function checkPin(module: string, spec: RemoteSpec, data: Buffer): void {
  if (spec.sha256 && digest(data) !== spec.sha256) {
    throw new PorticoError(
      'integrity_failed',
      `Remote module '${module}' does not match its sha256 pin (${spec.sha256.slice(0, 12)}…); refusing to use it. Check the source, update the pin, then run: portico fetch --refresh ${module}`,
    );
  }
}

function download(url: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = get(url, { timeout: FETCH_TIMEOUT_MS }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new PorticoError('remote_unavailable', `Fetching ${url} answered ${res.statusCode}`));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_REMOTE_BYTES) {
          req.destroy(new PorticoError('payload_too_large', `${url} exceeds ${MAX_REMOTE_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => resolve(Buffer.concat(chunks)));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new PorticoError('remote_unavailable', `Fetching ${url} timed out`)));
    req.on('error', (err) =>
      reject(err instanceof PorticoError ? err : new PorticoError('remote_unavailable', `Fetching ${url} failed: ${err.message}`)),
    );
  });
}

/** The answers of `declared` that have arrived, by their promise: read without waiting (remotesNow). */
const settled = new WeakMap<Promise<Map<string, RemoteSpec>>, Map<string, RemoteSpec>>();

/** The project's declared remotes when read already and still current (readRemotes' answer, arrived), else undefined. */
function remotesNow(project: string): Map<string, RemoteSpec> | undefined {
  const answer = declared.get(project);
  return answer && settled.get(answer);
}

/** The declared remote that holds `module` (itself or a package above it), if any. */
function remoteOf(specs: Map<string, RemoteSpec>, module: string): string | undefined {
  for (const name of specs.keys()) if (module === name || module.startsWith(`${name}.`)) return name;
  return undefined;
}

export class RemoteModules {
  /** Fetches in progress, so that concurrent first uses fetch once. */
  private readonly fetching = new Map<string, Promise<void>>();

  /** The declared remotes with their fetch state (GET /v1/project/remotes). */
  async list(project: string): Promise<RemoteInfo[]> {
    const specs = await readRemotes(project);
    return Promise.all(
      [...specs].map(async ([module, spec]) => {
        const file = localPath(project, module);
        const fetched = await lstat(file).then(() => true, () => false);
        return { module, ...spec, path: path.relative(project, file), fetched };
      }),
    );
  }

  /**
   * Makes sure a module that is a declared remote is present and matches its pin before the
   * worker imports it. Modules that are not remotes pass through untouched: without a promise
   * (undefined) when the project's remotes are known already (every REST call by module name asks).
   */
  ensure(project: string, module: string): Promise<void> | undefined {
    const known = remotesNow(project);
    if (known && remoteOf(known, module) === undefined) return undefined;
    return this.ensureRead(project, module);
  }

  private async ensureRead(project: string, module: string): Promise<void> {
    const specs = await readRemotes(project);
    const top = remoteOf(specs, module);
    if (top === undefined) return;
    await this.fetch(project, top, specs.get(top)!, { refresh: false });
  }

  /** Fetches one remote (or verifies the cached copy); `refresh` replaces the cached copy. */
  async fetch(project: string, module: string, spec: RemoteSpec, { refresh }: { refresh: boolean }): Promise<string> {
    const key = `${project}\0${module}`;
    while (this.fetching.has(key)) await this.fetching.get(key)!.catch(() => undefined);
    const file = localPath(project, module);
    const work = (async () => {
      const present = await lstat(file).then(() => true, () => false);
      if (present && !refresh) {
        checkPin(module, spec, await readFile(file)); // a link's target may have changed since
        return;
      }
      await mkdir(path.dirname(file), { recursive: true });
      if (spec.kind === 'link') {
        const target = path.resolve(project, spec.source);
        const data = await readSource(module, target, spec.source);
        checkPin(module, spec, data);
        if (present) await unlink(file);
        await symlink(target, file);
        return;
      }
      const data = spec.kind === 'url' ? await download(spec.source) : await readSource(module, path.resolve(project, spec.source), spec.source);
      checkPin(module, spec, data);
      if (present && (await lstat(file)).isSymbolicLink()) await unlink(file);
      await writeAtomic(file, data);
    })();
    this.fetching.set(key, work);
    try {
      await work;
    } finally {
      this.fetching.delete(key);
    }
    return file;
  }

  /** Fetches every declared remote (or one), for `portico fetch`. */
  async fetchAll(project: string, only: string | undefined, refresh: boolean): Promise<Array<{ module: string; path: string }>> {
    const specs = await readRemotes(project);
    if (only !== undefined && !specs.has(only)) throw new PorticoError('not_found', `'${only}' is not a remote declared in ${REMOTES_FILE}`);
    const out = [];
    for (const [module, spec] of specs) {
      if (only !== undefined && module !== only) continue;
      out.push({ module, path: await this.fetch(project, module, spec, { refresh }) });
    }
    return out;
  }
}

/** The bytes of `file`; the error names it as portico.json declares it (`declared`), never by its absolute path. */
async function readSource(module: string, file: string, declared: string): Promise<Buffer> {
  try {
    if (!(await stat(file)).isFile()) throw new Error('not a file');
    return await readFile(file);
  } catch {
    throw new PorticoError('remote_unavailable', `Remote module '${module}': source file ${declared} (in ${REMOTES_FILE}) cannot be read`);
  }
}
