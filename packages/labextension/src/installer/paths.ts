/**
 * Where Jupyter data directories are, found without Python where possible. JupyterLab loads
 * prebuilt extensions from `<data dir>/labextensions/<package name>/` in every data directory,
 * in order; the first copy of a name wins. The authority is `jupyter --paths --json`; when
 * jupyter cannot be run, the rules of jupyter_core's `jupyter_data_dir()` and `SYSTEM_JUPYTER_PATH`
 * are followed here.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Where to install: what `--user`, `--sys-prefix`, `--prefix P` and `--data-dir D` select; `auto` without a flag. */
export type Scope =
  | { kind: 'auto' }
  | { kind: 'user' }
  | { kind: 'sys-prefix' }
  | { kind: 'prefix'; prefix: string }
  | { kind: 'data-dir'; dir: string };

/** What the resolution reads from the machine; tests pass their own. */
export interface Environment {
  env: NodeJS.ProcessEnv;
  platform: NodeJS.Platform;
  homedir: string;
  /** The `data` list of `jupyter --paths --json`, or null when jupyter cannot be run. */
  jupyterDataPaths(): string[] | null;
  /** The path of an executable on PATH, or null. */
  which(name: string): string | null;
  /** Whether `dir` could be written: it, or its nearest existing ancestor, is a writable directory. */
  isWritable(dir: string): boolean;
}

/** How long `jupyter --paths --json` may take (a cold Python start on a slow disk). */
export const JUPYTER_PATHS_TIMEOUT_MS = 30_000;

function pathApi(platform: NodeJS.Platform): path.PlatformPath {
  return platform === 'win32' ? path.win32 : path.posix;
}

/** The machine this process runs on. */
export function systemEnvironment(env: NodeJS.ProcessEnv = process.env): Environment {
  const platform = process.platform;
  const which = (name: string): string | null => {
    const exts = platform === 'win32' ? (env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';') : [''];
    for (const dir of (env.PATH ?? '').split(path.delimiter)) {
      if (!dir) continue;
      for (const ext of exts) {
        const candidate = path.join(dir, name + ext);
        try {
          if (statSync(candidate).isFile()) {
            if (platform !== 'win32') accessSync(candidate, constants.X_OK);
            return candidate;
          }
        } catch {
          // not here
        }
      }
    }
    return null;
  };
  let cached: string[] | null | undefined;
  return {
    env,
    platform,
    homedir: os.homedir(),
    which,
    jupyterDataPaths() {
      if (cached !== undefined) return cached;
      cached = null;
      const jupyter = which('jupyter');
      if (!jupyter) return cached;
      try {
        const text = execFileSync(jupyter, ['--paths', '--json'], {
          env,
          encoding: 'utf8',
          timeout: JUPYTER_PATHS_TIMEOUT_MS,
          stdio: ['ignore', 'pipe', 'ignore'],
        });
        const data = (JSON.parse(text) as { data?: unknown }).data;
        if (Array.isArray(data) && data.every((item) => typeof item === 'string')) cached = data;
      } catch {
        // jupyter is broken or not a Jupyter: fall back to the rules below
      }
      return cached;
    },
    isWritable(dir) {
      let current = path.resolve(dir);
      for (;;) {
        if (existsSync(current)) {
          try {
            accessSync(current, constants.W_OK);
            return statSync(current).isDirectory();
          } catch {
            return false;
          }
        }
        const parent = path.dirname(current);
        if (parent === current) return false;
        current = parent;
      }
    },
  };
}

/**
 * The per-user data directory, as jupyter_core's `jupyter_data_dir()`: JUPYTER_DATA_DIR, else
 * `%APPDATA%\jupyter` on Windows, `~/Library/Jupyter` on macOS, `$XDG_DATA_HOME/jupyter` or
 * `~/.local/share/jupyter` elsewhere.
 */
export function userDataDir({ env, platform, homedir }: Pick<Environment, 'env' | 'platform' | 'homedir'>): string {
  const p = pathApi(platform);
  if (env.JUPYTER_DATA_DIR) return p.resolve(env.JUPYTER_DATA_DIR);
  if (platform === 'win32') return p.join(env.APPDATA || p.join(homedir, 'AppData', 'Roaming'), 'jupyter');
  if (platform === 'darwin') return p.join(homedir, 'Library', 'Jupyter');
  return p.join(env.XDG_DATA_HOME || p.join(homedir, '.local', 'share'), 'jupyter');
}

