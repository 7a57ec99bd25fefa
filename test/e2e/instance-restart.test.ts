/**
 * A widget page through a crash of its Python worker, in Debian Chromium: the demo counter
 * (counter.py + counter.widget.js) is mounted with `<portico-widget>`, its worker is killed
 * (SIGKILL), and the page hears `instance_restarted` (the element's `portico-instance-restarted`
 * event and the passing notice), reads the widget state again on the same socket (no reconnect)
 * and shows what the gateway answers, then keeps working. A widget that keeps its state in memory
 * only comes back fresh, and the page shows that too.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { WebSocket as PageSocket } from 'playwright-core';
import { embedSuite } from '../browser.js';
import { api, Client, gateway, tempProject } from '../helpers.js';

const E2E_TIMEOUT = 120_000;

const FILES = {
  // The counter's front end over a state kept in memory only: made again, it starts afresh.
  'volatile.py': `
from portico import Interface


class Volatile(Interface):
    _persist_widget = False
    _esm = "counter.widget.js"

    def __init__(self):
        self.count = 0

    def widget_state(self):
        return {"count": self.count, "step": 1}

    def widget_update(self, changes):
        self.count = int(changes.get("count", self.count))
        return {"count": self.count}
`,
};

const suite = embedSuite(async (origin) => gateway({ project: await tempProject(FILES), allowOrigins: [origin] }), E2E_TIMEOUT);

interface SeenFrame {
  dir: 'in' | 'out';
  frame: { type?: string; id?: unknown; payload?: any };
}

/** The page: the bundle, a listener that keeps every `portico-instance-restarted` detail, and the widget. */
function page(gatewayUrl: string, attributes: string): string {
  return `<!doctype html><html><body>
<script>
  window.restarts = [];
  document.addEventListener('portico-instance-restarted', (event) => window.restarts.push(event.detail));
</script>
<script type="module" src="${gatewayUrl}/static/portico-widget.js"></script>
<portico-widget url="${gatewayUrl}" ${attributes}></portico-widget>
</body></html>`;
}

/** Opens the page with every text frame of its sockets recorded, in order (hooked before it opens any). */
async function openTracked(gatewayUrl: string, name: string, attributes: string) {
  suite.pages[`/${name}`] = page(gatewayUrl, attributes);
  const { page: tab, errors } = await (await suite.browser()).newPage();
  const sockets: PageSocket[] = [];
  const seen: SeenFrame[] = [];
  tab.on('websocket', (ws) => {
    sockets.push(ws);
    const keep = (dir: SeenFrame['dir']) => ({ payload }: { payload: string | Buffer }) => {
      if (typeof payload === 'string') seen.push({ dir, frame: JSON.parse(payload) });
    };
    ws.on('framereceived', keep('in'));
    ws.on('framesent', keep('out'));
  });
  await tab.goto(`${suite.site.origin}/${name}`);
  const button = tab.locator('portico-widget button.counter-button');
  await expect.poll(() => button.textContent(), { timeout: 30_000 }).toMatch(/^count is \d+$/);
  await tab.waitForFunction(() => (document.querySelector('portico-widget') as any)?.handle?.uuid, null, { timeout: 30_000 });
  const uuid = await tab.evaluate(() => (document.querySelector('portico-widget') as any).handle.uuid as string);
  return { tab, errors, sockets, seen, button, uuid };
}

/** SIGKILLs the worker holding live instances; returns its pid. */
async function killWorker(running: { url: string }): Promise<number> {
  const workers = (await api(running, 'GET', '/v1/projects')).body.workers as Array<{ pid: number | null; instances: number }>;
  const worker = workers.find((w) => w.pid && w.instances > 0);
  expect(worker, JSON.stringify(workers)).toBeDefined();
  process.kill(worker!.pid!, 'SIGKILL');
  return worker!.pid!;
}

/** The widget_state answering the page's first widget_get after instance_restarted, in `frames`, once there. */
function rereadAfterRestart(frames: SeenFrame[]): { count: number; step: number } | undefined {
  const told = frames.findIndex((f) => f.dir === 'in' && f.frame.type === 'instance_restarted');
  if (told < 0) return undefined;
  const get = frames.find((f, i) => i > told && f.dir === 'out' && f.frame.type === 'widget_get');
  const answer = get && frames.find((f) => f.dir === 'in' && f.frame.type === 'widget_state' && f.frame.id === get.frame.id);
  return answer?.frame.payload.state;
}

