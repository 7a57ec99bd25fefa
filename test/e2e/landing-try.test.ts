/**
 * The landing page explains itself and lets a person try every method (issue 32 item 5), in
 * Chromium against a real gateway whose worker runs the test venv's Python (matplotlib, pandas):
 * one paragraph of what Portico is, curl / notebook / embed snippets per module that work as
 * copied, a form for every public method typed from its signature, answers shown as a person
 * expects them (JSON; an SVG chart, an HTML table, a PNG, a matplotlib figure, a DataFrame; a
 * stream item by item with its progress bar; an error with its code and issues), and results that
 * cannot harm the page (scripts in HTML or SVG never run, an image that is not one says so).
 * Screenshots of the answers go to .cache/screenshots/ (printed in the output).
 */
import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, staticSite, type LaunchedBrowser, type TrackedPage } from '../browser.js';
import { api, cleanup, gateway, ROOT, tempProject } from '../helpers.js';
import { runNotebookSnippet, TEST_PYTHON } from '../notebook.js';
import type { RunningServer } from '../../packages/server/src/index.js';

const SCREENSHOTS = path.join(ROOT, '.cache', 'screenshots');
const E2E_TIMEOUT = 180_000;
const WAIT = { timeout: 30_000 };

/** Results the page must show, and show safely; stdlib only (a PNG written by hand). */
const SHOWCASE = `"""Results the landing page must show safely."""
import struct
import sys
import zlib
from typing import Literal

from portico import Interface


def png(width, height, rgb):
    raw = b"".join(b"\\x00" + bytes(rgb) * width for _ in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


class Picture:
    def _repr_png_(self):
        return png(40, 20, (255, 0, 0))

    def __repr__(self):
        return "<a red picture>"


class NotAPicture:
    def _repr_png_(self):
        return b"GIF89a, and certainly not a PNG"

    def __repr__(self):
        return "<not a picture>"


class Hostile:
    def _repr_html_(self):
        return (
            '<p id="hello">hello from HTML</p>'
            '<script>parent.document.title = "pwned"; parent.window.pwned = "script"</script>'
            '<img src="data:," onerror="parent.window.pwned = \\'onerror\\'">'
        )


class HostileSvg:
    def _repr_svg_(self):
        return (
            '<svg xmlns="http://www.w3.org/2000/svg" width="12" height="12" onload="parent.window.pwned = \\'svg\\'">'
            '<script>parent.window.pwned = "svg script"</script><rect width="12" height="12" fill="#00f"/></svg>'
        )


class Showcase(Interface):
    """Pictures, hostile HTML and typed arguments."""

    def picture(self):
        return Picture()

    def chatty(self):
        print("hello from Python")
        print("and a warning", file=sys.stderr)
        return 1

    def not_a_picture(self):
        return NotAPicture()

    def hostile(self):
        return Hostile()

    def hostile_svg(self):
        return HostileSvg()

    def data(self, values: list, scale: float = 1.0, mode: Literal["sum", "max"] = "sum", verbose: bool = False, note: str | None = None) -> dict:
        """Sums or maxes the values, times scale."""
        total = (sum(values) if mode == "sum" else max(values)) * scale
        return {"result": total, "verbose": verbose, "note": note}
`;

const STRICT = `from portico import Interface


class Strict(Interface):
    """Needs a name."""

    class Config:
        name: str

    def hello(self) -> str:
        return "hello " + self.config.name
`;

const PLOTS = `import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from portico import Interface


class Plots(Interface):
    """A matplotlib figure and a pandas DataFrame."""

    def figure(self, n: int = 3):
        fig, ax = plt.subplots(figsize=(2, 2))
        ax.plot(list(range(n)))
        return fig

    def frame(self):
        return pd.DataFrame({"epoch": [1, 2], "loss": [0.5, 0.25]})
`;

let running: RunningServer;
let site: Awaited<ReturnType<typeof staticSite>>;
let b: LaunchedBrowser;
const sitePages: Record<string, string> = {};

beforeAll(async () => {
  // The embed snippet is tried on a page of another origin, which the gateway allows.
  site = await staticSite(sitePages);
  const project = await tempProject({ 'showcase.py': SHOWCASE, 'strict.py': STRICT, 'plots.py': PLOTS });
  running = await gateway({ project, python: TEST_PYTHON, allowOrigins: [site.origin] });
  b = await launchBrowser();
  await mkdir(SCREENSHOTS, { recursive: true });
}, E2E_TIMEOUT);