/** The system-wide data directories, as jupyter_core's `SYSTEM_JUPYTER_PATH`. */
export function systemDataDirs({ env, platform }: Pick<Environment, 'env' | 'platform'>): string[] {
  if (platform === 'win32') return env.PROGRAMDATA ? [path.win32.join(env.PROGRAMDATA, 'jupyter')] : [];
  return ['/usr/local/share/jupyter', '/usr/share/jupyter'];
}

/** The data directory of a Python prefix (what `pip install --prefix P` uses). */
export function prefixDataDir(prefix: string, platform: NodeJS.Platform = process.platform): string {
  const p = pathApi(platform);
  return p.join(p.resolve(prefix), 'share', 'jupyter');
}

/**
 * The prefix of the active Python environment: VIRTUAL_ENV, CONDA_PREFIX, else the environment
 * that holds the `jupyter` on PATH (`<prefix>/bin/jupyter`, or `<prefix>\Scripts\jupyter.exe`).
 */
export function environmentPrefix(environment: Environment): { prefix: string; how: string } | null {
  const { env, platform } = environment;
  if (env.VIRTUAL_ENV) return { prefix: env.VIRTUAL_ENV, how: 'VIRTUAL_ENV' };
  if (env.CONDA_PREFIX) return { prefix: env.CONDA_PREFIX, how: 'CONDA_PREFIX' };
  const jupyter = environment.which('jupyter');
  if (jupyter) {
    const p = pathApi(platform);
    return { prefix: p.dirname(p.dirname(jupyter)), how: `the environment of ${jupyter}` };
  }
  return null;
}

export class PathError extends Error {
  override readonly name = 'PathError';
}

/**
 * The data directory to install into, and how it was chosen.
 * - `auto`: the first writable entry of `jupyter --paths --json` (in a virtualenv or conda env,
 *   that is the environment's own, as `pip install` would use), else JUPYTER_DATA_DIR, else the
 *   active environment (VIRTUAL_ENV, CONDA_PREFIX), else the user directory;
 * - `user`: the per-user directory (JUPYTER_DATA_DIR when set);
 * - `sys-prefix`: `<prefix>/share/jupyter` of the active environment;
 * - `prefix`: `<P>/share/jupyter`; `data-dir`: D itself.
 */
export function resolveDataDir(scope: Scope, environment: Environment): { dir: string; how: string } {
  const p = pathApi(environment.platform);
  switch (scope.kind) {
    case 'data-dir':
      return { dir: p.resolve(scope.dir), how: '--data-dir' };
    case 'prefix':
      return { dir: prefixDataDir(scope.prefix, environment.platform), how: '--prefix' };
    case 'user':
      return { dir: userDataDir(environment), how: environment.env.JUPYTER_DATA_DIR ? 'JUPYTER_DATA_DIR' : 'the user data directory' };
    case 'sys-prefix': {
      const found = environmentPrefix(environment);
      if (!found) throw new PathError('No Python environment found (no VIRTUAL_ENV, CONDA_PREFIX or jupyter on PATH): use --prefix or --user');
      return { dir: prefixDataDir(found.prefix, environment.platform), how: found.how };
    }
    case 'auto': {
      const listed = environment.jupyterDataPaths();
      const writable = listed?.find((dir) => environment.isWritable(dir));
      if (writable) return { dir: p.resolve(writable), how: '`jupyter --paths --json`' };
      if (environment.env.JUPYTER_DATA_DIR) return { dir: p.resolve(environment.env.JUPYTER_DATA_DIR), how: 'JUPYTER_DATA_DIR' };
      const active = environment.env.VIRTUAL_ENV ?? environment.env.CONDA_PREFIX;
      if (active) return { dir: prefixDataDir(active, environment.platform), how: environment.env.VIRTUAL_ENV ? 'VIRTUAL_ENV' : 'CONDA_PREFIX' };
      return { dir: userDataDir(environment), how: 'the user data directory' };
    }
  }
}

/**
 * Every data directory JupyterLab may load extensions from, in its order: `jupyter --paths
 * --json` when it runs, else JUPYTER_PATH, the active environment, the user and the system
 * directories.
 */
export function searchDataDirs(environment: Environment): string[] {
  const p = pathApi(environment.platform);
  const listed = environment.jupyterDataPaths();
  const dirs = listed ?? [
    ...(environment.env.JUPYTER_PATH ?? '').split(p.delimiter).filter(Boolean),
    ...(environmentPrefix(environment) ? [prefixDataDir(environmentPrefix(environment)!.prefix, environment.platform)] : []),
    userDataDir(environment),
    ...systemDataDirs(environment),
  ];
  return [...new Set(dirs.map((dir) => p.resolve(dir)))];
}
