/**
 * The JupyterLab extension end to end: installed by `portico-lab install` (no pip) into a
 * throwaway Jupyter data dir, a real JupyterLab from the test venv, Debian Chromium. The widgets
 * notebook runs and shows live widgets synced with the gateway; the notebook reopens live; the
 * sidebar finds an interface by a config filter and renames it. Install + uninstall leaves the
 * data dir as it was.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { launchBrowser, type LaunchedBrowser } from '../browser.js';
import { api, cleanup, gateway, ROOT, tempProject } from '../helpers.js';
import { parseServeArgs } from '../../packages/server/src/cli/options.js';
import { isolatedJupyter, runInVenv, VENV_BIN } from '../notebook.js';
import type { RunningServer } from '../../packages/server/src/index.js';

const TIMEOUT = 240_000;
const PORTICO_LAB = path.join(ROOT, 'node_modules/.bin/portico-lab');

const JUPYTER_PORTS = [8888, 8889, 8890];

/** The first of `ports` nobody listens on (jupyter lab's own choice when 8888 is taken). */
async function firstFreePort(ports: number[]): Promise<number> {
  for (const port of ports) {
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`JupyterLab's usual ports ${ports.join(', ')} are all in use on this machine`);
}

/** Every path under `dir` with its size (directories as 'dir'), sorted: a snapshot to compare. */
async function tree(dir: string, prefix = ''): Promise<string[]> {
  const entries = await readdir(path.join(dir, prefix), { withFileTypes: true }).catch(() => []);
  const out: string[] = [];
  for (const e of entries) {
    const rel = path.join(prefix, e.name);
    if (e.isDirectory()) out.push(`${rel}/`, ...(await tree(dir, rel)));
    else out.push(`${rel} ${(await stat(path.join(dir, rel))).size}`);
  }
  return out.sort();
}

let work: string;
let running: RunningServer;
let lab: ChildProcess | undefined;
let labUrl: string;
let b: LaunchedBrowser | undefined;
const labLog: string[] = [];

