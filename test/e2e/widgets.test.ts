/**
 * Widgets live in Debian Chromium: a static page on another origin embeds a widget with one
 * script tag, clicks go through Python, pushes and other pages show up, a restarted gateway is
 * reconnected to, a read-only widget rolls back, an unmodified anywidget module works, an edit
 * on disk hot-reloads, and an origin that is not allowed is refused.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { embed, embedSuite, staticSite } from '../browser.js';
import { api, gateway, tempProject } from '../helpers.js';
import { startServer } from '../../packages/server/src/index.js';

const E2E_TIMEOUT = 120_000;

const FILES = {
  'readonly_view.py': `
from portico import Interface


class ReadonlyView(Interface):
    """Shows its config; edits are refused (the default widget_update)."""

    class Config:
        title: str = "hello"
`,
  'readonly_view.widget.js': `
export default {
  render({ model, el }) {
    const input = document.createElement('input');
    input.className = 'title';
    input.value = model.get('title');
    input.addEventListener('change', () => { model.set('title', input.value); model.save_changes(); });
    model.on('change:title', () => { input.value = model.get('title'); el.dataset.changes = String(Number(el.dataset.changes ?? 0) + 1); });
    el.append(input);
  },
};
`,
  // An ordinary anywidget module: a factory, initialize once per model, render per view, msg:custom, send.
  'plain.py': `
from portico import Interface


class Plain(Interface):
    def __init__(self):
        self.value = 1

    def widget_state(self):
        return {"value": self.value}

    def widget_update(self, changes):
        self.value = int(changes["value"])
        return {"value": self.value}

    def widget_message(self, content, buffers):
        self.push_widget_message({"answer": str(content.get("ask", "")).upper(), "sizes": [len(b) for b in buffers]})
`,
  'plain.widget.js': `
export default async () => ({
  initialize({ model }) {
    globalThis.plainInitialized = (globalThis.plainInitialized ?? 0) + 1;
    return () => {};
  },
  render({ model, el }) {
    const out = document.createElement('span');
    out.className = 'value';
    const show = () => { out.textContent = 'value=' + model.get('value'); };
    const button = document.createElement('button');
    button.className = 'double';
    button.textContent = 'double';
    button.onclick = () => { model.set('value', model.get('value') * 2); model.save_changes(); };
    model.on('change:value', show);
    model.on('msg:custom', (msg, buffers) => { el.dataset.answer = msg.answer; el.dataset.sizes = JSON.stringify(msg.sizes); });
    show();
    el.append(out, button);
    model.send({ ask: 'hello' }, undefined, [new Uint8Array([1, 2, 3])]);
    return () => model.off('change:value', show);
  },
});
`,
};

async function uuidOf(page: Page): Promise<string> {
  await page.waitForFunction(() => (document.querySelector('portico-widget') as any)?.handle?.uuid, null, { timeout: 30_000 });
  return page.evaluate(() => (document.querySelector('portico-widget') as any).handle.uuid as string);
}

let project: string;
const suite = embedSuite(async (origin) => {
  project = await tempProject(FILES);
  return gateway({ project, allowOrigins: [origin] });
}, E2E_TIMEOUT);

/** Opens a new page of the static site that embeds a widget with `attributes`. */
async function open(attributes: string, name: string): Promise<{ page: Page; errors: string[] }> {
  const { page, errors } = await suite.open(name, embed(suite.running.url, attributes));
  return { page, errors };
}

