/**
 * Published anywidgets (wigglystuff, drawdata, quak) served unchanged by portico.widgets.serve and
 * shown in a real JupyterLab through the Portico extension: a notebook displays each interface
 * with portico.client, and the user's mouse in the notebook output reaches Python.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { launchBrowser, type LaunchedBrowser } from '../browser.js';
import { api, cleanup, fixtureFiles, gateway, tempProject } from '../helpers.js';
import { TEST_PYTHON } from '../notebook.js';
import type { RunningServer } from '../../packages/server/src/index.js';
import { isDrawdataOwnWarning, PUBLISHED_WIDGETS, type ServedWidget } from './anywidget-actions.js';
import { anyFreePort, command, installExtension, openNotebook, startLab, type RunningLab } from './lab.js';

const TIMEOUT = 240_000;

/** A notebook whose cells show the fixture interfaces `targets`, one per cell, through the Python client. */
function notebook(targets: string[]): string {
  const code = (source: string) => ({ cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source });
  return JSON.stringify({
    cells: [
      code('import os\nfrom portico.client import Gateway\ng = Gateway(os.environ["PORTICO_URL"])'),
      ...targets.map((target) => code(`g.interface(${JSON.stringify(target)})`)),
    ],
    metadata: { kernelspec: { display_name: 'Python 3 (ipykernel)', language: 'python', name: 'python3' } },
    nbformat: 4,
    nbformat_minor: 5,
  });
}

let work: string;
let running: RunningServer;
let lab: RunningLab | undefined;
let b: LaunchedBrowser | undefined;
let page: Page;
let errors: string[];

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'portico-anywidgets-lab-'));
  const port = await anyFreePort();
  const labUrl = `http://127.0.0.1:${port}`;
  running = await gateway({ project: await tempProject(await fixtureFiles('anywidgets')), python: TEST_PYTHON, allowOrigins: [labUrl] });
  const notebooks = path.join(work, 'notebooks');
  await mkdir(notebooks, { recursive: true });
  await writeFile(path.join(notebooks, 'anywidgets.ipynb'), notebook(PUBLISHED_WIDGETS.map((widget) => widget.target)));
  lab = await startLab(await installExtension(path.join(work, 'jupyter'), running.url), notebooks, port);
  b = await launchBrowser();
  ({ page, errors } = await b.newPage());
  await page.setViewportSize({ width: 1400, height: 1000 });
  await openNotebook(page, lab.url, 'anywidgets.ipynb');
  await command(page, 'notebook:run-all-cells');
}, TIMEOUT);

afterAll(async () => {
  await b?.close();
  await lab?.stop();
  await cleanup();
  await rm(work, { recursive: true, force: true });
}, TIMEOUT);

/** The notebook output that rendered the widget containing `marker`, and its Python state. */
async function output(marker: string): Promise<ServedWidget> {
  const root = page.locator('[data-testid=portico-widget]').filter({ has: page.locator(marker) });
  try {
    await root.locator(marker).first().waitFor({ timeout: 120_000 });
  } catch (err) {
    const outputs = await page.locator('.jp-OutputArea-output').allInnerTexts();
    throw new Error(`${(err as Error).message}\noutputs: ${JSON.stringify(outputs).slice(0, 3000)}\nlab: ${lab!.log.join('').slice(-1500)}`);
  }
  const uuid = (await root.locator('.jp-PorticoWidget-host[data-uuid]').getAttribute('data-uuid'))!;
  const call = async (method: string, args: unknown[] = []) => (await api(running, 'POST', '/v1/interfaces/call', { target: uuid, method, args })).body.payload;
  const python = () => call('widget_state');
  return { page, root, python, call };
}

describe('published anywidgets in JupyterLab', { timeout: TIMEOUT }, () => {
  for (const { marker, story, act } of PUBLISHED_WIDGETS) {
    it(`${story} (in a notebook output)`, async () => {
      await act(await output(marker));
    });
  }

  it("no widget logged an error in the page (but drawdata's own svg warning)", () => {
    expect(errors.filter((error) => !isDrawdataOwnWarning(error))).toEqual([]);
  });
});