afterAll(async () => {
  await b?.close();
  await site?.close();
  await cleanup();
}, E2E_TIMEOUT);

/** Chromium logs every 4xx answer to fetch() by itself, and every script a sandbox blocks: not the page's errors. */
const pageErrors = (errors: string[]) => errors.filter((e) => !/Failed to load resource: the server responded with a status of 4\d\d|Blocked script execution in 'about:srcdoc'/.test(e));

async function open(): Promise<TrackedPage> {
  const tracked = await b.newPage();
  await tracked.page.goto(`${running.url}/`);
  await tracked.page.locator('article[data-module="counter"] details.try > summary').waitFor(WAIT);
  return tracked;
}

/** The module's card with its "Try it" panel open. */
async function tryIt(page: Page, module: string): Promise<Locator> {
  const card = page.locator(`article[data-module="${module}"]`);
  const details = card.locator('details.try');
  await details.locator('> summary').waitFor(WAIT);
  if (!(await details.evaluate((d: HTMLDetailsElement) => d.open))) await details.locator('> summary').click();
  return card;
}

/** Fills a method's form, submits it, and waits for its answer (a result, an error, a stream's end). */
async function call(page: Page, module: string, method: string, fill: Record<string, string | boolean> = {}): Promise<Locator> {
  const card = await tryIt(page, module);
  const form = card.locator(`form.method[data-method="${method}"]`);
  for (const [name, value] of Object.entries(fill)) {
    const input = form.locator(`[name="${name}"]`);
    const kind = await input.evaluate((e: HTMLInputElement) => `${e.tagName}:${e.type}`);
    if (kind === 'SELECT:select-one') await input.selectOption({ label: String(value) });
    else if (kind === 'INPUT:checkbox') await input.setChecked(Boolean(value));
    else await input.fill(String(value));
  }
  await form.locator('button[type=submit]').click();
  const answer = form.locator('.answer');
  await answer.locator('.result:not(:has(.calling))').waitFor(WAIT);
  if (await answer.locator('ol.items').count()) await answer.locator('.stream-end, .error').waitFor(WAIT);
  return answer;
}

