/** The `portico` command line: serve, get, reindex, fetch. */
import { existsSync, statSync } from 'node:fs';
import { VERSION } from '../config/constants.js';
import { startServer } from '../server.js';
import { fetchRemotes, get, reindex } from './commands.js';
import { parseServeArgs, SERVE_OPTIONS, UsageError } from './options.js';

const USAGE = `Usage:
  portico serve [PROJECT] [options]        serve the interface classes of PROJECT (default: .)
  portico get MODULE [VERSION…] [--project P] [--user U] [--url URL --token T]
                                           create (or find) an interface and print its InterfaceInfo
  portico reindex [PROJECT]                rebuild the index from the interface directories
  portico fetch [MODULE] [--project P] [--refresh]
                                           fetch the remote modules declared in portico.json

VERSION items: '~name', '~name(args)', 'a.b=value' or a JSON object.

serve options:
${SERVE_OPTIONS.map((o) => `  ${o.flag.padEnd(20)} ${o.help} [${o.env}]`).join('\n')}
`;

async function serve(argv: string[]): Promise<number> {
  const options = parseServeArgs(argv);
  if (!existsSync(options.project) || !statSync(options.project).isDirectory()) {
    throw new UsageError(`Project directory '${options.project}' does not exist`);
  }
  const running = await startServer(options);
  const ws = running.url.replace(/^http/, 'ws');
  process.stdout.write(
    [
      `Portico ${VERSION} serving ${running.gateway.projects.defaultDir}`,
      `  Open     ${running.url}/   (modules with live widgets)`,
      `  API      ${running.url}/v1`,
      `  Docs     ${running.url}/docs`,
      `  Socket   ${ws}/v1/interfaces/ws`,
      `  Auth     ${authLine(options)}`,
      '',
    ].join('\n'),
  );
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await running.close();
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'serve':
        return await serve(rest);
      case 'get':
        return await get(rest);
      case 'reindex':
        return await reindex(rest);
      case 'fetch':
        return await fetchRemotes(rest);
      case '--version':
      case 'version':
        process.stdout.write(`${VERSION}\n`);
        return 0;
      case undefined:
      case '--help':
      case '-h':
      case 'help':
        process.stdout.write(USAGE);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`Unknown command '${command}'`);
    }
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`portico: ${(err as Error).message}\n\n${USAGE}`);
      return 2;
    }
    throw err;
  }
}

function authLine(options: { apiToken?: string | undefined; oidcIssuer?: string | undefined }): string {
  const ways = [options.apiToken && 'Authorization: Bearer <api token> (or a session token)', options.oidcIssuer && `OIDC access tokens of ${options.oidcIssuer}`].filter(Boolean);
  return ways.length ? ways.join('; ') : 'none (loopback only)';
}
