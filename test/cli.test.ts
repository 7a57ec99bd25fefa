/** The `portico` command as a user runs it (from the built package). */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanup, ROOT, tempProject } from './helpers.js';

afterAll(cleanup);

const BIN = path.join(ROOT, 'packages/server/bin/portico.js');

function run(args: string[], env: Record<string, string> = {}, untilOutput?: RegExp) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const ready = untilOutput
    ? new Promise<void>((resolve, reject) => {
        child.stdout.on('data', () => untilOutput.test(stdout) && resolve());
        void exited.then(() => reject(new Error(`exited early: ${stdout}${stderr}`)));
      })
    : Promise.resolve();
  return { child, exited, ready, out: () => stdout, err: () => stderr };
}

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
