/**
 * Installs the prebuilt extension folder into a Jupyter data directory the way JupyterLab
 * expects (`<data dir>/labextensions/@portico/labextension/` with package.json, static/,
 * schemas/ and install.json), and removes exactly what it installed. A manifest inside the
 * installed folder records its files and the directories the install had to create, so an
 * uninstall leaves the data directory as it found it.
 */
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const PACKAGE_NAME = '@portico/labextension';
/** Written by the installer next to the extension; JupyterLab shows it in `jupyter labextension list`. */
export const INSTALL_JSON = 'install.json';
/** The installer's own record inside the installed folder. */
export const MANIFEST = '.portico-lab.json';

export const INSTALL_INFO = {
  packageManager: 'npm',
  packageName: PACKAGE_NAME,
  uninstallInstructions: 'Run `npx portico-lab uninstall` (with the --user, --sys-prefix or --prefix option used to install)',
} as const;

export interface Manifest {
  name: string;
  version: string;
  /** `jupyterlab._build.load` of the installed build: `static/remoteEntry.<hash>.js`. */
  build: string;
  installedAt: string;
  /** Files written, relative to the installed folder, `/`-separated. */
  files: string[];
  /** Directories above the installed folder that the first install created, deepest first. */
  createdDirs: string[];
}

/** What a prebuilt folder's package.json says about it. */
export interface BuildInfo {
  name: string;
  version: string;
  /** `jupyterlab._build.load`; changes with every change to the bundle. */
  build: string;
}

/** One copy of the extension in a data directory. */
export interface InstalledCopy {
  dataDir: string;
  dir: string;
  /** Null when the folder has no readable built package.json. */
  info: BuildInfo | null;
  /** Installed by this installer (it has our manifest). */
  managed: boolean;
  /** A symlink (e.g. a development link) rather than a folder. */
  symlink: boolean;
}

export type InstallErrorCode = 'not_built' | 'exists' | 'not_managed';

export class InstallError extends Error {
  override readonly name = 'InstallError';
  constructor(
    readonly code: InstallErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** `<data dir>/labextensions/@portico/labextension`. */
export function extensionDir(dataDir: string): string {
  return path.join(dataDir, 'labextensions', ...PACKAGE_NAME.split('/'));
}

/** Reads a built extension folder's package.json; null when it is not one. */
export function readBuildInfo(dir: string): BuildInfo | null {
  try {
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
      name?: unknown;
      version?: unknown;
      jupyterlab?: { _build?: { load?: unknown } };
    };
    const load = pkg.jupyterlab?._build?.load;
    if (typeof pkg.name !== 'string' || typeof pkg.version !== 'string' || typeof load !== 'string') return null;
    return { name: pkg.name, version: pkg.version, build: load };
  } catch {
    return null;
  }
}

function readManifest(dir: string): Manifest | null {
  try {
    return JSON.parse(readFileSync(path.join(dir, MANIFEST), 'utf8')) as Manifest;
  } catch {
    return null;
  }
}

function lexists(target: string): boolean {
  try {
    lstatSync(target);
    return true;
  } catch {
    return false;
  }
}

/** Files under `dir`, relative and `/`-separated, sorted. */
function listFiles(dir: string, prefix = ''): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) files.push(...listFiles(path.join(dir, entry.name), rel));
    else files.push(rel);
  }
  return files.sort();
}

/** The directories `mkdir -p dir` would create, deepest first. */
function missingDirs(dir: string): string[] {
  const missing: string[] = [];
  let current = path.resolve(dir);
  while (!lexists(current)) {
    missing.push(current);
    const parent = path.dirname(current);
    if (parent === current) break;
    current = parent;
  }
  return missing;
}

/** The copy in `dataDir`, if there is one. */
export function inspect(dataDir: string): InstalledCopy | null {
  const dir = extensionDir(dataDir);
  if (!lexists(dir)) return null;
  return {
    dataDir,
    dir,
    info: readBuildInfo(dir),
    managed: readManifest(dir) !== null,
    symlink: lstatSync(dir).isSymbolicLink(),
  };
}

export interface InstallResult {
  dir: string;
  info: BuildInfo;
  /** A previous copy was replaced. */
  replaced: boolean;
  /** Directories this install (or the first of the installs it replaced) created. */
  createdDirs: string[];
}

