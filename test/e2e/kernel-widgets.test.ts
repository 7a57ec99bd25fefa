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
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
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
  expect((await call(running, uuid, 'state')).body.payload).toEqual({ title: 'from Python', clicks: 3, image_bytes: expect.any(Number) });
  // after that, a click still reaches Python
  await scope.locator('.board-click').click();
  await expect.poll(async () => (await call(running, uuid, 'state')).body.payload?.clicks, WAIT).toBe(4);
  const page = 'page' in scope ? scope.page() : scope;
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `kernel-widget-${name}.png`) });
}

/** Page errors that are not the front end's own noise. */
function ownErrors(errors: string[]): string[] {
  return errors.filter((e) => /portico|board|anywidget/i.test(e));
}

describe('a proxy shown through the kernel', { timeout: TIMEOUT }, () => {
  it('JupyterLab without the Portico extension: the live widget, synced both ways', async () => {
    const running = await boardGateway();
    const dir = path.join(work, 'lab');
    const root = path.join(dir, 'root');
    await mkdir(root, { recursive: true });
    await writeNotebook(path.join(root, 'board.ipynb'), CELL('lab'));
    const lab = await startJupyter('lab', VENV_BIN, kernelEnv(dir, running), root);
    stops.push(lab.stop);
    const { page, errors } = await b.newPage();
    await page.goto(`${lab.url}/lab/tree/board.ipynb`);
    await runAllCells(page);
    await exercise(page, running, 'lab');
    expect(ownErrors(errors)).toEqual([]);
  });

  it('Notebook 7 without the Portico extension', async () => {
    const running = await boardGateway();
    const dir = path.join(work, 'notebook');
    const root = path.join(dir, 'root');
    await mkdir(root, { recursive: true });
    await writeNotebook(path.join(root, 'board.ipynb'), CELL('notebook'));
    const notebook = await startJupyter('notebook', FRONT_ENDS_BIN, kernelEnv(dir, running), root);
    stops.push(notebook.stop);
    const { page, errors } = await b.newPage();
    await page.goto(`${notebook.url}/notebooks/board.ipynb`);
    await runAllCells(page);
    await exercise(page, running, 'notebook');
    expect(ownErrors(errors)).toEqual([]);
  });

  it("Notebook 7 with Portico's extension: it loads, and with the gateway out of the browser's reach the output falls back to the kernel's view", async () => {
    const running = await boardGateway();
    const dir = path.join(work, 'notebook-extension');
    const root = path.join(dir, 'root');
    await mkdir(root, { recursive: true });
    await writeNotebook(path.join(root, 'board.ipynb'), CELL('notebook-extension'));
    const installed = await installExtension(dir, running.url, { bin: FRONT_ENDS_BIN });
    const notebook = await startJupyter('notebook', FRONT_ENDS_BIN, { ...installed, ...kernelEnv(dir, running) }, root);
    stops.push(notebook.stop);
    const { page, errors } = await b.newPage();
    const consoleLines: string[] = [];
    page.on('console', (message) => consoleLines.push(message.text()));
    await page.goto(`${notebook.url}/notebooks/board.ipynb`);
    await runAllCells(page);
    // Portico's renderer took the output (its rank is ahead of the widget manager's) and chose the kernel's view.
    await page.locator('.jp-PorticoWidget .jp-PorticoWidget-kernel').waitFor(WAIT);
    await exercise(page, running, 'notebook-extension');
    expect(consoleLines.filter((line) => /failed to activate|No provider for/i.test(line))).toEqual([]);
    expect(consoleLines.some((line) => line.includes('showing the widget through the kernel') && line.includes('origin'))).toBe(true);
    expect(await page.locator('.jp-PorticoWidget-host').count()).toBe(0);
    expect(ownErrors(errors)).toEqual([]);
  });

  it('JupyterLab with the extension, the gateway in reach: the same output keeps the direct path', async () => {
    const dir = path.join(work, 'lab-direct');
    const root = path.join(dir, 'root');
    await mkdir(root, { recursive: true });
    const port = await anyFreePort();
    const running = await gateway({ project: await tempProject(await fixtureFiles('kernel-widgets')), allowOrigins: [`http://127.0.0.1:${port}`] });
    await writeNotebook(path.join(root, 'board.ipynb'), CELL('lab-direct'));
    const installed = await installExtension(dir, running.url);
    const lab = await startLab({ ...installed, ...kernelEnv(dir, running) }, root, port);
    stops.push(lab.stop);
    const { page, errors } = await b.newPage();
    await page.goto(`${lab.url}/lab/tree/board.ipynb`);
    await runAllCells(page);
    await page.locator('.jp-PorticoWidget-host .board-title').waitFor(WAIT);
    expect(await page.locator('.jp-PorticoWidget-kernel').count()).toBe(0);
    await exercise(page, running, 'lab-direct');
    expect(ownErrors(errors)).toEqual([]);
  });

  it('Voilà: the notebook as a dashboard', async () => {
    const running = await boardGateway();
    const dir = path.join(work, 'voila');
    const root = path.join(dir, 'root');
    await mkdir(root, { recursive: true });
    await writeNotebook(path.join(root, 'board.ipynb'), CELL('voila'));
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
