/**
 * `portico get`, `portico reindex` and `portico fetch`: the index and remotes from the command
 * line. `get` runs the same service layer as the gateway, in-process (it takes the project's
 * index lock), or talks to a running gateway with --url.
 */
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { defaultOptions } from '../config/options.js';
import { PorticoError } from '../errors.js';
import { Gateway } from '../service/gateway.js';
import { RemoteModules } from '../service/remotes.js';
import { LowdbStore } from '../store/lowdb-store.js';
import { UsageError } from './options.js';

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
    const body = (await res.json()) as { detail?: unknown };
    if (!res.ok) {
      process.stderr.write(`portico get: ${res.status} ${JSON.stringify(body.detail)}\n`);
      return 1;
    }
    print(body);
    return 0;
  }

  const gateway = await Gateway.create(defaultOptions({ project, python: values.python ?? process.env.PORTICO_PYTHON ?? 'python3', log: () => {} }));
  try {
    const ctx = await gateway.bind({ user: values.user });
    print(await gateway.interfaces.create(ctx, { target: module, version }));
    return 0;
  } catch (err) {
    if (!(err instanceof PorticoError)) throw err;
    process.stderr.write(`portico get: ${err.code}: ${err.message}\n`);
    for (const issue of err.issues ?? []) process.stderr.write(`  ${issue.path ?? '(version)'}: ${issue.message}\n`);
    return 1;
  } finally {
    await gateway.close();
  }
}

export async function reindex(argv: string[]): Promise<number> {
  const { positionals } = parseArgs({ args: argv, allowPositionals: true, options: {} });
  const project = path.resolve(positionals[0] ?? process.cwd());
  const count = await LowdbStore.reindex(project);
  process.stdout.write(`Indexed ${count} interface${count === 1 ? '' : 's'} of ${project}\n`);
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
