/**
 * A proxy is an anywidget where anywidget is installed (issue 42): in each front end, as a user
 * runs it from PyPI, a notebook cell whose last line is a proxy shows the interface's own widget
 * through the kernel, against a gateway that allows no browser origin at all, so the page never
 * talks to the gateway. The kernel's `portico` is the wheel pip installed from that gateway.
 *
 * In each front end: the widget renders with its picture (a binary value); a click in the page
 * reaches Python; a change from Python (another client) shows in the page; a custom message is
 * answered; a worker crash brings the widget back with its state, and the page says so.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type LaunchedBrowser } from '../browser.js';
import { api, cleanup, fixtureFiles, gateway, ROOT, tempProject } from '../helpers.js';
import { isolatedJupyter, TEST_PYTHON, VENV_BIN } from '../notebook.js';
import type { RunningServer } from '../../packages/server/src/index.js';
import { anyFreePort, installExtension, startLab } from './lab.js';
import { FRONT_ENDS_BIN, runAllCells, startJupyter, startMarimo, startVoila, writeMarimoApp, writeNotebook, type FrontEnd } from './front-ends.js';

const TIMEOUT = 300_000;
const SCREENSHOTS = path.join(ROOT, '.cache', 'screenshots');
const WAIT = { timeout: 60_000 };
const run = promisify(execFile);

let work: string;
let site: string;
let b: LaunchedBrowser;
const stops: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'portico-kernel-widgets-'));
  // The kernels' `portico`: the wheel pip installs from a gateway (any one: they are all the same version).
  const first = await gateway({});
  const { body } = await api(first, 'GET', '/v1/python');
  site = path.join(work, 'site');
  await run(TEST_PYTHON, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-index', '--target', site, body.wheels[0].url]);
  b = await launchBrowser();
}, TIMEOUT);

afterAll(async () => {
  for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  await b?.close();
  await cleanup();
  if (work) await rm(work, { recursive: true, force: true });
});

/** A gateway of its own (own project, own worker) that allows no browser origin. */
async function boardGateway(): Promise<RunningServer> {
  const running = await gateway({ project: await tempProject(await fixtureFiles('kernel-widgets')), allowOrigins: [] });
  expect(running.gateway.options.allowOrigins).toEqual([]);
  return running;
}

/** The environment a front end (and so its kernels) runs with: the gateway by PORTICO_URL, the wheel's `portico` on the path. */
function kernelEnv(dir: string, running: RunningServer): Record<string, string> {
  return { ...isolatedJupyter(dir), PORTICO_URL: running.url, PYTHONPATH: site, PYTHONNOUSERSITE: '1' };
}

const CELL = (name: string) => `from portico.client import Gateway\nboard = Gateway().interface("board", [{"name": "${name}"}])\nboard`;

/** Where the widget is: the page, or the frame that holds it. */
type Scope = Page | Frame;

async function boardUuid(running: RunningServer, name: string): Promise<string> {
  return (await api(running, 'POST', '/v1/interfaces', { target: 'board', version: [{ name }] })).body.uuid;
}

const call = (running: RunningServer, target: string, method: string, args: unknown[] = []) => api(running, 'POST', '/v1/interfaces/call', { target, method, args });

/** What every front end must do with the board's widget (issue 42, Deliver 4). */
async function exercise(scope: Scope, running: RunningServer, name: string): Promise<void> {
  const uuid = await boardUuid(running, name);
  await scope.locator('.board-title', { hasText: 'untitled' }).waitFor(WAIT);
  // the picture, a binary value, arrived whole and decodes
  await expect.poll(() => scope.locator('.board-image').evaluate((img: HTMLImageElement) => img.naturalWidth), WAIT).toBe(4);
  // clicks in the page reach Python
  for (let i = 1; i <= 3; i++) {
    await scope.locator('.board-click').click();
    await scope.locator('.board-click', { hasText: `clicks: ${i}` }).waitFor(WAIT);
  }
  await expect.poll(async () => (await call(running, uuid, 'state')).body.payload?.clicks, WAIT).toBe(3);
  // a change from Python, through another client, shows in the page
  expect((await call(running, uuid, 'retitle', ['from Python'])).status).toBe(200);
  await scope.locator('.board-title', { hasText: 'from Python' }).waitFor(WAIT);
  // a custom message is answered
  await scope.locator('.board-ping').click();
  await expect.poll(() => scope.locator('.board-reply').textContent(), WAIT).toBe(JSON.stringify({ pong: 'ping', clicks: 3 }));
  // the worker dies: the widget comes back with its state, and says what happened
  await new Promise((resolve) => setTimeout(resolve, 300)); // the state is saved 30 ms after a change
  expect((await call(running, 'probe', 'crash')).body.code).toBe('worker_crashed');
  await scope.locator('.portico-widget-notice', { hasText: 'restarted' }).waitFor(WAIT);
  await scope.locator('.board-title', { hasText: 'from Python' }).waitFor(WAIT);
  await scope.locator('.board-click', { hasText: 'clicks: 3' }).waitFor(WAIT);
  expect((await call(running, uuid, "state")).body.payload).toMatchObject({ title: "from Python", clicks: 3 });
  // after that, a click still reaches Python
  await scope.locator('.board-click').click();
  await expect.poll(async () => (await call(running, uuid, 'state')).body.payload?.clicks, WAIT).toBe(4);
  const page = 'page' in scope ? scope.page() : scope;
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `kernel-widget-${name}.png`) });
}

