/**
 * The gateway's landing page in Chromium: every module listed with live widget previews, and the
 * data panel streaming a file up and back with a progress bar.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { launchBrowser, type LaunchedBrowser } from '../browser.js';
import { cleanup, gateway, ROOT, tempProject } from '../helpers.js';

/** Where the screenshots this suite takes are kept for a person to look at (printed in the output). */
const SCREENSHOTS = path.join(ROOT, '.cache', 'screenshots');

const DOCUMENTED = `"""Documented."""
from portico import Interface


class Documented(Interface):
    """Scales values by \`\`factor\`\`, *gently*, and **never** below zero.

    It supports:

    - plain numbers
    - lists of numbers

    :param values: the numbers to scale
    :returns: the scaled \`\`values\`\`
    """

    class Config:
        factor: float = 2.0

    def scale(self, values):
        return [max(0, v * self.config.factor) for v in values]
`;

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
  it('reads well at 390 px and 1440 px: docstrings rendered, nothing scrolls sideways, an icon; screenshots in the output', async () => {
    const running = await gateway({ project: await tempProject({ 'documented.py': DOCUMENTED }) });
    b ??= await launchBrowser();
    const { page, errors } = await b.newPage();
    await mkdir(SCREENSHOTS, { recursive: true });
    for (const width of [390, 1440]) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${running.url}/`);
      await page.locator('article[data-module="counter"] button.counter-button').waitFor({ timeout: 30_000 });
      await page.locator('article[data-module="wave"] svg polyline').waitFor();
      const sideways = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(sideways, `the page scrolls sideways by ${sideways} px at ${width} px`).toBeLessThanOrEqual(0);
      const file = path.join(SCREENSHOTS, `landing-${width}.png`);
      await page.screenshot({ path: file, fullPage: true });
      console.log(`screenshot of the landing page at ${width} px: ${file}`);
    }
    const doc = page.locator('article[data-module="documented"] .doc');
    expect(await doc.locator('code').allTextContents()).toEqual(['factor', 'values', 'values']);
    expect(await doc.locator('em').textContent()).toBe('gently');
    expect(await doc.locator('strong').textContent()).toBe('never');
    expect(await doc.locator('li').allTextContents()).toEqual(['plain numbers', 'lists of numbers']);
    expect(await doc.locator('dd').allTextContents()).toEqual(['the numbers to scale', 'the scaled values']);
    expect(await doc.textContent()).not.toMatch(/``|:param|:returns/);
    // the icon the page links, and the one browsers ask for on their own
    for (const icon of ['/static/favicon.svg', '/favicon.ico']) {
      const res = await fetch(running.url + icon);
      expect(res.status, icon).toBe(200);
      expect(res.headers.get('content-type')).toBe('image/svg+xml');
    }
    expect(await page.locator('link[rel=icon]').getAttribute('href')).toBe('/static/favicon.svg');
    expect(errors).toEqual([]);
  });
});
