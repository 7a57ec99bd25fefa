/**
 * Rich results in Debian Chromium through the widget runtime on a plain page (issue 32 item 2):
 * a page that calls a real method with `connect()` gets a `Display` for a matplotlib figure, a
 * DataFrame, an object's `_repr_html_` / `_repr_svg_` / `_repr_png_`, for a streamed item and an
 * `emit()`ted figure, and `renderDisplay()` shows it: the figure as a decoded <img>, the table
 * in a sandboxed iframe, HTML and SVG carrying scripts with no script run, and image bytes that
 * are not what their MIME type says as an error notice beside the text representation.
 * Screenshot in .cache/screenshots/widget-display.png.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { embedSuite } from '../browser.js';
import { gateway, ROOT, tempProject } from '../helpers.js';
import { TEST_PYTHON } from '../notebook.js';

const E2E_TIMEOUT = 120_000;
const SCREENSHOTS = path.join(ROOT, '.cache', 'screenshots');

/** Anything that runs marks the top page, so a test sees it. */
const MARK = "parent.document.body.dataset.ran='yes'";

const FILES = {
  'plots.py': `
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from portico import Interface


class Html:
    def _repr_html_(self):
        return """<p id="shown">bold <b>text</b></p><script>${MARK}</script><img src="data:image/png;base64,AAAA" onerror="${MARK}"><a href="javascript:${MARK}">x</a>"""


class Svg:
    def _repr_svg_(self):
        return """<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><script>${MARK}</script><rect width="40" height="20" fill="teal" onload="${MARK}"/></svg>"""


class Lying:
    """Says PNG, sends a GIF header."""

    def __repr__(self):
        return "<Lying>"

    def _repr_png_(self):
        return b"GIF89a" + bytes(20)


class Corrupt:
    """A PNG signature and nothing a browser can decode."""

    def __repr__(self):
        return "<Corrupt>"

    def _repr_png_(self):
        return b"\\x89PNG\\r\\n\\x1a\\n" + b"garbage" * 10


def figure(n):
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([1, 3, 2][:n])
    return fig


class Plots(Interface):
    def figure(self):
        return figure(3)

    def table(self):
        return pd.DataFrame({"n": [1, 2], "name": ["a", "b"]})

    def html(self):
        return Html()

    def svg(self):
        return Svg()

    def lying(self):
        return Lying()

    def corrupt(self):
        return Corrupt()

    def frames(self):
        yield {"progress": 0.5}
        yield figure(2)

    def announce(self):
        self.emit(figure(3))
        return "announced"
`,
};

const suite = embedSuite(async (origin) => gateway({ project: await tempProject(FILES, { demo: false }), python: TEST_PYTHON, allowOrigins: [origin] }), E2E_TIMEOUT);

async function openPage(): Promise<{ page: Page; errors: string[] }> {
  const gw = suite.running.url;
  const { page, errors } = await suite.open(
    'display.html',
    `<!doctype html><html><body>
<script type="module">
import { connect, renderDisplay, Display } from '${gw}/static/portico-widget.js';
globalThis.portico = { conn: await connect({ url: '${gw}', target: 'plots' }), renderDisplay, Display };
document.body.dataset.ready = 'yes';
</script>
</body></html>`,
  );
  await page.waitForSelector('body[data-ready=yes]', { state: 'attached', timeout: 30_000 });
  return { page, errors };
}

/** Calls `method` through the runtime and renders its answer into a new `#<method>` element; resolves with what the page saw. */
function show(page: Page, method: string) {
  return page.evaluate(async (name) => {
    const { conn, renderDisplay, Display } = (globalThis as any).portico;
    const el = document.createElement('section');
    el.id = name;
    document.body.append(el);
    const value = await conn.call(name);
    const mime = await renderDisplay(el, value);
    return { isDisplay: value instanceof Display, payload: value.payload, mime, alerts: [...el.querySelectorAll('[role=alert]')].map((a) => a.textContent) };
  }, method);
}

const imageSize = (page: Page, selector: string) =>
  page.locator(selector).evaluate((img: HTMLImageElement) => ({ complete: img.complete, width: img.naturalWidth, height: img.naturalHeight }));
