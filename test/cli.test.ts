/** The `portico` command as a user runs it (from the built package). */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { api, cleanup, DEMO, ROOT, tempProject } from './helpers.js';
import { runPortico } from './support/processes.js';

afterAll(cleanup);


/** The command with `env` over the test's own environment. */
const run = (args: string[], env: Record<string, string> = {}, untilOutput?: RegExp, cwd?: string) => runPortico(args, { ...process.env, ...env }, untilOutput, cwd);

describe('portico serve', () => {
  it('serves a project on the port asked for, prints its URLs, and stops on SIGTERM', async () => {
    const project = await tempProject();
    const p = run(['serve', project, '--port', '0'], {}, /Stop/);
    await p.ready;
    const api = /API\s+(http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(p.out())?.[1];
    expect(api).toBeDefined();
    expect(p.out()).toContain('/docs');
    // the banner says who may use it and how to allow more: local JupyterLab by default on loopback
    expect(p.out()).toMatch(/Origins\s+.*http:\/\/localhost:8888.*http:\/\/127\.0\.0\.1:8890/);
    expect(p.out()).toContain('--allow-origin URL');
    expect(p.out()).toMatch(/Store\s+embedded index in .*\.portico/);
    expect(p.out()).toMatch(/Stop\s+Ctrl\+C/);
    const res = await fetch(`${api}/v1/interfaces/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ target: 'counter', method: 'add', args: [5] }),
    });
    expect(await res.json()).toEqual({ payload: 5 });
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('takes options from PORTICO_* variables', async () => {
    const project = await tempProject();
    const p = run(['serve'], { PORTICO_PROJECT: project, PORTICO_PORT: '0', PORTICO_API_TOKEN: 'tok' }, /Stop/);
    await p.ready;
    const api = /API\s+(\S+)\/v1/.exec(p.out())![1];
    expect((await fetch(`${api}/v1/health`)).status).toBe(401);
    expect((await fetch(`${api}/v1/health`, { headers: { authorization: 'Bearer tok' } })).status).toBe(200);
    p.child.kill('SIGTERM');
    await p.exited;
  });

  it('refuses a non-loopback address without a token, unless --insecure', async () => {
    const p = run(['serve', '--host', '0.0.0.0', '--port', '0']);
    expect(await p.exited).toBe(2);
    expect(p.err()).toMatch(/--api-token/);
  });

  it('refuses bad options with usage', async () => {
    const bad = run(['serve', '--port', 'eighty']);
    expect(await bad.exited).toBe(2);
    expect(bad.err()).toMatch(/--port/);
    const unknown = run(['serve', '--frobnicate']);
    expect(await unknown.exited).toBe(2);
    const missing = run(['serve', '/definitely/not/here', '--port', '0']);
    expect(await missing.exited).toBe(2);
    expect(missing.err()).toContain('does not exist');
  });

  it('refuses an unknown option with the usage of its command', async () => {
    const unknown = run(['get', 'counter', '--frobnicate']);
    expect(await unknown.exited).toBe(2);
    expect(unknown.err()).toContain("Unknown option '--frobnicate'");
    expect(unknown.err()).toContain('Usage: portico get MODULE');
  });
});

describe('portico COMMAND --help', () => {
  it.each([
    ['serve', ['--port', '--allow-origin', 'default: 8000', 'PORTICO_ALLOW_ORIGINS', 'default: 16G']],
    ['get', ['--url', '--project', 'default: python3', 'PORTICO_API_TOKEN']],
    ['reindex', ['PROJECT']],
    ['fetch', ['--refresh', '--project']],
  ])('%s --help prints its options with their defaults and exits 0', async (command, words) => {
    for (const flag of ['--help', '-h']) {
      const p = run([command, flag]);
      expect(await p.exited).toBe(0);
      expect(p.out()).toContain(`Usage: portico ${command}`);
      for (const word of words) expect(p.out()).toContain(word);
      expect(p.err()).toBe('');
    }
  });

  it('portico --help lists the commands and exits 0; no command at all exits 2 with the same list', async () => {
    const help = run(['--help']);
    expect(await help.exited).toBe(0);
    for (const command of ['serve', 'get', 'reindex', 'fetch']) expect(help.out()).toContain(`portico ${command}`);
    const none = run([]);
    expect(await none.exited).toBe(2);
  });

  it('get --url names the gateway it cannot reach and asks whether it runs', async () => {
    const p = run(['get', 'counter', '--url', 'http://127.0.0.1:9']);
    expect(await p.exited).toBe(1);
    expect(p.err()).toMatch(/cannot reach a gateway at http:\/\/127\.0\.0\.1:9 .*is `portico serve` running there\?/);
  });
});

/** `portico serve PROJECT --port 0` until it prints its banner: its URL and how to stop it. */
async function serving(project: string, args: string[] = []) {
  const p = run(['serve', project, '--port', '0', ...args], {}, /Stop/);
  await p.ready;
  return { url: /API\s+(http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(p.out())![1]!, stop: () => (p.child.kill('SIGTERM'), p.exited) };
}

describe('the portico command on PATH', { timeout: 120_000 }, () => {
  it('npm link -w packages/server puts portico on PATH; a record’s cli line, run as printed, gives back the record', async () => {
    // As the README says, with npm's global prefix in a temporary folder instead of /usr.
    const prefix = await mkdtemp(path.join(tmpdir(), 'portico-prefix-'));
    try {
      await promisify(execFile)('npm', ['link', '-w', 'packages/server'], { cwd: ROOT, env: { ...process.env, npm_config_prefix: prefix } });
      const env = { ...process.env, PATH: `${path.join(prefix, 'bin')}${path.delimiter}${process.env.PATH}` };
      const project = await tempProject();
      const sh = (line: string) => promisify(execFile)('sh', ['-c', line], { cwd: project, env });
      expect((await sh('portico --version')).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
      const created = JSON.parse((await sh("portico get counter '~big' start=4")).stdout);
      expect(created.cli).toBe("portico get counter '~big' start=4");
      expect(JSON.parse((await sh(created.cli)).stdout).uuid).toBe(created.uuid);
    } finally {
      await rm(prefix, { recursive: true, force: true });
    }
  });
});

describe('portico get finds its gateway, or says what to do', { timeout: 120_000 }, () => {
  it('goes through the gateway serving the project, found without --url', async () => {
    const project = await tempProject();
    const gateway = await serving(project);
    try {
      for (const [args, cwd] of [[['--project', project], ROOT], [[], project]] as const) {
        const p = run(['get', 'counter', '~big', 'start=4', '--user', 'cli-user', ...args], {}, undefined, cwd);
        expect(await p.exited, p.err()).toBe(0);
        const printed = JSON.parse(p.out());
        expect(printed).toMatchObject({ module: 'counter', config: { start: 4, step: 10 }, created_by: 'cli-user' });
        expect((await api(gateway, 'GET', `/v1/interfaces/${printed.uuid}`)).body).toEqual(printed);
      }
    } finally {
      await gateway.stop();
    }
  });

  it('a gateway that needs a token: says so in a sentence, and takes PORTICO_API_TOKEN', async () => {
    const project = await tempProject();
    const gateway = await serving(project, ['--api-token', 'get-token']);
    try {
      const refused = run(['get', 'counter', '--project', project], { PORTICO_API_TOKEN: '' });
      expect(await refused.exited).toBe(1);
      expect(refused.err()).toMatch(/^portico get: unauthorized: .+\n {2}The gateway at http:\/\/127\.0\.0\.1:\d+ needs a token: pass --token T, or set PORTICO_API_TOKEN\.\n$/);
      const taken = run(['get', 'counter', '--project', project], { PORTICO_API_TOKEN: 'get-token' });
      expect(await taken.exited).toBe(0);
      expect(JSON.parse(taken.out())).toMatchObject({ module: 'counter' });
    } finally {
      await gateway.stop();
    }
  });

  it('in a folder that is no project: names the folder, --project and the demo, and leaves no file behind', async () => {
    const folder = await mkdtemp(path.join(tmpdir(), 'portico-not-a-project-'));
    try {
      const p = run(['get', 'counter'], { PORTICO_PROJECT: '' }, undefined, folder);
      expect(await p.exited).toBe(1);
      expect(p.err()).toContain(`The current folder (${folder}) has no interface module 'counter'. Name the project with --project P (or PORTICO_PROJECT).`);
      expect(p.err()).toContain(`The demo project ${DEMO} has it: portico get counter --project ${DEMO}`);
      expect(p.err()).not.toMatch(/[{}]/);
      expect(await readdir(folder)).toEqual([]);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('from the repository root, as the README’s reader first tries it: the demo is examples/demo', async () => {
    const hadIndex = existsSync(path.join(ROOT, '.portico'));
    const p = run(['get', 'counter'], { PORTICO_PROJECT: '' }, undefined, ROOT);
    expect(await p.exited).toBe(1);
    expect(p.err()).toContain(`The current folder (${ROOT}) has no interface module 'counter'.`);
    expect(p.err()).toContain('--project P');
    expect(p.err()).toContain('The demo project examples/demo has it: portico get counter --project examples/demo');
    if (!hadIndex) expect(existsSync(path.join(ROOT, '.portico'))).toBe(false);
  });

  it('--url of a server that is no Portico gateway: a sentence, not its body', async () => {
    const other = createServer((_req, res) => res.writeHead(404, { 'content-type': 'text/html' }).end('<html><body>{"not": "json"}</body></html>'));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(other.address() as { port: number }).port}`;
      const p = run(['get', 'counter', '--url', url]);
      expect(await p.exited).toBe(1);
      expect(p.err()).toBe(`portico get: ${url} answered 404 Not Found, not as a Portico gateway does: is it the address \`portico serve\` printed (http://host:port)?\n`);
    } finally {
      other.close();
    }
  });
});