async function startLab(env: Record<string, string>, root: string, port: number): Promise<void> {
  lab = spawn(
    path.join(VENV_BIN, 'jupyter'),
    [
      'lab',
      '--no-browser',
      '--allow-root',
      `--port=${port}`,
      '--ip=127.0.0.1',
      '--ServerApp.token=',
      '--ServerApp.password=',
      `--ServerApp.root_dir=${root}`,
      '--LabApp.expose_app_in_browser=True',
      '--LabApp.news_url=',
      '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate',
    ],
    { env: { ...process.env, ...env, PATH: `${VENV_BIN}${path.delimiter}${process.env.PATH}` }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  for (const stream of [lab.stdout!, lab.stderr!]) stream.on('data', (d) => labLog.push(String(d)));
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (Date.now() > deadline) throw new Error(`JupyterLab did not start:\n${labLog.join('').slice(-3000)}`);
    const ok = await fetch(`${labUrl}/api/status`).then((r) => r.ok, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** Runs a JupyterLab command and waits for it. Its result stays in the page: some (close-all's
 * disposed widgets) cannot be serialized back, and no caller needs one. */
async function command(page: Page, id: string, args: Record<string, unknown> = {}): Promise<void> {
  await page.evaluate(async ([id, args]) => {
    await (window as any).jupyterapp.commands.execute(id, args);
  }, [id, args] as const);
}

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'portico-lab-'));
  // JupyterLab where a user's runs (8888, or the next free of 8889, 8890), and the gateway exactly as
  // `npm start` / `portico serve` configure it: no --allow-origin, yet the widget goes live.
  const port = await firstFreePort(JUPYTER_PORTS);
  labUrl = `http://127.0.0.1:${port}`;
  running = await gateway({ ...parseServeArgs(['--port', '0'], {}), project: await tempProject(), logLevel: 'silent' });
  expect(running.gateway.options.allowOrigins).toContain(labUrl);
  const jupyter = isolatedJupyter(path.join(work, 'jupyter'));
  const data = jupyter.JUPYTER_DATA_DIR;
  const settings = path.join(jupyter.JUPYTERLAB_SETTINGS_DIR, '@portico/labextension');
  const notebooks = path.join(work, 'notebooks');
  await mkdir(settings, { recursive: true });
  await mkdir(notebooks, { recursive: true });
  await cp(path.join(ROOT, 'notebooks/widgets.ipynb'), path.join(notebooks, 'widgets.ipynb'));
  // The gateway the extension talks to, through JupyterLab's settings registry.
  await writeFile(path.join(settings, 'settings.jupyterlab-settings'), JSON.stringify({ gatewayUrl: running.url }));
  const env = {
    ...jupyter,
    PORTICO_URL: running.url,
    // How a kernel finds portico without pip (the notebook's own sys.path line points at the repo).
    PYTHONPATH: path.join(ROOT, 'packages/server/python'),
  };
  const installed = await runInVenv(PORTICO_LAB, ['install', '--user'], { env });
  expect(installed.code, installed.stderr).toBe(0);
  const listed = await runInVenv(path.join(VENV_BIN, 'jupyter'), ['labextension', 'list'], { env });
  const plain = (listed.stdout + listed.stderr).replace(/\x1b\[[0-9;]*m/g, '');
  expect(plain).toContain(`${data}/labextensions`);
  expect(plain).toMatch(/@portico\/labextension v\S+ enabled\s+OK/);
  // Exactly one copy is visible, ours: one installed by a user elsewhere (the project's .venv,
  // ~/.local/share/jupyter, a system prefix) would shadow it or be shadowed unpredictably.
  expect(plain.match(/@portico\/labextension v/g), plain).toHaveLength(1);
  await startLab(env, notebooks, port);
}, TIMEOUT);

afterAll(async () => {
  await b?.close();
  lab?.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  lab?.kill('SIGKILL');
  await cleanup();
  await rm(work, { recursive: true, force: true });
}, TIMEOUT);

describe('JupyterLab with the Portico extension', { timeout: TIMEOUT }, () => {
  it('runs the widgets notebook: live widget, clicks reach the gateway, pushes reach the notebook, reopening renders it live again', async () => {
    b = await launchBrowser();
    const { page } = await b.newPage();
    await page.goto(`${labUrl}/lab/tree/widgets.ipynb`);
    await page.waitForFunction(() => (window as any).jupyterapp?.shell, null, { timeout: 90_000 });
    await page.locator('.jp-Notebook').waitFor({ timeout: 90_000 });
    // Run only once the notebook's kernel is up: run-all before that can be dropped on a cold start.
    await page.waitForFunction(
      () => (window as any).jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.connectionStatus === 'connected' &&
        (window as any).jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle',
      null,
      { timeout: 120_000 },
    );
    // Opened and its kernel connected, the notebook is not modified (its metadata is what that kernel reports).
    const opened = await page.evaluate(() => {
      const model = (window as any).jupyterapp.shell.currentWidget.context.model;
      return { dirty: model.dirty, metadata: model.toJSON().metadata };
    });
    expect(opened.dirty, JSON.stringify(opened.metadata)).toBe(false);
    await command(page, 'notebook:run-all-cells');

    const counter = page.locator('[data-testid=portico-widget] button.counter-button').first();
    try {
      await expect.poll(() => counter.textContent().catch(() => null), { timeout: 90_000 }).toBe('count is 17');
    } catch (err) {
      // What the notebook shows instead (a kernel error, a fallback) is the useful part of the failure.
      const outputs = await page.locator('.jp-OutputArea-output').allInnerTexts();
      throw new Error(`${(err as Error).message}\noutputs: ${JSON.stringify(outputs).slice(0, 3000)}\nlab: ${labLog.join('').slice(-1500)}`);
    }
    const uuid = (await page.locator('[data-testid=portico-widget] .jp-PorticoWidget-host[data-uuid]').first().getAttribute('data-uuid'))!;
    expect(uuid).toMatch(/^[0-9a-f]{24}$/);
    // the wave widget renders its plot too
    await page.locator('[data-testid=portico-widget] .wave svg polyline').first().waitFor({ timeout: 30_000 });

    await counter.click();
    await expect.poll(() => counter.textContent()).toBe('count is 18');
    await expect.poll(async () => (await api(running, 'POST', '/v1/interfaces/call', { target: uuid, method: 'value' })).body.payload).toBe(18);

    await api(running, 'POST', '/v1/interfaces/call', { target: uuid, method: 'add', args: [1] });
    await expect.poll(() => counter.textContent()).toBe('count is 19');

    // saved, closed and reopened: the output renders the live widget again (a notebook we saved is trusted)
    await command(page, 'docmanager:save');
    await command(page, 'application:close-all');
    await page.locator('.jp-Notebook').waitFor({ state: 'detached', timeout: 30_000 });
    await command(page, 'docmanager:open', { path: 'widgets.ipynb' });
    const reopened = page.locator('[data-testid=portico-widget] button.counter-button').first();
    await expect.poll(() => reopened.textContent().catch(() => null), { timeout: 60_000 }).toBe('count is 19');
    await page.close();
  });

  it('the sidebar finds an interface by a config filter and renames it', async () => {
    const created = await api(running, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 4242 }] });
    expect(created.status).toBe(200);
    b ??= await launchBrowser();
    const { page } = await b.newPage();
    await page.goto(`${labUrl}/lab`);
    await page.waitForFunction(() => (window as any).jupyterapp?.shell, null, { timeout: 90_000 });
    await page.locator('[data-id=portico-sidebar]').first().click();
    const sidebar = page.locator('[data-testid=portico-sidebar]');
    await sidebar.waitFor({ timeout: 30_000 });
    await sidebar.locator('[data-testid=portico-search-module]').fill('counter');
    await sidebar.locator('[data-testid=portico-config-filter-add]').click();
    const row = sidebar.locator('[data-testid=portico-config-filter]').last();
    await row.locator('[data-testid=portico-config-filter-path]').fill('start');
    await row.locator('[data-testid=portico-config-filter-op]').selectOption('eq');
    await row.locator('[data-testid=portico-config-filter-value]').fill('4242');
    await sidebar.locator('[data-testid=portico-search-submit]').click();
    const results = sidebar.locator('[data-testid=portico-result]');
    await expect.poll(() => results.count(), { timeout: 30_000 }).toBe(1);
    expect(await results.first().getAttribute('data-uuid')).toBe(created.body.uuid);
    await results.first().click();
    await sidebar.locator('[data-testid=portico-detail]').waitFor();
    await sidebar.locator('[data-testid=portico-label-input]').fill('the answer');
    await sidebar.locator('[data-testid=portico-label-save]').click();
    await expect.poll(async () => (await api(running, 'GET', `/v1/interfaces/${created.body.uuid}`)).body.label, { timeout: 30_000 }).toBe('the answer');
    // and its live widget shows inside the sidebar
    await expect
      .poll(() => sidebar.locator('[data-testid=portico-detail-widget] button.counter-button').textContent().catch(() => null), { timeout: 30_000 })
      .toBe('count is 4242');
    await page.close();
  });

  it('portico-lab install then uninstall leaves a data dir exactly as it was', async () => {
    const data = path.join(work, 'fresh-data');
    await mkdir(path.join(data, 'labextensions/other'), { recursive: true });
    await writeFile(path.join(data, 'labextensions/other/keep.txt'), 'someone else');
    const before = await tree(data);
    const env = { JUPYTER_DATA_DIR: data };
    expect((await runInVenv(PORTICO_LAB, ['install', '--user'], { env })).code).toBe(0);
    expect(await tree(data)).toContain('labextensions/@portico/labextension/install.json ' + (await stat(path.join(data, 'labextensions/@portico/labextension/install.json'))).size);
    const status = await runInVenv(PORTICO_LAB, ['status'], { env });
    expect(status.stdout).toContain(data);
    expect((await runInVenv(PORTICO_LAB, ['uninstall', '--user'], { env })).code).toBe(0);
    expect(await tree(data)).toEqual(before);
  });
});
