/**
 * `portico get`, `portico reindex`, `portico index copy` and `portico fetch`: the index and remotes from the command
 * line. `get` goes through the gateway serving the project (found through the index lock, which
 * says where its holder listens) or the one --url names; with none, it runs the same service layer
 * as the gateway in this process (taking the project's index lock meanwhile).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { defaultOptions } from '../config/options.js';
import { PorticoError, type Issue } from '../errors.js';
import { shellQuote } from '../service/cli-line.js';
import { Gateway } from '../service/gateway.js';
import { RemoteModules } from '../service/remotes.js';
import { copyIndex } from '../store/copy.js';
import { lockHolder, readRecordFiles, STORE_DIR } from '../store/files.js';
import { INDEX_DIR, LowdbStore } from '../store/lowdb-store.js';
import { isPostgresUrl, PostgresIndex, PostgresStore } from '../store/postgres/postgres-store.js';
import type { Store } from '../store/store.js';
import { storeOption, UsageError } from './options.js';

/** A CLI version word: `~name`, `~name(args)`, `a.b=value`, or a JSON object. */
export function parseVersionWord(word: string): unknown {
  if (word.trimStart().startsWith('{')) {
    try {
      return JSON.parse(word);
    } catch (err) {
      throw new UsageError(`version item ${word} is not valid JSON: ${(err as Error).message}`);
    }
  }
  return word;
}

/** `portico get` options (its --help). */
export const GET_OPTIONS = [
  { flag: '--project P', help: 'The project directory.', default: '.', env: 'PORTICO_PROJECT' },
  { flag: '--url URL', help: 'Go through the gateway at URL.', default: 'the gateway serving the project, if one does' },
  { flag: '--token T', help: 'The api or session token of the gateway.', env: 'PORTICO_API_TOKEN' },
  { flag: '--user U', help: 'created_by of a new record.', default: 'the OS user' },
  { flag: '--python PY', help: 'Interpreter that resolves the config (when no gateway serves the project).', default: 'python3', env: 'PORTICO_PYTHON' },
  { flag: '--store S', help: "The project's index: embedded, or the postgres:// URL its gateways use.", default: 'embedded', env: 'PORTICO_STORE' },
];

/** `portico fetch` options (its --help). */
export const FETCH_OPTIONS = [
  { flag: '--project P', help: 'The project directory.', default: '.' },
  { flag: '--refresh', help: 'Fetch again even when a copy is there.', default: 'off' },
];

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** What `get` says about a failure: the error's code and message, the issues that add to it, then what to do. */
function printError(error: { code: string; message: string; issues?: Issue[] | undefined }, hints: string[] = []): void {
  const lines = [`portico get: ${error.code}: ${error.message}`];
  for (const issue of error.issues ?? []) if (issue.message !== error.message) lines.push(`  ${issue.path ?? '(version)'}: ${issue.message}`);
  for (const hint of hints) lines.push(`  ${hint}`);
  process.stderr.write(`${lines.join('\n')}\n`);
}

/** The demo project of a repository checkout (examples/demo), when this CLI runs from one. */
const DEMO = fileURLToPath(new URL('../../../../examples/demo', import.meta.url));

/**
 * What to do about a module the project lacks, when the folder looks like no project (no Python
 * module, no portico.json at its top): which folder was looked in, --project, and the demo. In a
 * project, the error's own list of its modules says enough.
 */
function unknownModuleHints(module: string, project: string, named: boolean): string[] {
  const names = (() => {
    try {
      return readdirSync(project);
    } catch {
      return [];
    }
  })();
  if (names.some((name) => name.endsWith('.py') || name === 'portico.json')) return [];
  const where = named ? `The project folder ${project}` : `The current folder (${project})`;
  const hints = [`${where} has no interface module '${module}'. Name the project with --project P (or PORTICO_PROJECT).`];
  if (existsSync(DEMO) && project !== DEMO) {
    const relative = path.relative(process.cwd(), DEMO);
    const demo = relative.startsWith('..') ? DEMO : relative || '.';
    const file = path.join(DEMO, ...module.split('.'));
    const has = existsSync(`${file}.py`) || existsSync(path.join(file, '__init__.py'));
    hints.push(has ? `The demo project ${demo} has it: ${['portico', 'get', module, '--project', demo].map(shellQuote).join(' ')}` : `The demo project is ${demo} (--project ${shellQuote(demo)}).`);
  }
  return hints;
}

interface GetRequest {
  module: string;
  version: unknown[];
  project: string;
  /** Whether --project (or PORTICO_PROJECT) named the project. */
  named: boolean;
  user?: string | undefined;
  token?: string | undefined;
}

