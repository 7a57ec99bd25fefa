/**
 * The landing page's runs view (issue 32 item 5), in Chromium against a real gateway: a run
 * dispatched from a module's panel is followed to its end (output as it grows, a progress bar from
 * its progress events, the chart it emits, its status), the list shows every run with its module
 * and status, and a running run is cancelled from it. On a gateway with an API token the page
 * calls, streams and follows with it, and its snippets use it from $PORTICO_TOKEN.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type LaunchedBrowser } from '../browser.js';
import { api, cleanup, gateway, ROOT } from '../helpers.js';
import type { RunningServer } from '../../packages/server/src/index.js';
import { runNotebookSnippet } from '../notebook.js';

const E2E_TIMEOUT = 120_000;
const WAIT = { timeout: 30_000 };

let running: RunningServer;
let b: LaunchedBrowser;

beforeAll(async () => {
  running = await gateway();
  b = await launchBrowser();
}, E2E_TIMEOUT);

afterAll(async () => {
  await b?.close();
  await cleanup();
}, E2E_TIMEOUT);

async function open(): Promise<{ page: Page; errors: string[] }> {
  const tracked = await b.newPage();
  await tracked.page.goto(`${running.url}/`);
  await tracked.page.locator('#runs:not([hidden])').waitFor(WAIT);
  return tracked;
}

describe('landing page: runs', { timeout: E2E_TIMEOUT }, () => {
  it('dispatches a run from a module and follows its output, its progress and the chart it emits to its end', async () => {
    const { page, errors } = await open();
    const card = page.locator('article[data-module="gallery"]');
    await card.locator('details.try > summary').waitFor(WAIT);
    await card.locator('details.try > summary').click();
    await card.locator('form.interface [name="frames"]').fill('2');
    await card.locator('button.dispatch').click();

    await page.locator('#run-view:not([hidden])').waitFor(WAIT);
    const uuid = (await page.locator('#run-title').textContent())!.replace(/^Run /, '');
    expect(uuid).toMatch(/^[0-9a-f]{24}$/);
    await page.locator('#run-status .status', { hasText: 'finished' }).waitFor(WAIT);
    await expect.poll(() => page.locator('#run-output').textContent()).toBe('frame 1/2\nframe 2/2\n');
    await page.locator('#run-progress .progress-status', { hasText: '100% · frame 2 of 2' }).waitFor(WAIT);
    expect(await page.locator('#run-progress progress').evaluate((p: HTMLProgressElement) => p.value)).toBe(1);
    // newest first: the chart the run emitted last, then its two progress events
    await expect.poll(() => page.locator('#run-events > li').count()).toBe(3);
    expect(await page.locator('#run-events > li').first().locator('img.portico-display-image').getAttribute('alt')).toBe("<Chart 'sin(2π·2·t)' of 60 points>");
    expect(await page.locator('#run-cancel').isDisabled()).toBe(true);

    const row = page.locator(`#runs-list li[data-run="${uuid}"]`);
    await expect.poll(() => row.getAttribute('data-status')).toBe('finished');
    expect(await row.locator('.run-module').textContent()).toBe('gallery');
    expect((await api(running, 'GET', `/v1/executions/${uuid}`)).body.status).toBe('finished');

    // Following it again from the list shows the same output.
    await page.locator('#run-close').click();
    expect(await page.locator('#run-view').isHidden()).toBe(true);
    await row.locator('button.follow').click();
    await expect.poll(() => page.locator('#run-output').textContent()).toBe('frame 1/2\nframe 2/2\n');
    expect(errors).toEqual([]);
  });

  it('lists the runs with their module and status, and cancels a running one', async () => {
    const dispatched = await api(running, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ epochs: 1, delay: 3600 }] }] });
    expect(dispatched.status).toBe(200);
    const uuid = dispatched.body.uuid as string;
    const { page, errors } = await open();
    const row = page.locator(`#runs-list li[data-run="${uuid}"]`);
    await row.waitFor(WAIT);
    expect(await row.locator('.run-module').textContent()).toBe('trainer');
    expect(['pending', 'running']).toContain(await row.getAttribute('data-status'));
    expect(await row.locator('button.cancel').isEnabled()).toBe(true);

    await row.locator('button.cancel').click();
    await page.locator('#run-status .status', { hasText: 'interrupted' }).waitFor(WAIT);
    expect(await page.locator('#run-status').textContent()).toContain('(cancelled)');
    await expect.poll(() => row.getAttribute('data-status')).toBe('interrupted');
    expect(await row.locator('button.cancel').isDisabled()).toBe(true);
    const info = (await api(running, 'GET', `/v1/executions/${uuid}`)).body;
    expect([info.status, info.cancelled]).toEqual(['interrupted', true]);
    expect(errors).toEqual([]);
  });

  it('on a gateway with a token: calls, streams and follows runs with it; the snippets take it from $PORTICO_TOKEN and work', async () => {
    const guarded = await gateway({ apiToken: 'runs-token' });
    const { page, errors } = await b.newPage();
    await page.goto(`${guarded.url}/#token=runs-token`);
    const card = page.locator('article[data-module="streamer"]');
    await card.locator('details.try > summary').waitFor(WAIT);
    await card.locator('details.try > summary').click();
    await card.locator('form[data-method="ticks"] [name="n"]').fill('2');
    await card.locator('form[data-method="ticks"] button[type=submit]').click();
    await card.locator('form[data-method="ticks"] .stream-end').waitFor(WAIT);
    expect(await card.locator('form[data-method="ticks"] ol.items > li').allTextContents()).toEqual(['"tick 0"', '"tick 1"']);
    await card.locator('form[data-method="echo"] [name="value"]').fill('{"a": [1, 2]}');
    await card.locator('form[data-method="echo"] button[type=submit]').click();
    await card.locator('form[data-method="echo"] .answer pre.json').waitFor(WAIT);
    expect(JSON.parse((await card.locator('form[data-method="echo"] .answer pre.json').textContent())!)).toEqual({ a: [1, 2] });

    // A streamer defines no __call__: nothing offers to run it. The gallery does, with the token too.
    expect(await card.locator('button.dispatch').isVisible()).toBe(false);
    const gallery = page.locator('article[data-module="gallery"]');
    await gallery.locator('details.try > summary').click();
    await gallery.locator('form.interface [name="frames"]').fill('1');
    await gallery.locator('button.dispatch').click();
    await page.locator('#run-status .status', { hasText: 'finished' }).waitFor(WAIT);
    await expect.poll(() => page.locator('#run-output').textContent()).toBe('frame 1/1\n');

    await card.locator('details.use > summary').click();
    const env = { ...process.env, PORTICO_TOKEN: 'runs-token', PYTHONPATH: path.join(ROOT, 'packages/server/python') };
    const curl = (await card.locator('[data-snippet="curl"] pre').textContent())!;
    expect(curl).toContain('-H "authorization: Bearer $PORTICO_TOKEN"');
    expect((await promisify(execFile)('sh', ['-c', curl], { env })).stdout).toBe('{"payload":null}');
    // The notebook snippet gets the wheel with curl and the token (pip sends none), then pip installs it.
    const notebook = (await card.locator('[data-snippet="notebook"] pre').textContent())!;
    expect(notebook).toMatch(/^!curl -fsS -H "authorization: Bearer \$PORTICO_TOKEN" -o \/tmp\/portico-.*\.whl .*\n%pip install \/tmp\/portico-/);
    const ran = await runNotebookSnippet(notebook, { ...env, PYTHONPATH: undefined });
    expect(ran).toBe('0\n1\n2\n'); // its first streaming method, aticks(n=3)
    expect(errors).toEqual([]);
  });
});