/** A folder of its own under the suite's work folder for `name`, with its notebook root holding board.ipynb (the board named `name`). */
async function notebookFolder(name: string): Promise<{ dir: string; root: string }> {
  const dir = path.join(work, name);
  const root = path.join(dir, 'root');
  await mkdir(root, { recursive: true });
  await writeNotebook(path.join(root, 'board.ipynb'), CELL(name));
  return { dir, root };
}

/** Opens `url` in a new page, runs its notebook's cells and exercises the board named `name`; the page's errors. */
async function runBoard(url: string, running: RunningServer, name: string, before: (page: Page) => void = () => undefined): Promise<{ page: Page; errors: string[] }> {
  const { page, errors } = await b.newPage();
  before(page);
  await page.goto(url);
  await runAllCells(page);
  await exercise(page, running, name);
  return { page, errors };
}

/** Page errors that are not the front end's own noise. */
function ownErrors(errors: string[]): string[] {
  return errors.filter((e) => /portico|board|anywidget/i.test(e));
}

describe('a proxy shown through the kernel', { timeout: TIMEOUT }, () => {
  it('JupyterLab without the Portico extension: the live widget, synced both ways', async () => {
    const running = await boardGateway();
    const { dir, root } = await notebookFolder('lab');
    const lab = await startJupyter('lab', VENV_BIN, kernelEnv(dir, running), root);
    stops.push(lab.stop);
    const { errors } = await runBoard(`${lab.url}/lab/tree/board.ipynb`, running, 'lab');
    expect(ownErrors(errors)).toEqual([]);
  });

  it('Notebook 7 without the Portico extension', async () => {
    const running = await boardGateway();
    const { dir, root } = await notebookFolder('notebook');
    const notebook = await startJupyter('notebook', FRONT_ENDS_BIN, kernelEnv(dir, running), root);
    stops.push(notebook.stop);
    const { errors } = await runBoard(`${notebook.url}/notebooks/board.ipynb`, running, 'notebook');
    expect(ownErrors(errors)).toEqual([]);
  });

  it("Notebook 7 with Portico's extension: it loads, and with the gateway out of the browser's reach the output falls back to the kernel's view", async () => {
    const running = await boardGateway();
    const { dir, root } = await notebookFolder('notebook-extension');
    const installed = await installExtension(dir, running.url, { bin: FRONT_ENDS_BIN });
    const notebook = await startJupyter('notebook', FRONT_ENDS_BIN, { ...installed, ...kernelEnv(dir, running) }, root);
    stops.push(notebook.stop);
    const consoleLines: string[] = [];
    const { page, errors } = await runBoard(`${notebook.url}/notebooks/board.ipynb`, running, 'notebook-extension', (page) => page.on('console', (message) => consoleLines.push(message.text())));
    // Portico's renderer took the output (its rank is ahead of the widget manager's) and chose the kernel's view.
    expect(await page.locator('.jp-PorticoWidget .jp-PorticoWidget-kernel').count()).toBe(1);
    expect(consoleLines.filter((line) => /failed to activate|No provider for/i.test(line))).toEqual([]);
    expect(consoleLines.some((line) => line.includes('showing the widget through the kernel') && line.includes('origin'))).toBe(true);
    expect(await page.locator('.jp-PorticoWidget-host').count()).toBe(0);
    expect(ownErrors(errors)).toEqual([]);
  });

  it('JupyterLab with the extension, the gateway in reach: the same output keeps the direct path', async () => {
    const port = await anyFreePort();
    const running = await gateway({ project: await tempProject(await fixtureFiles('kernel-widgets')), allowOrigins: [`http://127.0.0.1:${port}`] });
    const { dir, root } = await notebookFolder('lab-direct');
    const installed = await installExtension(dir, running.url);
    const lab = await startLab({ ...installed, ...kernelEnv(dir, running) }, root, port);
    stops.push(lab.stop);
    const { page, errors } = await runBoard(`${lab.url}/lab/tree/board.ipynb`, running, 'lab-direct');
    expect(await page.locator('.jp-PorticoWidget-host .board-title').count()).toBe(1);
    expect(await page.locator('.jp-PorticoWidget-kernel').count()).toBe(0);
    expect(ownErrors(errors)).toEqual([]);
  });


  it('Voilà: the notebook as a dashboard', async () => {
    const running = await boardGateway();
    const { dir, root } = await notebookFolder('voila');
    const voila: FrontEnd = await startVoila(FRONT_ENDS_BIN, kernelEnv(dir, running), root, 'board.ipynb');
    stops.push(voila.stop);
    const { page, errors } = await b.newPage();
    await page.goto(`${voila.url}/`);
    await exercise(page, running, 'voila');
    expect(ownErrors(errors)).toEqual([]);
  });


  it('marimo: a cell holding a proxy, through its anywidget support', async () => {
    const running = await boardGateway();
    const dir = path.join(work, 'marimo');
    await mkdir(dir, { recursive: true });
    const app = path.join(dir, 'board_app.py');
    await writeMarimoApp(app, ['from portico.client import Gateway', 'board = Gateway().interface("board", [{"name": "marimo"}])'], 'board');
    const marimo = await startMarimo(FRONT_ENDS_BIN, kernelEnv(dir, running), app);
    stops.push(marimo.stop);
    const { page, errors } = await b.newPage();
    await page.goto(`${marimo.url}/`);
    await exercise(page, running, 'marimo');
    expect(ownErrors(errors)).toEqual([]);
  });
});