/** A decoded figure: matplotlib's 3x2 inch figure at 100 dpi, cropped to its content as the inline backend does. */
const FIGURE = { complete: true, width: expect.toSatisfy((w: number) => w > 250 && w <= 300), height: expect.toSatisfy((h: number) => h > 150 && h <= 200) };

describe('rich results rendered by the widget runtime', { timeout: E2E_TIMEOUT }, () => {
  it('a matplotlib figure and a DataFrame show as an image and a table; a streamed figure and an emitted one too', async () => {
    const { page, errors } = await openPage();
    expect(await show(page, 'figure')).toEqual({ isDisplay: true, payload: null, mime: 'image/png', alerts: [] });
    expect(await imageSize(page, '#figure img')).toEqual(FIGURE);
    expect(await page.locator('#figure img').getAttribute('alt')).toMatch(/^<Figure size 300x200 with 1 Axes>$/);

    expect(await show(page, 'table')).toEqual({ isDisplay: true, payload: null, mime: 'text/html', alerts: [] });
    const table = page.frameLocator('#table iframe').locator('table');
    await expect.poll(() => table.locator('td').allTextContents()).toEqual(['1', 'a', '2', 'b']);
    expect(await page.locator('#table iframe').getAttribute('sandbox')).toBe('allow-same-origin');

    const streamed = await page.evaluate(async () => {
      const { conn, renderDisplay } = (globalThis as any).portico;
      const el = document.createElement('section');
      el.id = 'frames';
      document.body.append(el);
      const items: string[] = [];
      const onItem = (item: any) => {
        items.push(item?.data ? 'display' : JSON.stringify(item));
        if (item?.data) void renderDisplay(el, item);
      };
      const count = await conn.call('frames', [], {}, { onItem });
      return { count, items };
    });
    expect(streamed).toEqual({ count: 2, items: ['{"progress":0.5}', 'display'] });
    await expect.poll(() => imageSize(page, '#frames img')).toEqual(FIGURE);

    const emitted = await page.evaluate(async () => {
      const { conn, renderDisplay } = (globalThis as any).portico;
      const el = document.createElement('section');
      el.id = 'announce';
      document.body.append(el);
      const shown = new Promise((resolve) => conn.on('event', (value: any) => resolve(renderDisplay(el, value))));
      const result = await conn.call('announce');
      return { result, mime: await shown };
    });
    expect(emitted).toEqual({ result: 'announced', mime: 'image/png' });
    expect(await imageSize(page, '#announce img')).toEqual(FIGURE);

    mkdirSync(SCREENSHOTS, { recursive: true });
    const file = path.join(SCREENSHOTS, 'widget-display.png');
    await page.screenshot({ path: file, fullPage: true });
    console.log(`screenshot of rich results rendered by the widget runtime: ${file}`);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('HTML and SVG carrying scripts show without running any; image bytes that lie show an error, not a broken page', async () => {
    const { page, errors } = await openPage();
    expect(await show(page, 'html')).toMatchObject({ isDisplay: true, mime: 'text/html', alerts: [] });
    const html = page.frameLocator('#html iframe');
    await expect.poll(() => html.locator('#shown').textContent()).toBe('bold text');
    await html.locator('a').click();

    expect(await show(page, 'svg')).toMatchObject({ mime: 'image/svg+xml', alerts: [] });
    expect(await imageSize(page, '#svg img')).toEqual({ complete: true, width: 40, height: 20 });

    expect(await show(page, 'lying')).toMatchObject({ mime: 'text/plain', alerts: ['The image/png data is not a PNG image.'] });
    expect(await page.locator('#lying pre').textContent()).toBe('<Lying>');
    expect(await page.locator('#lying img').count()).toBe(0);

    expect(await show(page, 'corrupt')).toMatchObject({ mime: 'text/plain', alerts: ['The image/png data could not be shown as an image.'] });
    expect(await page.locator('#corrupt pre').textContent()).toBe('<Corrupt>');
    expect(await page.locator('#corrupt img').count()).toBe(0);

    // Nothing ran: not the <script>, the onerror handler, the javascript: link or the SVG's script.
    expect(await page.evaluate(() => document.body.dataset.ran)).toBeUndefined();
    // The browser logs what it blocked inside the sandboxed HTML (about:srcdoc); the page itself logged nothing.
    expect(errors.filter((e) => !e.endsWith('(about:srcdoc)'))).toEqual([]);
    await page.close();
  });
});
