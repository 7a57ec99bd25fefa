/**
 * Binary widget data in Debian Chromium, through the widget runtime on a plain page: one widget
 * finds another with widget_manager.get_model (binary values included); a bytes
 * value of the Python state shows up as a DataView, `model.send` buffers reach Python as bytes,
 * a `WidgetReply` comes back to `msg:custom` as DataViews, a message whose handler raises is
 * answered with an error while the widget keeps working, a binary `set` + `save_changes` reaches
 * Python, a page that connects later gets the binary value Python holds now, and a page whose
 * socket dropped gets, on reconnect, the binary value Python took meanwhile.
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { embed, embedSuite } from '../browser.js';
import { api, gateway, tempProject } from '../helpers.js';

const E2E_TIMEOUT = 120_000;

const FILES = {
  'bins.py': `
from portico import Interface, WidgetReply


class Bins(Interface):
    """A widget whose state holds bytes and whose messages carry buffers."""

    def __init__(self):
        self.image = bytes([1, 2, 3, 250])
        self.received = []

    def widget_state(self):
        return {"image": self.image, "label": "bins"}

    def widget_update(self, changes):
        if "image" in changes:
            self.image = changes["image"]
        return None

    def widget_message(self, content, buffers):
        self.received.append([content, [list(b) for b in buffers]])
        if content == "fail":
            raise ValueError("no such query")
        return WidgetReply({"reversed": True}, [bytes(reversed(b)) for b in buffers])

    def set_image(self, values):
        self.image = bytes(values)
        self.push_widget_change({"image": self.image})

    def stored(self):
        return [type(self.image).__name__, list(self.image)]

    def messages(self):
        return self.received
`,
  'bins.widget.js': `
const bytes = (view) => [...new Uint8Array(view.buffer, view.byteOffset, view.byteLength)];
export default {
  render({ model, el }) {
    const show = () => {
      const image = model.get('image');
      el.dataset.imageKind = image.constructor.name;
      el.dataset.image = JSON.stringify(bytes(image));
    };
    model.on('change:image', show);
    model.on('msg:custom', (content, buffers) => {
      el.dataset.reply = JSON.stringify({ content, kinds: buffers.map((b) => b.constructor.name), bytes: buffers.map(bytes) });
    });
    show();
    const paint = document.createElement('button');
    paint.className = 'paint';
    paint.onclick = () => { model.set('image', new Uint8Array([9, 8, 7])); model.save_changes(); };
    const ask = document.createElement('button');
    ask.className = 'ask';
    ask.onclick = () => {
      model.send('fail');
      model.send({ q: 1 }, undefined, [new Uint8Array([1, 2]), new DataView(new Uint8Array([0, 5, 6]).buffer, 1)]);
    };
    el.append(paint, ask);
  },
};
`,
  'finder.py': `
from portico import Interface


class Finder(Interface):
    """Finds another widget of the page through widget_manager.get_model."""

    class Config:
        other: str = ""
`,
  'finder.widget.js': `
export default {
  async render({ model, el }) {
    const other = await model.widget_manager.get_model(model.get('other'));
    const image = other.get('image');
    el.dataset.found = JSON.stringify({ id: other.model_id, kind: image.constructor.name, bytes: [...new Uint8Array(image.buffer, image.byteOffset, image.byteLength)] });
  },
};
`,
};

const suite = embedSuite(async (origin) => gateway({ project: await tempProject(FILES, { demo: false }), allowOrigins: [origin] }), E2E_TIMEOUT);

/**
 * The page's WebSocket, with a switch for the test: while `portico.blocked` is set, new sockets go
 * to a path the gateway refuses, so the runtime stays disconnected and keeps retrying.
 */
function controllableSockets() {
  const Real = WebSocket;
  const control = { blocked: false, sockets: [] as WebSocket[] };
  (globalThis as any).portico = control;
  (globalThis as any).WebSocket = class extends Real {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(control.blocked ? String(url).replace('/v1/interfaces/ws', '/v1/refused-while-blocked') : url, protocols);
      control.sockets.push(this);
    }
  };
}

async function open(name: string): Promise<{ page: Page; errors: string[] }> {
  suite.pages[`/${name}`] = embed(suite.running.url, 'target="bins"');
  const { page, errors } = await (await suite.browser()).newPage();
  await page.addInitScript(controllableSockets);
  await page.goto(`${suite.site.origin}/${name}`);
  return { page, errors };
}