describe('a widget page through a worker crash', { timeout: E2E_TIMEOUT }, () => {
  it('hears instance_restarted, shows the notice, re-reads the state on the same socket and shows it', async () => {
    const { tab, errors, sockets, seen, button, uuid } = await openTracked(suite.running.url, 'restart.html', `target="counter" version='[{"start": 3}]'`);
    const element = tab.locator('portico-widget');
    expect(await button.textContent()).toBe('count is 3');
    await button.click();
    await button.click();
    await expect.poll(() => button.textContent()).toBe('count is 5');
    expect((await api(suite.running, 'POST', '/v1/interfaces/call', { target: uuid, method: 'value' })).body.payload).toBe(5);
    // The crash comes once the saved widget state (written shortly after a change) holds that
    // count on disk, however long the write takes here.
    const saved = path.join(suite.running.gateway.options.project, '.portico/interfaces', uuid, '.widget-state');
    await expect.poll(() => readFile(saved).then((bytes) => /"count":\s*5\b/.test(bytes.toString('latin1')), () => false), { timeout: 30_000 }).toBe(true);

    const before = seen.length;
    const pid = await killWorker(suite.running);

    // The element fires the event, with the gateway's payload ...
    await expect.poll(() => tab.evaluate(() => (window as any).restarts.length), { timeout: 30_000 }).toBe(1);
    const [restart] = await tab.evaluate(() => (window as any).restarts);
    expect(restart).toMatchObject({ uuid, reason: 'worker_crashed' });
    expect(restart.message).toContain(String(pid));
    // ... and shows the passing notice inside the widget's element.
    const notice = tab.locator('portico-widget .portico-widget-notice[role=status]');
    await expect.poll(() => notice.textContent(), { timeout: 5_000 }).toMatch(/restarted/);

    // The page asked for the state again after the frame, on the socket it had ...
    await expect.poll(() => rereadAfterRestart(seen.slice(before)), { timeout: 30_000 }).toBeDefined();
    const reread = rereadAfterRestart(seen.slice(before))!;
    expect(sockets).toHaveLength(1);
    expect(seen.slice(before).filter((f) => f.dir === 'out' && f.frame.type === 'connect')).toEqual([]);
    expect(await element.getAttribute('data-portico-status')).toBe('open');

    // ... and its DOM shows that answer, which is what a fresh widget_get answers too.
    await expect.poll(() => button.textContent()).toBe(`count is ${reread.count}`);
    const probe = await Client.open(suite.running.url);
    await probe.connect(uuid);
    const fresh = await probe.request({ type: 'widget_get' });
    expect(fresh.type).toBe('widget_state');
    expect(fresh.payload.state).toEqual(reread);
    probe.close();

    // The instance made again after the crash gets its saved widget state back, so the page shows
    // the count it had (5), not the `start` (3) a fresh instance begins with.
    expect(reread.count).toBe(5);

    // The widget keeps working: a click goes through the new worker.
    await button.click();
    await expect.poll(() => button.textContent()).toBe(`count is ${reread.count + 1}`);
    await expect.poll(async () => (await api(suite.running, 'POST', '/v1/interfaces/call', { target: uuid, method: 'value' })).body.payload).toBe(reread.count + 1);
    // The notice goes by itself.
    await expect.poll(() => notice.count(), { timeout: 15_000 }).toBe(0);
    expect(errors).toEqual([]);
    await tab.close();
  });

  it('a widget whose state lives in memory only comes back fresh, and the page shows the fresh state', async () => {
    // A gateway of its own: a second kill of one worker within 10 s of its start counts as a crash loop.
    const running = await gateway({ project: await tempProject(FILES), allowOrigins: [suite.site.origin] });
    const { tab, errors, seen, button, uuid } = await openTracked(running.url, 'volatile.html', 'target="volatile"');
    expect(await button.textContent()).toBe('count is 0');
    for (let i = 0; i < 3; i++) await button.click();
    await expect.poll(() => button.textContent()).toBe('count is 3');
    // The crash comes once the clicks have reached Python: a click still on its way when the worker
    // dies (a loaded machine) reaches the instance made again, which then reads 1–3, not 0.
    await expect.poll(async () => (await api(running, 'POST', '/v1/interfaces/call', { target: uuid, method: 'widget_state' })).body.payload).toEqual({ count: 3, step: 1 });
    const before = seen.length;
    await killWorker(running);
    await expect.poll(() => tab.evaluate(() => (window as any).restarts.length), { timeout: 30_000 }).toBe(1);
    await expect.poll(() => rereadAfterRestart(seen.slice(before)), { timeout: 30_000 }).toEqual({ count: 0, step: 1 });
    // No reload, no reconnect: the model took the state read again, and the view followed.
    await expect.poll(() => button.textContent()).toBe('count is 0');
    expect(await tab.locator('portico-widget').getAttribute('data-portico-status')).toBe('open');
    await button.click();
    await expect.poll(async () => (await api(running, 'POST', '/v1/interfaces/call', { target: uuid, method: 'widget_state' })).body.payload).toEqual({ count: 1, step: 1 });
    await expect.poll(() => button.textContent()).toBe('count is 1');
    expect(errors).toEqual([]);
    await tab.close();
  });
});
