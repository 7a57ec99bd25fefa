/**
 * Portico's extension in the newest JupyterLab 4 on PyPI, as a user gets it from the README's
 * `python3 -m pip install 'jupyterlab>=4,<5'`: scripts/provision.mjs keeps that JupyterLab in a venv
 * of its own (.cache/lab-newest, scripts/lab-newest-requirements.txt, PyPI asked again once a day).
 * The extension is built against JupyterLab 4.6.4's packages but declares the JupyterLab 4 range it
 * works with, so `jupyter labextension list` there calls it compatible, and the widgets notebook
 * shows its live widget in that JupyterLab.
 */
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type LaunchedBrowser } from '../browser.js';
import { api, cleanup, gateway, ROOT, tempProject } from '../helpers.js';
import { runInVenv } from '../notebook.js';
import type { RunningServer } from '../../packages/server/src/index.js';
import { anyFreePort, command, installExtension, openNotebook, startLab, type RunningLab } from './lab.js';

const TIMEOUT = 240_000;
/** The newest JupyterLab's venv (npm test exports its python; provisioned by scripts/provision.mjs). */
const NEWEST_BIN = path.dirname(process.env.PORTICO_LAB_NEWEST_PYTHON ?? path.join(ROOT, '.cache/lab-newest/bin/python'));

const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '');

let work: string;
let running: RunningServer;
let env: Record<string, string>;
let lab: RunningLab | undefined;
let b: LaunchedBrowser | undefined;

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'portico-lab-newest-'));
  const port = await anyFreePort();
  running = await gateway({ project: await tempProject(), allowOrigins: [`http://127.0.0.1:${port}`], logLevel: 'silent' });
  const notebooks = path.join(work, 'notebooks');
  await mkdir(notebooks, { recursive: true });
  await cp(path.join(ROOT, 'notebooks/widgets.ipynb'), path.join(notebooks, 'widgets.ipynb'));
  // Installed with `portico-lab install` (no pip); installExtension also checks `enabled OK`.
  env = await installExtension(path.join(work, 'jupyter'), running.url, { bin: NEWEST_BIN });
  lab = await startLab(env, notebooks, port, { bin: NEWEST_BIN });
}, TIMEOUT);

afterAll(async () => {
  await b?.close();
  await lab?.stop();
  await cleanup();
  await rm(work, { recursive: true, force: true });
}, TIMEOUT);

describe('the newest JupyterLab 4 from PyPI', { timeout: TIMEOUT }, () => {
  it('is a JupyterLab 4 at least as new as the one the extension is built against', async () => {
    const version = (await runInVenv(path.join(NEWEST_BIN, 'jupyter'), ['lab', '--version'], { env })).stdout.trim();
    const [major, minor, patch] = version.split('.').map((part) => Number.parseInt(part, 10));
    expect(major, version).toBe(4);
    expect(minor! * 1000 + patch!, version).toBeGreaterThanOrEqual(6 * 1000 + 4);
  });

  it('`jupyter labextension list` calls the extension enabled and compatible, with no compatibility errors', async () => {
    const listed = await runInVenv(path.join(NEWEST_BIN, 'jupyter'), ['labextension', 'list', '--verbose'], { env });
    const text = plain(listed.stdout + listed.stderr);
    expect(listed.code, text).toBe(0);
    expect(text).toMatch(/@portico\/labextension v\S+ enabled\s+OK/);
    expect(text).not.toContain('is not compatible');
    expect(text).not.toContain('may be outdated');
  });

  it('the widgets notebook shows the live counter, and a click reaches the gateway', async () => {
    b = await launchBrowser();
    const { page } = await b.newPage();
    await openNotebook(page, lab!.url, 'widgets.ipynb');
    await command(page, 'notebook:run-all-cells');
    const counter = page.locator('[data-testid=portico-widget] button.counter-button').first();
    try {
      await expect.poll(() => counter.textContent().catch(() => null), { timeout: 90_000 }).toBe('count is 17');
    } catch (err) {
      const outputs = await page.locator('.jp-OutputArea-output').allInnerTexts();
      throw new Error(`${(err as Error).message}\noutputs: ${JSON.stringify(outputs).slice(0, 3000)}\nlab: ${lab!.log.join('').slice(-1500)}`);
    }
    const uuid = (await page.locator('[data-testid=portico-widget] .jp-PorticoWidget-host[data-uuid]').first().getAttribute('data-uuid'))!;
    await counter.click();
    await expect.poll(() => counter.textContent()).toBe('count is 18');
    await expect.poll(async () => (await api(running, 'POST', '/v1/interfaces/call', { target: uuid, method: 'value' })).body.payload).toBe(18);
    await page.close();
  });

  it('the gateway URL is under Settings → Settings Editor → Portico, as the README says', async () => {
    b ??= await launchBrowser();
    const { page } = await b.newPage();
    await page.goto(`${lab!.url}/lab`);
    await page.waitForFunction(() => (window as any).jupyterapp?.shell, null, { timeout: 90_000 });
    await page.locator('.lm-MenuBar-itemLabel', { hasText: /^Settings$/ }).click();
    await page.locator('.lm-Menu-itemLabel', { hasText: /^Settings Editor$/ }).click();
    await page.locator('.jp-PluginList-entry', { hasText: /^Portico$/ }).click();
    // JupyterLab's form shows the field under its schema title and labels the input with it.
    const field = page.locator('.jp-SettingsPanel input[label="Gateway URL"]');
    await expect.poll(() => field.inputValue().catch(() => null), { timeout: 30_000 }).toBe(running.url);
    await page.close();
  });
});
