/**
 * A page opened before its gateway listens (a notebook reopened while `portico serve` starts): the
 * widget runtime tries its first connect again with backoff, says so in the element, and shows the
 * widget once the gateway is up.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';
import { launchBrowser, staticSite } from '../browser.js';
import { cleanup, gateway } from '../helpers.js';

const require = createRequire(import.meta.url);
const BUNDLE = require.resolve('@portico/widget-runtime/portico-widget.js');

afterAll(cleanup);

describe('first connect', { timeout: 120_000 }, () => {
  it('a page opened while the gateway is not listening shows the retry notice, then the widget once the gateway is up', async () => {
    // A port nobody listens on yet: the gateway starts there later.
    const probe = await staticSite({});
    const port = Number(new URL(probe.origin).port);
    await probe.close();
    const gatewayUrl = `http://127.0.0.1:${port}`;
    // The runtime comes from the page's own site: the gateway that would serve it is not up.
    const site = await staticSite({
      '/portico-widget.js': await readFile(BUNDLE, 'utf8'),
      '/early.html': `<!doctype html><html><body>
<script type="module" src="/portico-widget.js"></script>
<portico-widget url="${gatewayUrl}" target="counter"></portico-widget>
</body></html>`,
    });
    const browser = await launchBrowser();
    try {
      const { page } = await browser.newPage();
      await page.goto(`${site.origin}/early.html`);
      const widget = page.locator('portico-widget');
      const notice = widget.locator('.portico-widget-notice[role=status]');
      await expect.poll(() => notice.textContent(), { timeout: 30_000 }).toMatch(/connecting… retrying in \d+ s \(attempt \d+ of \d+\)/);
      expect(await widget.getAttribute('data-portico-status')).toBe('connecting');
      expect(await widget.locator('.portico-widget-error').count()).toBe(0);

      await gateway({ port, allowOrigins: [site.origin] });
      const button = widget.locator('button.counter-button');
      await expect.poll(() => button.textContent(), { timeout: 60_000 }).toBe('count is 0');
      expect(await widget.getAttribute('data-portico-status')).toBe('open');
      expect(await notice.count()).toBe(0);
      await button.click();
      await expect.poll(() => button.textContent()).toBe('count is 1');
    } finally {
      await browser.close();
      await site.close();
    }
  });
});
