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
    const p = run(['serve', project, '--port', '0'], {}, /Socket/);
    await p.ready;
    const api = /API\s+(http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(p.out())?.[1];
    expect(api).toBeDefined();
    expect(p.out()).toContain('/docs');
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
    const p = run(['serve'], { PORTICO_PROJECT: project, PORTICO_PORT: '0', PORTICO_API_TOKEN: 'tok' }, /Socket/);
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
});
