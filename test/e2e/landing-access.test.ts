/**
 * The landing page for every reader (issue 32 item 5), in Chromium against a real gateway: every
 * control labelled and reachable with Tab, focus visible, a method called and a run followed with
 * the keyboard alone; at 390 px and 1440 px, with every panel open and answers shown, nothing
 * scrolls sideways. Full-page screenshots go to .cache/screenshots/landing-open-<width>.png
 * (printed in the output).
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type LaunchedBrowser } from '../browser.js';
import { api, cleanup, gateway, ROOT } from '../helpers.js';
import type { RunningServer } from '../../packages/server/src/index.js';

const SCREENSHOTS = path.join(ROOT, '.cache', 'screenshots');
const E2E_TIMEOUT = 120_000;
const WAIT = { timeout: 30_000 };

let running: RunningServer;
let b: LaunchedBrowser;

beforeAll(async () => {
  running = await gateway();
  b = await launchBrowser();
  await mkdir(SCREENSHOTS, { recursive: true });
}, E2E_TIMEOUT);

afterAll(async () => {
  await b?.close();
  await cleanup();
}, E2E_TIMEOUT);

/** Presses Tab until the focused element matches `selector` (at most `max` times); true when it did. */
async function tabTo(page: Page, selector: string, max = 200): Promise<boolean> {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return true;
    await page.keyboard.press('Tab');
  }
  return false;
}

/** Chromium logs every 4xx answer to fetch() by itself: not the page's error. */
const pageErrors = (errors: string[]) => errors.filter((e) => !/Failed to load resource: the server responded with a status of 4\d\d/.test(e));

describe('landing page: keyboard and narrow screens', { timeout: E2E_TIMEOUT }, () => {
  it('works from the keyboard alone: every control labelled and reached with Tab, focus visible, a method called with Enter, a run followed', async () => {
    const run = (await api(running, 'POST', '/v1/executions', { interfaces: [{ target: 'gallery', version: [{ frames: 1 }] }] })).body;
    const { page, errors } = await b.newPage();
    await page.goto(`${running.url}/`);
    await page.locator('article[data-module="counter"] details.try > summary').waitFor(WAIT);
    await page.locator(`#runs-list li[data-run="${run.uuid}"]`).waitFor(WAIT);
    await page.locator('article[data-module="wave"] details.try > summary').waitFor(WAIT);

    // Every control the page shows has a name a screen reader reads (widgets' own insides aside).
    const unnamed = await page.evaluate(() =>
      [...document.querySelectorAll('input, select, textarea, button, summary, [tabindex="0"]')]
        .filter((el) => !el.closest('[hidden], .widget'))
        .filter((el) => {
          const labels = (el as HTMLInputElement).labels;
          const name = el.getAttribute('aria-label') || (labels ? [...labels].map((l) => l.textContent).join('') : '') || (/^(BUTTON|SUMMARY)$/.test(el.tagName) ? el.textContent : '');
          return !name?.trim();
        })
        .map((el) => el.outerHTML.slice(0, 100)),
    );
    expect(unnamed).toEqual([]);

    expect(await tabTo(page, 'article[data-module="counter"] details.try > summary')).toBe(true);
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).toBe('solid');
    await page.keyboard.press('Enter');
    expect(await page.locator('article[data-module="counter"] details.try').evaluate((d: HTMLDetailsElement) => d.open)).toBe(true);

    const before = (await api(running, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'value' })).body.payload as number;
    expect(await tabTo(page, 'article[data-module="counter"] form[data-method="add"] [name="n"]')).toBe(true);
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).toBe('solid');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('3');
    await page.keyboard.press('Enter');
    const answer = page.locator('article[data-module="counter"] form[data-method="add"] .answer pre.json');
    await answer.waitFor(WAIT);
    expect(await answer.textContent()).toBe(String(before + 3));

    // the snippets' copy buttons and the runs list are reached the same way
    expect(await tabTo(page, `#runs-list li[data-run="${run.uuid}"] button.follow`)).toBe(true);
    await page.keyboard.press('Enter');
    await page.locator('#run-status .status', { hasText: 'finished' }).waitFor(WAIT);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('run-title');
    expect(await page.locator('#run-output').textContent()).toBe('frame 1/1\n');
    expect(errors).toEqual([]);
  });

  it('reads well at 390 px and 1440 px with every panel open and answers shown: nothing scrolls sideways (screenshots in the output)', async () => {
    const run = (await api(running, 'POST', '/v1/executions', { interfaces: [{ target: 'gallery', version: [{ frames: 2 }] }] })).body;
    for (const width of [390, 1440]) {
      const { page, errors } = await b.newPage();
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${running.url}/`);
      await page.locator('article[data-module="wave"] details.try > summary').waitFor(WAIT);
      for (const summary of await page.locator('article details.use > summary, article details.try > summary').all()) await summary.click();
      const gallery = page.locator('article[data-module="gallery"]');
      for (const method of ['chart', 'table', 'sweep']) {
        await gallery.locator(`form[data-method="${method}"] button[type=submit]`).click();
        await gallery.locator(`form[data-method="${method}"] .answer .result img, form[data-method="${method}"] .answer .result iframe`).first().waitFor(WAIT);
      }
      await page.locator('article[data-module="streamer"] form[data-method="ticks"] button[type=submit]').click();
      await page.locator('article[data-module="streamer"] form[data-method="ticks"] .stream-end').waitFor(WAIT);
      await page.locator('article[data-module="faulty"] form[data-method="explode"] button[type=submit]').click();
      await page.locator('article[data-module="faulty"] form[data-method="explode"] .error').waitFor(WAIT);
      await page.locator(`#runs-list li[data-run="${run.uuid}"] button.follow`).click();
      await page.locator('#run-status .status', { hasText: 'finished' }).waitFor(WAIT);
      await page.locator('#run-events img.portico-display-image').waitFor(WAIT);

      const sideways = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(sideways, `the page scrolls sideways by ${sideways} px at ${width} px`).toBeLessThanOrEqual(0);
      const file = path.join(SCREENSHOTS, `landing-open-${width}.png`);
      await page.screenshot({ path: file, fullPage: true });
      console.log(`screenshot of the landing page with every panel open at ${width} px: ${file}`);
      expect(pageErrors(errors)).toEqual([]);
      await page.close();
    }
  });
});
