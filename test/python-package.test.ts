/**
 * The Python client installs with pip from the gateway itself (GET /v1/python, issue 42): the
 * wheel's version is the gateway's, it holds the whole `portico` package and nothing else it would
 * need (standard library only), pip installs it into a fresh venv from the gateway's URL and the
 * installed client calls that gateway; `pip install packages/server/python` builds the same wheel
 * from a checkout, with nothing fetched from PyPI.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, gateway, ROOT } from './helpers.js';

const run = promisify(execFile);
let work: string;
let g: Awaited<ReturnType<typeof gateway>>;

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'portico-pip-'));
  g = await gateway({});
});
afterAll(async () => {
  await cleanup();
  await rm(work, { recursive: true, force: true });
});

/** A fresh venv under `work` (no pip upgrade, no network for anything but the gateway). */
async function venv(name: string): Promise<string> {
  const dir = path.join(work, name);
  await run('python3', ['-m', 'venv', dir]);
  return path.join(dir, 'bin', 'python');
}

describe('GET /v1/python', { timeout: 120_000 }, () => {
  it("lists one wheel whose version is the gateway's, at this gateway's URL, with its sha256", async () => {
    const health = (await api(g, 'GET', '/v1/health')).body;
    const { status, body } = await api(g, 'GET', '/v1/python');
    expect(status).toBe(200);
    expect(body.version).toBe(health.version);
    expect(body.wheels).toHaveLength(1);
    const [wheel] = body.wheels;
    expect(wheel.filename).toBe(`portico-${health.version}-py3-none-any.whl`);
    expect(wheel.url).toBe(`${g.url}/v1/python/${wheel.filename}`);
    expect(body.pip).toBe(`pip install ${wheel.url}`);
    const file = await fetch(wheel.url);
    const bytes = Buffer.from(await file.arrayBuffer());
    expect([file.status, bytes.length]).toEqual([200, wheel.size]);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(wheel.sha256);
    expect((await api(g, 'GET', '/v1/python/portico-0.0.0-py3-none-any.whl')).body.code).toBe('not_found');
  });

  it('pip installs it from the gateway into a fresh venv; the installed client, standard library only, calls the gateway', async () => {
    const python = await venv('from-gateway');
    const { body } = await api(g, 'GET', '/v1/python');
    await run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-index', body.wheels[0].url]);
    const shown = (await run(python, ['-m', 'pip', 'show', 'portico'])).stdout;
    expect(shown).toMatch(new RegExp(`^Version: ${body.version.replace(/\./g, '\\.')}$`, 'm'));
    expect(shown).toMatch(/^Requires: ?$/m);
    const script = `import os, sys\nfrom portico.client import Gateway\nimport portico\nassert "site-packages" in portico.__file__, portico.__file__\nc = Gateway().interface("counter")\nc.reset()\nprint(c.add(3), portico.__version__)`;
    const out = await run(python, ['-c', script], { env: { ...process.env, PORTICO_URL: g.url, PYTHONPATH: '' }, cwd: work });
    expect(out.stdout.trim()).toBe(`3 ${body.version}`);
  });

  it('pip install packages/server/python builds the same wheel from a checkout, fetching nothing', async () => {
    const python = await venv('from-checkout');
    const out = path.join(work, 'built');
    await run(python, ['-m', 'pip', 'wheel', '--quiet', '--disable-pip-version-check', '--no-index', '--no-deps', '--wheel-dir', out, path.join(ROOT, 'packages/server/python')]);
    const [built] = await readdir(out);
    const { body } = await api(g, 'GET', '/v1/python');
    expect(built).toBe(body.wheels[0].filename);
    expect(createHash('sha256').update(await readFile(path.join(out, built!))).digest('hex')).toBe(body.wheels[0].sha256);
  });
});