/**
 * `get` through the gateway at `url`: POST /v1/interfaces, the InterfaceInfo printed, or the error
 * in sentences. `sendProject`: bind `request.project` (X-Service-Project) rather than the gateway's own.
 */
async function getThrough(url: string, request: GetRequest, sendProject: boolean): Promise<number> {
  const { module, version, project, user, token } = request;
  const res = await fetch(new URL('/v1/interfaces', url), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(sendProject ? { 'x-service-project': project } : {}),
      ...(user ? { 'x-service-user': user } : {}),
    },
    body: JSON.stringify({ target: module, version }),
  }).catch((err: Error) => err);
  if (res instanceof Error) {
    process.stderr.write(`portico get: cannot reach a gateway at ${url} (${(res.cause as Error | undefined)?.message ?? res.message}): is \`portico serve\` running there?\n`);
    return 1;
  }
  const text = await res.text();
  let body: { code?: string; message?: string; detail?: unknown; issues?: Issue[] } | undefined;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: not a Portico gateway (refused below)
  }
  if (res.ok && body) {
    print(body);
    return 0;
  }
  if (!body?.code || typeof body.message !== 'string') {
    process.stderr.write(`portico get: ${url} answered ${res.status} ${res.statusText || ''}`.trimEnd() + ', not as a Portico gateway does: is it the address `portico serve` printed (http://host:port)?\n');
    return 1;
  }
  // Every error body has code and message at its top level; issues beside them, or in a 400's structured detail.
  const issues = body.issues ?? (body.detail as { issues?: Issue[] } | undefined)?.issues;
  const hints =
    body.code === 'unknown_module' && sendProject // (without it, the module was looked for in the gateway's own project)
      ? unknownModuleHints(module, project, request.named)
      : body.code === 'unauthorized'
        ? [`The gateway at ${url} needs a token: pass --token T, or set PORTICO_API_TOKEN.`]
        : [];
  printError({ code: body.code, message: body.message, issues: Array.isArray(issues) ? issues : undefined }, hints);
  return 1;
}

export async function get(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      project: { type: 'string' },
      url: { type: 'string' },
      token: { type: 'string' },
      user: { type: 'string' },
      python: { type: 'string' },
      store: { type: 'string' },
    },
  });
  const [module, ...words] = positionals;
  if (!module) throw new UsageError('get needs a MODULE');
  const named = values.project ?? (process.env.PORTICO_PROJECT || undefined);
  const request: GetRequest = {
    module,
    version: words.map(parseVersionWord),
    project: path.resolve(named ?? process.cwd()),
    named: named !== undefined,
    user: values.user,
    token: values.token ?? (process.env.PORTICO_API_TOKEN || undefined),
  };
  if (values.url) return getThrough(values.url, request, values.project !== undefined);
  if (!existsSync(request.project) || !statSync(request.project).isDirectory()) throw new UsageError(`Project directory '${request.project}' does not exist`);
  request.project = await realpath(request.project);

  const store = storeOption(values.store ?? process.env.PORTICO_STORE ?? 'embedded');
  const portico = path.join(request.project, STORE_DIR);
  if (store === undefined) {
    // A gateway serving the project holds its index, and says where it listens: go through it.
    const holder = await lockHolder(path.join(portico, INDEX_DIR));
    if (holder?.url && !holder.stopping) return getThrough(holder.url, request, true);
  }
  // Opening the index makes .portico/: a get that creates nothing leaves no folder it made behind.
  const fresh = !existsSync(portico);
  let code = 1;
  try {
    code = await getHere(request, store, values.python ?? process.env.PORTICO_PYTHON ?? 'python3');
  } finally {
    if (fresh && code !== 0) await rm(portico, { recursive: true, force: true });
  }
  return code;
}

/** `get` in this process: the service layer on the project's index (its lock taken while it runs). */
async function getHere(request: GetRequest, store: string | undefined, python: string): Promise<number> {
  const gateway = await withStoreErrors('get', () => Gateway.create(defaultOptions({ project: request.project, store, python, log: () => {} })));
  if (!gateway) return 1;
  try {
    const ctx = await gateway.bind({ user: request.user });
    // As POST /v1/interfaces answers it, cached included.
    const [info] = await gateway.executions.withCached(ctx, [await gateway.interfaces.create(ctx, { target: request.module, version: request.version })]);
    print(info);
    return 0;
  } catch (err) {
    if (!(err instanceof PorticoError)) throw err;
    printError(err, err.code === 'unknown_module' ? unknownModuleHints(request.module, request.project, request.named) : []);
    return 1;
  } finally {
    await gateway.close();
  }
}