describe('landing page: what Portico is and how to use it', { timeout: E2E_TIMEOUT }, () => {
  it('says in one paragraph what Portico is and the three ways to use it; each module has curl, notebook and embed snippets that work as copied', async () => {
    const { page, errors } = await open();
    const about = (await page.locator('#about').textContent())!.replace(/\s+/g, ' ');
    for (const words of ['Portico serves', 'curl', 'notebook', 'portico.client', 'embedded', 'widget runtime']) expect(about).toContain(words);

    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: running.url });
    const card = page.locator('article[data-module="counter"]');
    await card.locator('details.use > summary').click();
    const snippet = async (kind: string) => {
      const block = card.locator(`[data-snippet="${kind}"]`);
      const text = (await block.locator('pre').textContent())!;
      await block.locator('button.copy').click();
      await block.locator('.copy-status', { hasText: 'Copied' }).waitFor(WAIT);
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(text);
      return text;
    };

    // curl, run as copied, calls the method of the module on this gateway
    const before = (await api(running, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'value' })).body.payload as number;
    const curl = await snippet('curl');
    expect(curl).toContain(`${running.url}/v1/interfaces/call`);
    const curled = await promisify(execFile)('sh', ['-c', curl]);
    expect(curled.stdout).toBe(`{"payload":${before + 1}}`);

    // the notebook snippet, run as copied (then one line to look at the count): its first line
    // installs the Python client with pip from this gateway
    const notebook = await snippet('notebook');
    const wheel = (await api(running, 'GET', '/v1/python')).body.wheels[0];
    expect(notebook.split('\n')[0]).toBe(`%pip install ${running.url}/v1/python/${wheel.filename}`);
    expect(notebook).toContain(`Gateway("${running.url}")`);
    const ran = await runNotebookSnippet(`${notebook}\nprint(counter.value())`, { ...process.env, PYTHONPATH: undefined });
    expect(ran.trim()).toBe(String(before + 2));

    // the embed snippet, pasted into a page on an allowed origin, shows the live widget
    const embed = await snippet('embed');
    sitePages['/embed.html'] = `<!doctype html><html><body>${embed}</body></html>`;
    const embedded = await b.newPage();
    await embedded.page.goto(`${site.origin}/embed.html`);
    await embedded.page.locator('button.counter-button', { hasText: `count is ${before + 2}` }).waitFor(WAIT);
    expect(embedded.errors).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('has a form for every public method of every module, its inputs typed from the signature', async () => {
    const { page, errors } = await open();
    const index = (await api(running, 'GET', '/v1/project')).body as { modules: Array<{ module: string; error: string | null }> };
    for (const { module, error } of index.modules) {
      if (error) continue;
      const schema = (await api(running, 'GET', `/v1/project/${module}`)).body as { methods: Array<{ name: string }> };
      const card = await tryIt(page, module);
      const forms = await card.locator('form.method').evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.method));
      expect(forms, module).toEqual(schema.methods.map((m) => m.name));
    }
    const data = page.locator('article[data-module="showcase"] form.method[data-method="data"]');
    const kinds = await data.locator('[name]').evaluateAll((els) =>
      els.map((el) => `${(el as HTMLInputElement).name}=${el.tagName.toLowerCase()}:${(el as HTMLInputElement).type}${el.getAttribute('step') ? `/${el.getAttribute('step')}` : ''}${(el as HTMLInputElement).required ? '!' : ''}`),
    );
    expect(kinds).toEqual(['values=textarea:textarea!', 'scale=input:number/any', 'mode=select:select-one', 'verbose=input:checkbox', 'note=input:text']);
    expect(await data.locator('[name="mode"] option').allTextContents()).toEqual(['default ("sum")', 'sum', 'max']);
    expect(await page.locator('article[data-module="counter"] form[data-method="add"] [name="n"]').evaluate((e: HTMLInputElement) => [e.type, e.step, e.value])).toEqual(['number', '1', '1']);
    expect(errors).toEqual([]);
  });

  it("shows what a method printed under its form, stdout and stderr, beside its answer", async () => {
    const { page, errors } = await open();
    const answer = await call(page, 'showcase', 'chatty');
    expect(await answer.locator('pre.json').textContent()).toBe('1');
    expect(await answer.locator('pre.output').textContent()).toBe('hello from Python\nand a warning\n');
    expect(await answer.locator('pre.output span.stderr').textContent()).toBe('and a warning\n');
    expect(errors).toEqual([]);
  });

  it('calls a method over REST and shows its JSON; the widget of the same interface follows', async () => {
    const { page, errors } = await open();
    const before = (await api(running, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'value' })).body.payload as number;
    const answer = await call(page, 'counter', 'add', { n: '2' });
    expect(await answer.locator('pre.json').textContent()).toBe(String(before + 2));
    await page.locator('article[data-module="counter"] button.counter-button', { hasText: `count is ${before + 2}` }).waitFor(WAIT);

    const data = await call(page, 'showcase', 'data', { values: '[1, 5, 2]', scale: '2', mode: 'max', verbose: true });
    expect(JSON.parse((await data.locator('pre.json').textContent())!)).toEqual({ result: 10, verbose: true, note: null });
    expect(errors).toEqual([]);
  });

  it('makes the interface from the config form and a version, or uses an existing one picked from the list', async () => {
    const { page, errors } = await open();
    const card = await tryIt(page, 'counter');
    const iface = card.locator('form.interface');
    await iface.locator('select').nth(1).selectOption('~big');
    await iface.locator('[name="start"]').fill('5');
    const answer = await call(page, 'counter', 'add', { n: '1' });
    expect(await answer.locator('pre.json').textContent()).toBe('15'); // start 5, ~big's step 10
    const status = await iface.locator('.iface-status').textContent();
    expect(status).toContain('config {"start":5,"step":10}');
    const uuid = await iface.locator('.iface-status code.uuid').textContent();
    expect(uuid).toBe((await api(running, 'POST', '/v1/interfaces', { target: 'counter', version: ['~big', { start: 5 }] })).body.uuid);

    // Reopened, the panel lists the existing interfaces; picking one disables the config form.
    await card.locator('details.try > summary').click();
    await card.locator('details.try > summary').click();
    await iface.locator(`select option[value="${uuid}"]`).waitFor({ state: 'attached', ...WAIT });
    await iface.locator('select').first().selectOption(uuid!);
    expect(await iface.locator('fieldset.config').evaluate((f: HTMLFieldSetElement) => f.disabled)).toBe(true);
    const value = await call(page, 'counter', 'value');
    expect(await value.locator('pre.json').textContent()).toBe('15');
    expect(errors).toEqual([]);
  });

  it('shows results as Jupyter displays them: an SVG chart, an HTML table, a PNG, a matplotlib figure, a DataFrame (screenshot)', async () => {
    const { page, errors } = await open();
    const chart = await call(page, 'gallery', 'chart', { frequency: '2' });
    const svg = chart.locator('img.portico-display-image');
    expect(await chart.locator('.portico-display').getAttribute('data-mime')).toBe('image/svg+xml');
    expect(await svg.getAttribute('alt')).toBe("<Chart 'sin(2π·2·t)' of 60 points>");
    await expect.poll(() => svg.evaluate((img: HTMLImageElement) => img.naturalWidth), WAIT).toBe(320);

    const table = await call(page, 'gallery', 'table', { rows: '3' });
    const frame = table.frameLocator('iframe.portico-display-html');
    expect(await frame.locator('th').allTextContents()).toEqual(['n', 'n²', 'n³']);
    expect(await frame.locator('tbody tr').count()).toBe(3);

    const picture = await call(page, 'showcase', 'picture');
    const img = picture.locator('img.portico-display-image');
    expect(await picture.locator('.portico-display').getAttribute('data-mime')).toBe('image/png');
    // the pixels are the ones Python wrote: 40×20, red
    await expect.poll(() => img.evaluate((i: HTMLImageElement) => i.naturalWidth), WAIT).toBe(40);
    const pixel = await img.evaluate((i: HTMLImageElement) => {
      const canvas = document.createElement('canvas');
      canvas.width = i.naturalWidth;
      canvas.height = i.naturalHeight;
      const ctx = canvas.getContext('2d')!;
      ctx.drawImage(i, 0, 0);
      return [...ctx.getImageData(20, 10, 1, 1).data];
    });
    expect(pixel).toEqual([255, 0, 0, 255]);

    const figure = await call(page, 'plots', 'figure');
    const fig = figure.locator('img.portico-display-image');
    expect(await figure.locator('.portico-display').getAttribute('data-mime')).toBe('image/png');
    expect(await fig.getAttribute('alt')).toMatch(/^<Figure size \d+x\d+ with 1 Axes>$/);
    await expect.poll(() => fig.evaluate((i: HTMLImageElement) => i.naturalWidth), WAIT).toBeGreaterThan(100);

    const df = await call(page, 'plots', 'frame');
    const dfFrame = df.frameLocator('iframe.portico-display-html');
    expect(await dfFrame.locator('table.dataframe thead th').allTextContents()).toEqual(['', 'epoch', 'loss']);
    expect(await dfFrame.locator('table.dataframe tbody td').allTextContents()).toEqual(['1', '0.50', '2', '0.25']);

    const file = path.join(SCREENSHOTS, 'landing-results.png');
    await page.locator('article[data-module="plots"]').screenshot({ path: file });
    await page.locator('article[data-module="gallery"]').screenshot({ path: path.join(SCREENSHOTS, 'landing-gallery.png') });
    console.log(`screenshots of displayed results: ${file}, ${path.join(SCREENSHOTS, 'landing-gallery.png')}`);
    expect(errors).toEqual([]);
  });

  it('runs nothing a result holds: HTML in a frame sandboxed without scripts, SVG as a picture; an image that is not one shows an error', async () => {
    const { page, errors } = await open();
    const html = await call(page, 'showcase', 'hostile');
    const frame = html.locator('iframe.portico-display-html');
    expect(await frame.getAttribute('sandbox')).toBe('allow-same-origin');
    expect(await html.frameLocator('iframe.portico-display-html').locator('#hello').textContent()).toBe('hello from HTML');
    const svg = await call(page, 'showcase', 'hostile_svg');
    await expect.poll(() => svg.locator('img.portico-display-image').evaluate((i: HTMLImageElement) => i.naturalWidth), WAIT).toBe(12);
    expect(await page.evaluate(() => [(window as unknown as { pwned?: string }).pwned ?? 'nothing ran', document.title])).toEqual(['nothing ran', 'Portico']);

    const bad = await call(page, 'showcase', 'not_a_picture');
    expect(await bad.locator('.portico-display-error').textContent()).toBe('The image/png data is not a PNG image.');
    expect(await bad.locator('img').count()).toBe(0);
    expect(await bad.locator('.portico-display pre').textContent()).toBe('<not a picture>'); // the next representation
    expect(pageErrors(errors)).toEqual([]);
  });

  it('streams item by item with a progress bar from the progress events, or a count without them', async () => {
    const { page, errors } = await open();
    const ticks = await call(page, 'streamer', 'ticks', { n: '3' });
    expect(await ticks.locator('ol.items > li').allTextContents()).toEqual(['"tick 0"', '"tick 1"', '"tick 2"']);
    expect(await ticks.locator('progress').evaluate((p: HTMLProgressElement) => [p.value, p.max])).toEqual([1, 1]);
    expect(await ticks.locator('.progress-status').textContent()).toBe('100%');
    expect(await ticks.locator('.stream-end').textContent()).toBe('Stream ended after 3 items.');

    const counted = await call(page, 'streamer', 'aticks', { n: '2' });
    expect(await counted.locator('ol.items > li').allTextContents()).toEqual(['0', '1']);
    expect(await counted.locator('.progress-status').textContent()).toBe('2 items, done');

    // a plain call's progress events (it answers over REST, its events reach the page's socket)
    const render = await call(page, 'gallery', 'render', { steps: '4' });
    await render.locator('.progress-status', { hasText: '100% · step 4 of 4' }).waitFor(WAIT);
    expect(await render.locator('progress').evaluate((p: HTMLProgressElement) => p.value)).toBe(1);
    expect(await render.locator('.portico-display').getAttribute('data-mime')).toBe('image/svg+xml');
    const events = page.locator('article[data-module="gallery"] ol.events > li');
    await expect.poll(() => events.count(), WAIT).toBe(4);
    expect(await events.first().textContent()).toBe('{"progress":1,"message":"step 4 of 4"}');

    // streamed pictures, each with its bundle
    const sweep = await call(page, 'gallery', 'sweep', { n: '2' });
    expect(await sweep.locator('ol.items > li img.portico-display-image').evaluateAll((imgs) => imgs.map((i) => (i as HTMLImageElement).alt))).toEqual([
      "<Chart 'sin(2π·1·t)' of 60 points>",
      "<Chart 'sin(2π·2·t)' of 60 points>",
    ]);
    await sweep.locator('.progress-status', { hasText: '100% · chart 2 of 2' }).waitFor(WAIT);
    expect(errors).toEqual([]);
  });

  it('shows an error with its code, its message and its issues', async () => {
    const { page, errors } = await open();
    const failed = await call(page, 'faulty', 'explode', { message: 'kaput' });
    expect(await failed.locator('.error .code').textContent()).toBe('call_failed');
    expect(await failed.locator('.error').textContent()).toBe('call_failed explode() raised ValueError: kaput');

    const unserializable = await call(page, 'faulty', 'not_json');
    expect(await unserializable.locator('.error .code').textContent()).toBe('unserializable_result');

    const config = await call(page, 'strict', 'hello'); // its Config needs a name, left empty
    expect(await config.locator('.error .code').textContent()).toBe('invalid_config');
    expect(await config.locator('.error ul.issues li').allTextContents()).toEqual([expect.stringMatching(/^name: .+/)]);
    await (await tryIt(page, 'strict')).locator('form.interface [name="name"]').fill('ada');
    expect(await (await call(page, 'strict', 'hello')).locator('pre.json').textContent()).toBe('"hello ada"');

    const json = await call(page, 'showcase', 'data', { values: '[1,' });
    expect(await json.locator('.error .code').textContent()).toBe('invalid_json');
    expect(await json.locator('.error ul.issues li').allTextContents()).toEqual(['values: not JSON']);
    expect(pageErrors(errors)).toEqual([]);
  });
});