describe('widgets in the browser', { timeout: E2E_TIMEOUT }, () => {
  it('a page on another origin embeds the counter; a click goes through widget_update in Python and the DOM shows it', async () => {
    const { page, errors } = await open('target="counter"', 'counter.html');
    const button = page.locator('portico-widget button.counter-button');
    await expect.poll(() => button.textContent(), { timeout: 30_000 }).toBe('count is 0');
    // the stylesheet next to the module applies
    expect(await button.evaluate((el) => getComputedStyle(el).borderTopColor)).toBe('rgb(51, 187, 102)');
    const uuid = await uuidOf(page);
    await button.click();
    await expect.poll(() => button.textContent()).toBe('count is 1');
    await expect.poll(async () => (await api(suite.running, 'POST', '/v1/interfaces/call', { target: uuid, method: 'value' })).body.payload).toBe(1);

    // a server push (a method calling push_widget_change) updates the page
    await api(suite.running, 'POST', '/v1/interfaces/call', { target: uuid, method: 'add', args: [5] });
    await expect.poll(() => button.textContent()).toBe('count is 6');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('two pages on the same interface stay in sync', async () => {
    const a = await open('target="counter" version=\'[{"start": 40}]\'', 'a.html');
    const uuid = await uuidOf(a.page);
    const second = await open(`uuid="${uuid}"`, 'b.html');
    const inA = a.page.locator('button.counter-button');
    const inB = second.page.locator('button.counter-button');
    await expect.poll(() => inB.textContent(), { timeout: 30_000 }).toBe('count is 40');
    await inA.click();
    await expect.poll(() => inB.textContent()).toBe('count is 41');
    await inB.click();
    await inB.click();
    await expect.poll(() => inA.textContent()).toBe('count is 43');
    expect([...a.errors, ...second.errors]).toEqual([]);
    await a.page.close();
    await second.page.close();
  });

  it('a read-only widget rolls back a rejected edit to the server state', async () => {
    const { page } = await open('target="readonly_view"', 'readonly.html');
    const input = page.locator('portico-widget input.title');
    await expect.poll(() => input.inputValue(), { timeout: 30_000 }).toBe('hello');
    await input.fill('changed');
    await input.dispatchEvent('change');
    // rolled back by the runtime when the gateway answered read_only
    await expect.poll(() => input.inputValue()).toBe('hello');
    expect(await page.locator('portico-widget [data-changes]').count()).toBeGreaterThan(0);
    await page.close();
  });

  it('a module written only against the anywidget contract renders, syncs and exchanges messages unchanged', async () => {
    const { page, errors } = await open('target="plain"', 'plain.html');
    const value = page.locator('portico-widget span.value');
    await expect.poll(() => value.textContent(), { timeout: 30_000 }).toBe('value=1');
    await page.locator('portico-widget button.double').click();
    await page.locator('portico-widget button.double').click();
    await expect.poll(() => value.textContent()).toBe('value=4');
    const uuid = await uuidOf(page);
    // the hooks answer /call by name too (as a reference client asks for the state): Python has what the page shows
    const state = await api(suite.running, 'POST', '/v1/interfaces/call', { target: uuid, method: 'widget_state' });
    expect(state.body.payload).toMatchObject({ value: 4 });
    const answer = page.locator('portico-widget [data-answer]');
    await expect.poll(() => answer.getAttribute('data-answer')).toBe('HELLO');
    expect(await answer.getAttribute('data-sizes')).toBe('[3]');
    expect(await page.evaluate(() => (globalThis as any).plainInitialized)).toBe(1);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('an edit of the widget module on disk hot-reloads the page', async () => {
    const { page } = await open('target="plain" version=\'[]\'', 'hot.html');
    const value = page.locator('portico-widget span.value');
    await expect.poll(() => value.textContent(), { timeout: 30_000 }).toMatch(/^value=/);
    const file = path.join(project, 'plain.widget.js');
    await writeFile(file, (await readFile(file, 'utf8')).replace("'value='", "'v is '"));
    await expect.poll(() => value.textContent(), { timeout: 30_000 }).toMatch(/^v is \d+$/);
    await page.close();
  });

  it('the page reconnects and resyncs after the gateway restarts', async () => {
    const { page } = await open('target="counter" version=\'[{"start": 7}]\'', 'restart.html');
    const button = page.locator('portico-widget button.counter-button');
    await expect.poll(() => button.textContent(), { timeout: 30_000 }).toBe('count is 7');
    const uuid = await uuidOf(page);
    await button.click();
    await expect.poll(() => button.textContent()).toBe('count is 8');

    const port = Number(new URL(suite.running.url).port);
    await suite.running.close();
    await expect.poll(() => page.locator('portico-widget').getAttribute('data-portico-status'), { timeout: 30_000 }).not.toBe('open');
    suite.running = await startServer({ project, host: '127.0.0.1', port, log: () => undefined, logLevel: 'silent', allowOrigins: [suite.site.origin] });
    // The fresh worker makes the instance again with the widget state the click saved: the page
    // resyncs to it (8, not the 7 it starts at), then follows the server.
    await expect.poll(() => page.locator('portico-widget').getAttribute('data-portico-status'), { timeout: 60_000 }).toBe('open');
    await expect.poll(() => button.textContent(), { timeout: 30_000 }).toBe('count is 8');
    await api(suite.running, 'POST', '/v1/interfaces/call', { target: uuid, method: 'add', args: [3] });
    await expect.poll(() => button.textContent()).toBe('count is 11');
    await page.close();
  });

  it('a page from an origin that is not allowed is refused, REST and WebSocket', async () => {
    const stranger = await staticSite({ '/': '<!doctype html><title>stranger</title>' });
    try {
      const { page } = await (await suite.browser()).newPage();
      await page.goto(`${stranger.origin}/`);
      const outcome = await page.evaluate(async (gw) => {
        const ws = await new Promise<string>((resolve) => {
          const socket = new WebSocket(gw.replace(/^http/, 'ws') + '/v1/interfaces/ws');
          socket.onopen = () => resolve('open');
          socket.onerror = () => resolve('refused');
        });
        const rest = await fetch(gw + '/v1/project').then((r) => `status ${r.status}`, () => 'blocked');
        return { ws, rest };
      }, suite.running.url);
      expect(outcome).toEqual({ ws: 'refused', rest: 'blocked' });
      // and the gateway itself said no (not just the browser's CORS): 403 to that Origin
      const direct = await fetch(`${suite.running.url}/v1/project`, { headers: { origin: stranger.origin } });
      expect(direct.status).toBe(403);
      await page.close();
    } finally {
      await stranger.close();
    }
  });
  it('an embed on an origin that is not allowed shows what was refused and the flag that allows it, not a blank page', async () => {
    // The page is the whole embedding a web developer writes, on an origin the gateway does not allow.
    const stranger = await staticSite({ '/embed.html': embed(suite.running.url, 'target="counter"') });
    try {
      const { page } = await (await suite.browser()).newPage();
      await page.goto(`${stranger.origin}/embed.html`);
      const notice = page.locator('portico-widget .portico-widget-error[role=alert]');
      await notice.waitFor({ timeout: 30_000 });
      const text = await notice.textContent();
      expect(text).toContain(`does not accept pages from ${stranger.origin}`);
      expect(text).toContain(`--allow-origin ${stranger.origin}`);
      expect(text).toContain('(origin_refused)');
      expect(await page.locator('portico-widget').getAttribute('data-portico-status')).toBe('closed');
      // the same words come from the gateway to anyone who asks, and REST refusals carry them too
      const asked = await (await fetch(`${suite.running.url}/v1/origin`, { headers: { origin: stranger.origin } })).json();
      expect(asked).toEqual({ origin: stranger.origin, allowed: false, message: expect.stringContaining(`--allow-origin ${stranger.origin}`) });
      const refused = await fetch(`${suite.running.url}/v1/project`, { headers: { origin: stranger.origin } });
      expect((await refused.json()).message).toBe(asked.message);
      expect(await (await fetch(`${suite.running.url}/v1/origin`, { headers: { origin: suite.site.origin } })).json()).toEqual({ origin: suite.site.origin, allowed: true, message: null });
      await page.close();
    } finally {
      await stranger.close();
    }
  });

  it('an embed whose gateway is not running says so', async () => {
    const gone = await staticSite({});
    const deadUrl = `http://127.0.0.1:${new URL(gone.origin).port}`;
    await gone.close(); // a port nobody listens on any more
    suite.pages['/dead.html'] = `<!doctype html><html><body>
<script type="module">
  import { mount } from '${suite.running.url}/static/portico-widget.js';
  mount(document.querySelector('#w'), { url: '${deadUrl}', target: 'counter' }).catch(() => {});
</script><div id="w"></div></body></html>`;
    const { page } = await (await suite.browser()).newPage();
    await page.goto(`${suite.site.origin}/dead.html`);
    const notice = page.locator('#w .portico-widget-error[role=alert]');
    await notice.waitFor({ timeout: 30_000 });
    expect(await notice.textContent()).toContain(`Cannot reach the Portico gateway at ${deadUrl}`);
    expect(await notice.textContent()).toContain('(unreachable)');
    await page.close();
  });
});
