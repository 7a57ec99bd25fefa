/**
 * `portico-lab`: install, uninstall and inspect the prebuilt JupyterLab extension without pip.
 * Plain Node, no dependencies. `main()` returns the exit code: 0 done, 1 failed (or, for
 * status, not installed or not current), 2 usage.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { inspect, install, InstallError, PACKAGE_NAME, readBuildInfo, uninstall, type InstalledCopy } from './install.js';
import { PathError, resolveDataDir, searchDataDirs, systemEnvironment, type Environment, type Scope } from './paths.js';

export const USAGE = `Usage: portico-lab <command> [where]

Commands:
  install     copy the prebuilt extension into a Jupyter data directory and write install.json
  uninstall   remove what install put there (every copy it made, unless [where] picks one)
  status      list the copies JupyterLab would see and whether the active one is current

Where (at most one; default: the first writable data directory of \`jupyter --paths --json\`,
else JUPYTER_DATA_DIR, else the active virtualenv or conda env, else the user directory):
  --user            the per-user data directory (JUPYTER_DATA_DIR when set)
  --sys-prefix      <prefix>/share/jupyter of the active Python environment
  --prefix P        P/share/jupyter
  --data-dir D      D itself

Options:
  --force           install over, or uninstall, a copy that portico-lab did not make
  -h, --help        this text
`;

/** The prebuilt folder of this package (built by `npm run build`). */
export const DEFAULT_SOURCE = fileURLToPath(new URL('../../labextension', import.meta.url));

export interface Io {
  out(line: string): void;
  err(line: string): void;
  environment: Environment;
  /** The prebuilt extension folder to install. */
  source: string;
}

const defaultIo = (): Io => ({
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  environment: systemEnvironment(),
  source: DEFAULT_SOURCE,
});

class UsageError extends Error {}

function parse(argv: string[]): { command: string | undefined; scope: Scope | null; force: boolean; help: boolean } {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      user: { type: 'boolean' },
      'sys-prefix': { type: 'boolean' },
      prefix: { type: 'string' },
      'data-dir': { type: 'string' },
      force: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const scopes: Scope[] = [];
  if (values.user) scopes.push({ kind: 'user' });
  if (values['sys-prefix']) scopes.push({ kind: 'sys-prefix' });
  if (values.prefix !== undefined) scopes.push({ kind: 'prefix', prefix: values.prefix });
  if (values['data-dir'] !== undefined) scopes.push({ kind: 'data-dir', dir: values['data-dir'] });
  if (scopes.length > 1) throw new UsageError('Give at most one of --user, --sys-prefix, --prefix, --data-dir');
  if (positionals.length > 1) throw new UsageError(`Unexpected argument '${positionals[1]}'`);
  return { command: positionals[0], scope: scopes[0] ?? null, force: values.force ?? false, help: values.help ?? false };
}

function describe(copy: InstalledCopy, current: string | null): string {
  const version = copy.info ? copy.info.version : '(no build)';
  const state = !copy.info ? 'broken' : current === null ? 'unknown' : copy.info.build === current ? 'current' : 'outdated';
  const origin = copy.symlink ? 'symlink' : copy.managed ? 'portico-lab' : 'not portico-lab';
  return `${copy.dir}  ${version}  ${state}  (${origin})`;
}

function runInstall(io: Io, scope: Scope, force: boolean): number {
  const { dir: dataDir, how } = resolveDataDir(scope, io.environment);
  const result = install(io.source, dataDir, { force });
  io.out(`${result.replaced ? 'Replaced' : 'Installed'} ${PACKAGE_NAME} ${result.info.version} in ${result.dir}`);
  io.out(`  data directory ${dataDir} (from ${how})`);
  if (result.createdDirs.length) io.out(`  created ${[...result.createdDirs].reverse().join(', ')} (uninstall removes what is left empty)`);
  const searched = io.environment.jupyterDataPaths();
  if (searched && !searched.map((dir) => path.resolve(dir)).includes(dataDir)) {
    io.out(`  note: the jupyter on PATH does not look in ${dataDir}; add it to JUPYTER_PATH or install with another option`);
  }
  io.out('Reload JupyterLab to load it; `jupyter labextension list` shows it.');
  return 0;
}

function runUninstall(io: Io, scope: Scope | null, force: boolean): number {
  const dataDirs = scope ? [resolveDataDir(scope, io.environment).dir] : searchDataDirs(io.environment);
  let removed = 0;
  let failed = 0;
  for (const dataDir of dataDirs) {
    const copy = inspect(dataDir);
    if (!copy) continue;
    if (!copy.managed && !scope) {
      io.out(`Left ${copy.dir}: not installed by portico-lab`);
      continue;
    }
    try {
      const result = uninstall(dataDir, { force });
      if (!result) continue;
      removed += 1;
      io.out(`Removed ${result.dir}`);
      if (result.removedDirs.length) io.out(`  and ${result.removedDirs.join(', ')}, which install had created`);
      if (result.leftovers.length) io.out(`  left ${result.leftovers.length} file(s) it did not install: ${result.leftovers.join(', ')}`);
    } catch (err) {
      if (!(err instanceof InstallError)) throw err;
      failed += 1;
      io.err(err.message);
    }
  }
  if (removed === 0 && failed === 0) io.out(`${PACKAGE_NAME} is not installed${scope ? ` in ${dataDirs[0]}` : ''}`);
  return failed ? 1 : 0;
}

function runStatus(io: Io, scope: Scope | null): number {
  const source = readBuildInfo(io.source);
  io.out(source ? `${PACKAGE_NAME} ${source.version}, build ${source.build} (${io.source})` : `${PACKAGE_NAME}: no prebuilt folder at ${io.source} (run npm run build)`);
  const dataDirs = scope ? [resolveDataDir(scope, io.environment).dir] : searchDataDirs(io.environment);
  const copies = dataDirs.map((dir) => inspect(dir)).filter((copy): copy is InstalledCopy => copy !== null);
  if (copies.length === 0) {
    io.out(`Not installed (looked in ${dataDirs.map((dir) => path.join(dir, 'labextensions')).join(', ')})`);
    return 1;
  }
  copies.forEach((copy, index) => {
    const role = scope ? '' : index === 0 ? '  active' : '  shadowed by the first';
    io.out(`  ${describe(copy, source?.build ?? null)}${role}`);
  });
  const active = copies[0]!;
  return source && active.info?.build === source.build ? 0 : 1;
}

/** Runs the CLI with `argv` (without node and the script); resolves to the exit code. */
export function main(argv: string[], io: Io = defaultIo()): number {
  try {
    const { command, scope, force, help } = parse(argv);
    if (help || command === 'help') {
      io.out(USAGE);
      return 0;
    }
    switch (command) {
      case 'install':
        return runInstall(io, scope ?? { kind: 'auto' }, force);
      case 'uninstall':
        return runUninstall(io, scope, force);
      case 'status':
        return runStatus(io, scope);
      default:
        throw new UsageError(command ? `Unknown command '${command}'` : 'No command given');
    }
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.err(`portico-lab: ${(err as Error).message}\n`);
      io.err(USAGE);
      return 2;
    }
    if (err instanceof InstallError || err instanceof PathError) {
      io.err(`portico-lab: ${err.message}`);
      return 1;
    }
    throw err;
  }
}