/** `portico reindex` options (its --help). */
export const REINDEX_OPTIONS = [{ flag: '--store S', help: 'The index to rebuild: embedded, or a postgres:// URL.', default: 'embedded', env: 'PORTICO_STORE' }];

export async function reindex(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { store: { type: 'string' } } });
  const store = storeOption(values.store ?? process.env.PORTICO_STORE ?? 'embedded');
  const project = await realpath(path.resolve(positionals[0] ?? process.cwd()));
  const count = await withStoreErrors('reindex', async () => {
    if (store === undefined) return LowdbStore.reindex(project);
    const index = PostgresIndex.connect(store);
    try {
      return await (await index.open(project)).replaceAll(await readRecordFiles(project));
    } finally {
      await index.close();
    }
  });
  if (count === undefined) return 1;
  process.stdout.write(`Indexed ${count} interface${count === 1 ? '' : 's'} of ${project}\n`);
  return 0;
}

/** `portico index copy` options (its --help). */
export const INDEX_COPY_OPTIONS = [
  { flag: '--from S', help: 'The source: a project directory (its embedded index) or a postgres:// URL.' },
  { flag: '--to S', help: 'The target: a project directory or a postgres:// URL.' },
  { flag: '--project P', help: 'The project the records belong to in PostgreSQL.', default: 'the directory of --from or --to' },
];

/** Runs a store command; a PorticoError (lock held, database unreachable) is printed and yields undefined. */
async function withStoreErrors<T>(command: string, work: () => Promise<T>): Promise<T | undefined> {
  try {
    return await work();
  } catch (err) {
    if (!(err instanceof PorticoError)) throw err;
    process.stderr.write(`portico ${command}: ${err.code}: ${err.forOperator}\n`);
    return undefined;
  }
}

export async function indexCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== 'copy') throw new UsageError(`index takes the subcommand copy, got '${sub ?? ''}'`);
  const { values } = parseArgs({ args: rest, options: { from: { type: 'string' }, to: { type: 'string' }, project: { type: 'string' } } });
  if (!values.from || !values.to) throw new UsageError('index copy needs --from and --to');
  const ends = [values.from, values.to];
  const dirs = ends.filter((end) => !isPostgresUrl(end));
  if (dirs.length === 2) throw new UsageError('index copy moves an index into or out of PostgreSQL: one of --from and --to must be a postgres:// URL');
  const projectText = values.project ?? dirs[0];
  if (!projectText) throw new UsageError('index copy between two databases needs --project');
  const project = await realpath(path.resolve(projectText)).catch(() => {
    throw new UsageError(`Project directory '${path.resolve(projectText)}' does not exist`);
  });
  const opened: Array<{ store: Store; close: () => Promise<void> }> = [];
  const open = async (end: string) => {
    if (!isPostgresUrl(end)) {
      if ((await realpath(path.resolve(end))) !== project) throw new UsageError(`--project must be the directory given (${end}) when one is given`);
      const store = await LowdbStore.open(project);
      opened.push({ store, close: () => store.close() });
      return store;
    }
    const index = PostgresIndex.connect(storeOption(end)!);
    opened.push({ store: new PostgresStore(index, project), close: () => index.close() });
    await index.ready();
    return opened.at(-1)!.store;
  };
  const done = await withStoreErrors('index copy', async () => {
    try {
      const [from, to] = [await open(values.from!), await open(values.to!)];
      return await copyIndex(from, to, ({ read, created, updated }) => process.stderr.write(`  ${read} read, ${created} created, ${updated} updated\n`));
    } finally {
      for (const { close } of opened.reverse()) await close();
    }
  });
  if (!done) return 1;
  process.stdout.write(`Copied the index of ${project}: ${done.read} records, ${done.created} new, ${done.updated} updated, ${done.read - done.created - done.updated} already there\n`);
  return 0;
}

export async function fetchRemotes(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { project: { type: 'string' }, refresh: { type: 'boolean' } },
  });
  // No gateway and no index: fetching only writes .portico/remotes, so it works beside a running gateway.
  const project = await realpath(path.resolve(values.project ?? process.cwd()));
  try {
    const fetched = await new RemoteModules().fetchAll(project, positionals[0], values.refresh ?? false);
    for (const { module, path: file } of fetched) process.stdout.write(`${module}\t${path.relative(process.cwd(), file)}\n`);
    if (!fetched.length) process.stdout.write('No remotes declared in portico.json\n');
    return 0;
  } catch (err) {
    if (!(err instanceof PorticoError)) throw err;
    process.stderr.write(`portico fetch: ${err.code}: ${err.forOperator}\n`);
    return 1;
  }
}
