/**
 * The gateway's landing page in Chromium: every module listed with live widget previews, and the
 * data panel streaming a file up and back with a progress bar.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { launchBrowser, type LaunchedBrowser } from '../browser.js';
import { cleanup, gateway, tempProject } from '../helpers.js';

const E2E_TIMEOUT = 120_000;
let b: LaunchedBrowser | undefined;

afterAll(async () => {
  await b?.close();
  await cleanup();
}, E2E_TIMEOUT);

describe('landing page', { timeout: E2E_TIMEOUT }, () => {
  it('lists the modules with live widgets, and uploads and reads back a file with progress', async () => {
    const project = await tempProject();
    const running = await gateway({ project, apiToken: 'landing-token' });
    b = await launchBrowser();
    const { page, errors } = await b.newPage();
    // The token travels in the fragment (never sent to the server, removed from the address bar).
    await page.goto(`${running.url}/#token=landing-token`);
    expect(new URL(page.url()).hash).toBe('');
    await page.locator('article[data-module="counter"] button.counter-button').waitFor({ timeout: 30_000 });
    expect(await page.locator('article[data-module="counter"] button.counter-button').textContent()).toBe('count is 0');
    await page.locator('article[data-module="wave"] svg polyline').waitFor();
    expect((await page.locator('article[data-module="wave"] svg polyline').getAttribute('points'))!.split(' ')).toHaveLength(200);
    const modules = await page.locator('article[data-module]').evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.module));
    expect(modules).toEqual(expect.arrayContaining(['counter', 'files', 'streamer', 'trainer', 'wave']));

    const data = randomBytes(5 * 1024 * 1024 + 3);
    await page.locator('#file').setInputFiles({ name: 'sample.bin', mimeType: 'application/octet-stream', buffer: data });
    await page.locator('#upload').click();
    await expect.poll(() => page.locator('#transfer-status').textContent(), { timeout: 30_000 }).toBe(`Uploaded ${data.length.toLocaleString('en-US')} bytes to sample.bin`);
    expect(await page.locator('#progress').evaluate((el: HTMLProgressElement) => [el.value, el.max])).toEqual([data.length, data.length]);
    const dirs = await readdir(path.join(project, '.portico/interfaces'));
    const stored = await Promise.all(dirs.map((d) => readFile(path.join(project, '.portico/interfaces', d, 'sample.bin')).catch(() => undefined)));
    const file = stored.find(Boolean)!;
    expect(createHash('sha256').update(file).digest('hex')).toBe(createHash('sha256').update(data).digest('hex'));

    await page.locator('#readback').click();
    await expect.poll(() => page.locator('#transfer-status').textContent(), { timeout: 30_000 }).toBe(`Read back ${data.length.toLocaleString('en-US')} bytes (sizes match)`);
    expect(errors).toEqual([]);
  });

  it('asks for the token when the gateway needs one and none was given', async () => {
    const running = await gateway({ apiToken: 'another-token' });
    b ??= await launchBrowser();
    const { page } = await b.newPage();
    await page.goto(`${running.url}/`);
    await page.locator('#token-form').waitFor({ state: 'visible', timeout: 30_000 });
    await page.locator('#token').fill('another-token');
    await page.locator('#token-form button').click();
    await page.locator('article[data-module="counter"]').waitFor({ timeout: 30_000 });
  });
});