describe('through the kernel, faults and bad input (JupyterLab without the extension)', { timeout: TIMEOUT }, () => {
  let running: RunningServer;
  let port: number;
  let project: string;
  let lab: FrontEnd;
  let page: Page;
  let errors: string[];
  let notebookFile: string;
  const TOKEN = 'kernel-widget-secret';

  const cells = [
    'from portico.client import Gateway\ng = Gateway()\nboard = g.interface("board")\nboard',
    'board  # a second view of the same proxy',
    'g.interface("odd")',
  ];

  beforeAll(async () => {
    port = await anyFreePort();
    project = await tempProject(await fixtureFiles('kernel-widgets'));
    running = await gateway({ project, port, apiToken: TOKEN, allowOrigins: [] });
    const dir = path.join(work, 'faults');
    const root = path.join(dir, 'root');
    await mkdir(root, { recursive: true });
    notebookFile = path.join(root, 'faults.ipynb');
    await writeNotebook(notebookFile, cells);
    lab = await startJupyter('lab', VENV_BIN, { ...kernelEnv(dir, running), PORTICO_TOKEN: TOKEN }, root);
    stops.push(lab.stop);
    ({ page, errors } = await b.newPage());
    await page.goto(`${lab.url}/lab/tree/faults.ipynb`);
    await runAllCells(page);
    await page.locator('.board-title').first().waitFor(WAIT);
  }, TIMEOUT);

  const rest = (method: string, args: unknown[] = []) =>
    api(running, 'POST', '/v1/interfaces/call', { target: 'board', method, args }, { Authorization: `Bearer ${TOKEN}` });
  const clicksInPython = async () => (await rest('state')).body.payload?.clicks;

  it('two views of one proxy, and a page on the gateway plus the notebook, stay in sync', async () => {
    await expect.poll(() => page.locator('.board-title').count(), WAIT).toBe(2);
    const before = (await clicksInPython()) as number;
    await page.locator('.board-click').first().click();
    await page.locator('.board-click').nth(1).filter({ hasText: `clicks: ${before + 1}` }).waitFor(WAIT);
    // The landing page (on the gateway's own origin) shows the same instance through the direct path.
    const landing = await b.newPage();
    await landing.page.goto(`${running.url}/#token=${TOKEN}`);
    const card = landing.page.locator('article[data-module="board"]');
    await card.locator('.board-click', { hasText: `clicks: ${before + 1}` }).waitFor(WAIT);
    await card.locator('.board-click').click();
    await page.locator('.board-click').first().filter({ hasText: `clicks: ${before + 2}` }).waitFor(WAIT);
    await page.locator('.board-click').first().click();
    await card.locator('.board-click', { hasText: `clicks: ${before + 3}` }).waitFor(WAIT);
    await landing.page.close();
  });

  it('a state key that cannot be a trait: a clear error in its cell, the other widgets live', async () => {
    const error = page.locator('.portico-widget-error');
    await error.waitFor(WAIT);
    expect(await error.textContent()).toMatch(/cannot be shown: .*'my-key' \(not a Python name\), 'layout' \(a name ipywidgets or Portico uses\).*widget_state_keys/);
    expect(await page.locator('.board-title').count()).toBe(2);
  });

  it('many rapid changes from the page: none lost, the last one wins on both sides', async () => {
    const before = (await clicksInPython()) as number;
    const button = page.locator('.board-click').first();
    for (let i = 0; i < 40; i++) await button.click({ delay: 0 });
    await expect.poll(clicksInPython, WAIT).toBe(before + 40);
    await page.locator('.board-click').nth(0).filter({ hasText: `clicks: ${before + 40}` }).waitFor(WAIT);
    await page.locator('.board-click').nth(1).filter({ hasText: `clicks: ${before + 40}` }).waitFor(WAIT);
    // and it stays there (no late echo of an older value)
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await page.locator('.board-click').first().textContent()).toBe(`clicks: ${before + 40}`);
  });

  it('a 10 MB binary value reaches the page through the kernel whole', async () => {
    const size = 10_000_000;
    expect((await rest('picture', [size])).body.payload).toBe(size);
    const { image_sum: sum } = (await rest('state')).body.payload;
    await page.locator('.board-size').first().filter({ hasText: String(size) }).waitFor(WAIT);
    expect(await page.locator('.board-sum').first().textContent()).toBe(String(sum));
    await expect.poll(() => page.locator('.board-image').first().evaluate((img: HTMLImageElement) => img.naturalWidth), WAIT).toBe(2);
    await rest('picture', [100]); // small again for what follows
    await page.locator('.board-size').first().filter({ hasText: '100' }).waitFor(WAIT);
  });

  it('a binary value set in the page reaches Python whole, through the kernel', async () => {
    await page.locator('.board-blank').first().click();
    await expect.poll(async () => (await rest('state')).body.payload?.image_bytes, WAIT).toBe(7);
    // 137 80 78 71 1 2 3, weighted by (i % 7) + 1 as the widget's checksum is
    expect((await rest('state')).body.payload.image_sum).toBe(137 * 1 + 80 * 2 + 78 * 3 + 71 * 4 + 1 * 5 + 2 * 6 + 3 * 7);
    await page.locator('.board-size').nth(1).filter({ hasText: '7' }).waitFor(WAIT); // the other view follows
  });

  it('the gateway going away: the page says so, the kernel stays quiet, and it all comes back with the gateway', async () => {
    await rest('retitle', ['before the outage']);
    await page.locator('.board-title').first().filter({ hasText: 'before the outage' }).waitFor(WAIT);
    await new Promise((resolve) => setTimeout(resolve, 300)); // saved 30 ms after the change
    await running.close();
    await page.locator('.portico-widget-notice', { hasText: 'cannot be reached' }).first().waitFor(WAIT);
    await new Promise((resolve) => setTimeout(resolve, 3000)); // several reconnect tries meanwhile
    running = await gateway({ project, port, apiToken: TOKEN, allowOrigins: [] });
    await expect.poll(() => page.locator('.portico-widget-notice:visible').count(), WAIT).toBe(0);
    expect(await page.locator('.board-title').first().textContent()).toBe('before the outage');
    const before = (await clicksInPython()) as number;
    await page.locator('.board-click').first().click();
    await expect.poll(clicksInPython, WAIT).toBe(before + 1);
    // No traceback or warning in any cell: the outage shows in the widget only.
    expect(await page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').count()).toBe(0);
    expect(await page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]').count()).toBe(0);
  });

  it('a kernel restart: the cell run again shows the same live instance', async () => {
    await rest('retitle', ['kept across kernels']);
    const clicks = await clicksInPython();
    await page.evaluate(() => (window as any).jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart());
    await runAllCells(page);
    await page.locator('.board-title').first().filter({ hasText: 'kept across kernels' }).waitFor(WAIT);
    await page.locator('.board-click').first().filter({ hasText: `clicks: ${clicks}` }).waitFor(WAIT);
    await page.locator('.board-click').first().click();
    await expect.poll(clicksInPython, WAIT).toBe((clicks as number) + 1);
  });

  it('the saved notebook holds no secret', async () => {
    await page.evaluate(() => (window as any).jupyterapp.commands.execute('docmanager:save'));
    await expect.poll(async () => (await readFile(notebookFile, 'utf8')).includes('application/vnd.jupyter.widget-view+json'), WAIT).toBe(true);
    const saved = await readFile(notebookFile, 'utf8');
    expect(saved).not.toContain(TOKEN);
    expect(saved).toContain(running.url);
    expect(ownErrors(errors)).toEqual([]);
  });
});