const call = async (uuid: string, method: string) => (await api(suite.running, 'POST', '/v1/interfaces/call', { target: uuid, method })).body.payload;

describe('binary widget data in the browser', { timeout: E2E_TIMEOUT }, () => {
  it('widget_manager.get_model finds another widget of the page, binary values included', async () => {
    const gw = suite.running.url;
    const { page, errors } = await suite.open(
      'two.html',
      `<!doctype html><html><body>
<script type="module" src="${gw}/static/portico-widget.js"></script>
<portico-widget url="${gw}" target="finder" version='[{"other": "bins-shared"}]'></portico-widget>
<portico-widget url="${gw}" target="bins" uuid="bins-shared"></portico-widget>
</body></html>`,
    );
    const found = page.locator('portico-widget [data-found]');
    await expect.poll(() => found.getAttribute('data-found'), { timeout: 30_000 }).toBe(JSON.stringify({ id: 'bins-shared', kind: 'DataView', bytes: [1, 2, 3, 250] }));
    expect(errors).toEqual([]);
    await page.close();
  });

  it('bytes in state are DataViews; buffers go both ways; a failing handler answers only its message; later and reconnecting pages get the current bytes', async () => {
    const { page, errors } = await open('bins.html');
    const widget = page.locator('portico-widget [data-image]');
    await expect.poll(() => widget.getAttribute('data-image'), { timeout: 30_000 }).toBe('[1,2,3,250]');
    expect(await widget.getAttribute('data-image-kind')).toBe('DataView');
    const uuid = await page.evaluate(() => (document.querySelector('portico-widget') as any).handle.uuid as string);
    await page.evaluate(() => {
      (globalThis as any).refusals = [];
      document.querySelector('portico-widget')!.addEventListener('portico-error', (e) => (globalThis as any).refusals.push((e as CustomEvent).detail.code));
    });

    await page.locator('portico-widget button.ask').click();
    await expect.poll(() => widget.getAttribute('data-reply')).toBe(JSON.stringify({ content: { reversed: true }, kinds: ['DataView', 'DataView'], bytes: [[2, 1], [6, 5]] }));
    expect(await call(uuid, 'messages')).toEqual([['fail', []], [{ q: 1 }, [[1, 2], [5, 6]]]]);
    expect(await page.evaluate(() => (globalThis as any).refusals)).toEqual(['call_failed']);

    await page.locator('portico-widget button.paint').click();
    await expect.poll(() => call(uuid, 'stored')).toEqual(['bytes', [9, 8, 7]]);

    // Another page connecting now (the first one keeps the instance alive) gets the bytes Python holds.
    const later = await open('bins-later.html');
    const laterWidget = later.page.locator('portico-widget [data-image]');
    await expect.poll(() => laterWidget.getAttribute('data-image'), { timeout: 30_000 }).toBe('[9,8,7]');
    expect(await laterWidget.getAttribute('data-image-kind')).toBe('DataView');
    expect(errors).toEqual([]);
    expect(later.errors).toEqual([]);

    // The first page's socket drops and stays down while Python takes new bytes; on reconnect it has them.
    const element = page.locator('portico-widget');
    await page.evaluate(() => {
      const control = (globalThis as any).portico;
      control.blocked = true;
      control.sockets.at(-1).close();
    });
    await expect.poll(() => element.getAttribute('data-portico-status')).toBe('reconnecting');
    await api(suite.running, 'POST', '/v1/interfaces/call', { target: uuid, method: 'set_image', args: [[4, 4, 4]] });
    await expect.poll(() => laterWidget.getAttribute('data-image')).toBe('[4,4,4]');
    expect(await widget.getAttribute('data-image')).toBe('[9,8,7]'); // it missed the push
    await page.evaluate(() => ((globalThis as any).portico.blocked = false));
    await expect.poll(() => element.getAttribute('data-portico-status'), { timeout: 60_000 }).toBe('open');
    await expect.poll(() => widget.getAttribute('data-image')).toBe('[4,4,4]');
    expect(await widget.getAttribute('data-image-kind')).toBe('DataView');
    await later.page.close();
    await page.close();
  });
});
