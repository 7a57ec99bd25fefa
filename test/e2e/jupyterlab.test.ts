/**
 * The JupyterLab extension end to end: installed by `portico-lab install` (no pip) into a
 * throwaway Jupyter data dir, a real JupyterLab from the test venv, Debian Chromium. The widgets
 * notebook runs and shows live widgets synced with the gateway; the notebook reopens live; the
 * sidebar finds an interface by a config filter and renames it; its run view shows the figure a
 * run emitted and the run's progress. Install + uninstall leaves the data dir as it was.
 */
import { cp, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type LaunchedBrowser } from '../browser.js';
import { api, cleanup, gateway, ROOT, tempProject } from '../helpers.js';
import { parseServeArgs } from '../../packages/server/src/cli/options.js';
import { runInVenv } from '../notebook.js';
import type { RunningServer } from '../../packages/server/src/index.js';
import { command, firstFreePort, installExtension, openNotebook, PORTICO_LAB, startLab, type RunningLab } from './lab.js';

const TIMEOUT = 240_000;

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

/** A run that reports progress and emits a figure (a real PNG, made without any package). */
const PLOTTER = `
import struct
import zlib

from portico import Interface


def png(width, height, rgb):
    rows = b"".join(b"\\x00" + bytes(rgb) * width for _ in range(height))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


class Swatch:
    def __repr__(self):
        return "<Swatch 30x20>"

    def _repr_png_(self):
        return png(30, 20, (200, 30, 30))


class Plotter(Interface):
    def __call__(self):
        self.emit({"progress": 0.5, "message": "half way"})
        self.emit(Swatch())
        print("plotted", flush=True)
        self.emit({"progress": 1, "message": "done"})
`;

let work: string;
let running: RunningServer;
let lab: RunningLab | undefined;
let labUrl: string;
let b: LaunchedBrowser | undefined;

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'portico-lab-'));
  // JupyterLab where a user's runs (8888, or the next free of 8889, 8890), and the gateway exactly as
  // `npm start` / `portico serve` configure it: no --allow-origin, yet the widget goes live.
  const port = await firstFreePort();
  labUrl = `http://127.0.0.1:${port}`;
  running = await gateway({ ...parseServeArgs(['--port', '0'], {}), project: await tempProject({ 'plotter.py': PLOTTER }), logLevel: 'silent' });
  expect(running.gateway.options.allowOrigins).toContain(labUrl);
  const notebooks = path.join(work, 'notebooks');
  await mkdir(notebooks, { recursive: true });
  await cp(path.join(ROOT, 'notebooks/widgets.ipynb'), path.join(notebooks, 'widgets.ipynb'));
  const env = await installExtension(path.join(work, 'jupyter'), running.url);
  lab = await startLab(env, notebooks, port);
}, TIMEOUT);

afterAll(async () => {
  await b?.close();
  await lab?.stop();
  await cleanup();
  await rm(work, { recursive: true, force: true });
}, TIMEOUT);

describe('JupyterLab with the Portico extension', { timeout: TIMEOUT }, () => {
  it('runs the widgets notebook: live widget, clicks reach the gateway, pushes reach the notebook, reopening renders it live again', async () => {
    b = await launchBrowser();
    const { page } = await b.newPage();
    await openNotebook(page, labUrl, 'widgets.ipynb');
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
      throw new Error(`${(err as Error).message}\noutputs: ${JSON.stringify(outputs).slice(0, 3000)}\nlab: ${lab!.log.join('').slice(-1500)}`);
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
    // The class shows as class_name (kind is the record kind, "Interface"); cached once the InterfaceInfo is in.
    const info = sidebar.locator('[data-testid=portico-info]');
    await expect.poll(() => info.locator('tr[data-field=class_name] td').textContent(), { timeout: 30_000 }).toBe('Counter');
    await expect.poll(() => info.locator('tr[data-field=cached] td').textContent(), { timeout: 30_000 }).toBe('false');
    expect(await info.locator('tr[data-field=kind]').count()).toBe(0);
    await sidebar.locator('[data-testid=portico-label-input]').fill('the answer');
    await sidebar.locator('[data-testid=portico-label-save]').click();
    await expect.poll(async () => (await api(running, 'GET', `/v1/interfaces/${created.body.uuid}`)).body.label, { timeout: 30_000 }).toBe('the answer');
    // and its live widget shows inside the sidebar
    await expect
      .poll(() => sidebar.locator('[data-testid=portico-detail-widget] button.counter-button').textContent().catch(() => null), { timeout: 30_000 })
      .toBe('count is 4242');
    await page.close();
  });

  it("the sidebar's run view shows the figure a run emitted, and its progress", async () => {
    const created = await api(running, 'POST', '/v1/interfaces', { target: 'plotter' });
    expect(created.status).toBe(200);
    const dispatched = await api(running, 'POST', '/v1/executions', { interfaces: [{ target: 'plotter' }] });
    expect(dispatched.status).toBe(200);
    b ??= await launchBrowser();
    const { page } = await b.newPage();
    await page.goto(`${labUrl}/lab`);
    await page.waitForFunction(() => (window as any).jupyterapp?.shell, null, { timeout: 90_000 });
    // The command shows the sidebar whether or not the restored layout has it open (a click on its tab would close it).
    await page.evaluate(() => (window as any).jupyterapp.restored);
    await command(page, 'portico:open-sidebar');
    const sidebar = page.locator('[data-testid=portico-sidebar]');
    await sidebar.waitFor({ timeout: 30_000 });
    await sidebar.locator('[data-testid=portico-search-module]').fill('plotter');
    await sidebar.locator('[data-testid=portico-search-submit]').click();
    const result = sidebar.locator(`[data-testid=portico-result][data-uuid="${created.body.uuid}"]`);
    await result.waitFor({ timeout: 30_000 });
    await result.click();
    const execution = sidebar.locator(`[data-testid=portico-execution][data-uuid="${dispatched.body.uuid}"]`);
    await execution.waitFor({ timeout: 30_000 });
    await execution.locator('[data-testid=portico-execution-follow]').click();

    const figure = sidebar.locator('[data-testid=portico-execution-figure] img');
    await expect
      .poll(() => figure.evaluate((img: HTMLImageElement) => ({ complete: img.complete, width: img.naturalWidth, height: img.naturalHeight, alt: img.alt })).catch(() => null), { timeout: 60_000 })
      .toEqual({ complete: true, width: 30, height: 20, alt: '<Swatch 30x20>' });
    await expect.poll(() => sidebar.locator('[data-testid=portico-execution-output]').textContent(), { timeout: 30_000 }).toContain('plotted');
    const progress = sidebar.locator('[data-testid=portico-execution-progress]');
    await expect.poll(() => progress.textContent()).toBe('100 % · done');
    expect(await progress.locator('progress').evaluate((bar: HTMLProgressElement) => bar.value)).toBe(1);
    expect(await sidebar.locator('[data-testid=portico-execution-figure]').count()).toBe(1);
    const shot = path.join(ROOT, '.cache', 'screenshots', 'lab-run-figure.png');
    await mkdir(path.dirname(shot), { recursive: true });
    await sidebar.screenshot({ path: shot });
    console.log(`screenshot of the sidebar's run view with a figure: ${shot}`);
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
