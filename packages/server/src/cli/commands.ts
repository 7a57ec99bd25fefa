/**
 * `portico get`, `portico reindex`, `portico index copy` and `portico fetch`: the index and remotes from the command
 * line. `get` runs the same service layer as the gateway, in-process (it takes the project's
 * index lock), or talks to a running gateway with --url.
 */
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { defaultOptions } from '../config/options.js';
import { PorticoError, type Issue } from '../errors.js';
import { Gateway } from '../service/gateway.js';
import { RemoteModules } from '../service/remotes.js';
import { copyIndex } from '../store/copy.js';
import { readRecordFiles } from '../store/files.js';
import { LowdbStore } from '../store/lowdb-store.js';
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
  { flag: '--url URL', help: 'Go through the gateway at URL (needed while one serves the project).' },
  { flag: '--token T', help: 'The api or session token for --url.', env: 'PORTICO_API_TOKEN' },
  { flag: '--user U', help: 'created_by of a new record.', default: 'the OS user' },
  { flag: '--python PY', help: 'Interpreter that resolves the config (without --url).', default: 'python3', env: 'PORTICO_PYTHON' },
  { flag: '--store S', help: "The project's index (without --url): embedded, or the postgres:// URL its gateways use.", default: 'embedded', env: 'PORTICO_STORE' },
];

/** `portico fetch` options (its --help). */
export const FETCH_OPTIONS = [
  { flag: '--project P', help: 'The project directory.', default: '.' },
  { flag: '--refresh', help: 'Fetch again even when a copy is there.', default: 'off' },
];

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
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
  const version = words.map(parseVersionWord);
  const project = path.resolve(values.project ?? process.env.PORTICO_PROJECT ?? process.cwd());

  if (values.url) {
    const token = values.token ?? process.env.PORTICO_API_TOKEN;
    const res = await fetch(new URL('/v1/interfaces', values.url), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(values.project ? { 'x-service-project': project } : {}),
        ...(values.user ? { 'x-service-user': values.user } : {}),
      },
      body: JSON.stringify({ target: module, version }),
    }).catch((err: Error) => err);
    if (res instanceof Error) {
      process.stderr.write(`portico get: cannot reach a gateway at ${values.url} (${(res.cause as Error | undefined)?.message ?? res.message}): is \`portico serve\` running there?\n`);
      return 1;
    }
    const body = (await res.json()) as { detail?: unknown; code?: string; message?: string; issues?: Issue[] };
    if (!res.ok) {
      // Every error body has code and message at its top level; issues beside them, or in a 400's structured detail.
      const issues = body.issues ?? (body.detail as { issues?: Issue[] } | undefined)?.issues ?? [];
      process.stderr.write(`portico get: ${body.code ?? res.status}: ${body.message ?? JSON.stringify(body.detail)}\n`);
      for (const issue of Array.isArray(issues) ? issues : []) process.stderr.write(`  ${issue.path ?? '(version)'}: ${issue.message}\n`);
      return 1;
    }
    print(body);
    return 0;
  }

  const store = storeOption(values.store ?? process.env.PORTICO_STORE ?? 'embedded');
  const gateway = await withStoreErrors('get', () =>
    Gateway.create(defaultOptions({ project, store, python: values.python ?? process.env.PORTICO_PYTHON ?? 'python3', log: () => {} })),
  );
  if (!gateway) return 1;
  try {
    const ctx = await gateway.bind({ user: values.user });
    print(await gateway.interfaces.create(ctx, { target: module, version }));
    return 0;
  } catch (err) {
    if (!(err instanceof PorticoError)) throw err;
    process.stderr.write(`portico get: ${err.code}: ${err.message}\n`);
    // An issue that only repeats the message (unknown_module's) is not printed twice.
    for (const issue of err.issues ?? []) if (issue.message !== err.message) process.stderr.write(`  ${issue.path ?? '(version)'}: ${issue.message}\n`);
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
    process.stderr.write(`portico ${command}: ${err.code}: ${err.message}\n`);
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
    process.stderr.write(`portico fetch: ${err.code}: ${err.message}\n`);
    return 1;
  }
}