/**
 * Copies the prebuilt folder `source` to `extensionDir(dataDir)` and writes install.json.
 * A previous copy made by this installer is replaced; any other copy only with `force`. The
 * new copy is assembled beside the old one and renamed into place, so JupyterLab never sees a
 * half-copied folder. `source` is resolved once (the build links ./labextension to its newest
 * build, swapped as a build completes): the whole copy comes from one build, even while another
 * is being made.
 */
export function install(givenSource: string, dataDir: string, options: { force?: boolean; now?: Date } = {}): InstallResult {
  const source = lexists(givenSource) ? realpathSync(givenSource) : givenSource;
  const info = readBuildInfo(source);
  if (!info || info.name !== PACKAGE_NAME) {
    throw new InstallError('not_built', `No prebuilt ${PACKAGE_NAME} at ${givenSource}: build it first (npm run build -w packages/labextension)`);
  }
  const target = extensionDir(dataDir);
  const previous = lexists(target) ? readManifest(target) : null;
  if (lexists(target) && !previous && !options.force) {
    throw new InstallError('exists', `${target} exists and was not installed by portico-lab: remove it, or pass --force to replace it`);
  }
  const parent = path.dirname(target);
  const createdDirs = previous?.createdDirs ?? missingDirs(parent);
  mkdirSync(parent, { recursive: true });

  const staging = path.join(parent, `.${path.basename(target)}.portico-lab-${process.pid}`);
  const backup = `${staging}.old`;
  rmSync(staging, { recursive: true, force: true });
  rmSync(backup, { recursive: true, force: true });
  try {
    cpSync(source, staging, { recursive: true });
    rmSync(path.join(staging, MANIFEST), { force: true });
    writeFileSync(path.join(staging, INSTALL_JSON), `${JSON.stringify(INSTALL_INFO, null, 2)}\n`);
    const manifest: Manifest = {
      name: info.name,
      version: info.version,
      build: info.build,
      installedAt: (options.now ?? new Date()).toISOString(),
      files: listFiles(staging),
      createdDirs,
    };
    writeFileSync(path.join(staging, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
    const replaced = lexists(target);
    if (replaced) renameSync(target, backup);
    renameSync(staging, target);
    rmSync(backup, { recursive: true, force: true });
    return { dir: target, info, replaced, createdDirs };
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    if (!lexists(target) && lexists(backup)) renameSync(backup, target);
    throw err;
  }
}

export interface UninstallResult {
  dir: string;
  /** Files or folders left in place because the install did not create them. */
  leftovers: string[];
  /** Directories removed above the extension folder (ones the install had created). */
  removedDirs: string[];
}

/**
 * Removes the copy in `dataDir` that this installer made: its files, its folder once empty,
 * and the directories the install created, each only if empty. Returns null when there is no
 * copy; refuses a copy it did not make unless `force` (then the folder is removed whole).
 */
export function uninstall(dataDir: string, options: { force?: boolean } = {}): UninstallResult | null {
  const target = extensionDir(dataDir);
  if (!lexists(target)) return null;
  const manifest = readManifest(target);
  if (!manifest) {
    if (!options.force) throw new InstallError('not_managed', `${target} was not installed by portico-lab: remove it by hand, or pass --force`);
    rmSync(target, { recursive: true, force: true });
    return { dir: target, leftovers: [], removedDirs: [] };
  }
  for (const file of [...manifest.files, MANIFEST]) {
    try {
      unlinkSync(path.join(target, ...file.split('/')));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  // Folders inside, deepest first, then the extension folder and the directories above it.
  const inner = new Set<string>();
  for (const file of manifest.files) {
    const parts = file.split('/');
    for (let i = parts.length - 1; i > 0; i -= 1) inner.add(parts.slice(0, i).join('/'));
  }
  const innerDirs = [...inner].sort((a, b) => b.split('/').length - a.split('/').length).map((rel) => path.join(target, ...rel.split('/')));
  const removedDirs: string[] = [];
  for (const dir of [...innerDirs, target, ...manifest.createdDirs]) {
    try {
      rmdirSync(dir);
      if (manifest.createdDirs.includes(dir)) removedDirs.push(dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    }
  }
  const leftovers = existsSync(target) ? listFiles(target) : [];
  return { dir: target, leftovers, removedDirs };
}
