/**
 * Headless Debian Chromium through playwright-core, for browser tests. `npm test` (and
 * `npm run provision`) installs /usr/bin/chromium and exports PORTICO_CHROMIUM.
 *
 *   const b = await launchBrowser();
 *   const { page, errors } = await b.newPage();
 *   await page.goto(url);
 *   expect(errors).toEqual([]);
 *   await b.close();
 */
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import type { RunningServer } from '../packages/server/src/index.js';
import { cleanup } from './helpers.js';

export const CHROMIUM = process.env.PORTICO_CHROMIUM ?? '/usr/bin/chromium';

/** The exact flags the toolchain notes verified with Debian Chromium 156 (root, no GPU, no network chatter). */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface TrackedPage {
  page: Page;
  /** Console messages of type `error` (but the browser's own /favicon.ico probe) and uncaught page errors, in order, as text. */
  errors: string[];
  /** Every request URL the page made, in order. */
  requests: string[];
}

export interface LaunchedBrowser {
  browser: Browser;
  /** A new page in its own context, recording console errors, page errors and requests. */
  newPage(): Promise<TrackedPage>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<LaunchedBrowser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: run \`npm run provision\` (installs Debian's chromium)`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  return {
    browser,
    async newPage() {
      const context = await browser.newContext();
      const page = await context.newPage();
      const errors: string[] = [];
      const requests: string[] = [];
      page.on('console', (msg) => {
        if (msg.type() !== 'error') return;
        const where = msg.location().url;
        // Chromium asks every origin for /favicon.ico by itself; a 404 there is not the page's doing.
        if (where && new URL(where).pathname === '/favicon.ico') return;
        errors.push(`console: ${msg.text()}${where ? ` (${where})` : ''}`);
      });
      page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
      page.on('request', (req) => requests.push(req.url()));
      return { page, errors, requests };
    },
    async close() {
      await browser.close();
    },
  };
}

/** A static site on its own loopback origin (another port = another origin); `.js` paths are served as JavaScript. */
export async function staticSite(pages: Record<string, string>): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const body = pages[req.url ?? '/'];
    if (body === undefined) {
      res.writeHead(404).end();
      return;
    }
    // A module script must come as JavaScript (Chromium refuses text/html); every other page is HTML.
    const type = req.url?.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/html; charset=utf-8';
    res.writeHead(200, { 'content-type': type }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { origin, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** The whole embedding a web developer writes: one module script and one element. */
export function embed(gatewayUrl: string, attributes: string): string {
  return `<!doctype html><html><body>
<script type="module" src="${gatewayUrl}/static/portico-widget.js"></script>
<portico-widget url="${gatewayUrl}" ${attributes}></portico-widget>
</body></html>`;
}

/** What `embedSuite` gives a browser suite. */
export interface EmbedSuite {
  /** The gateway, started in beforeAll (a suite that restarts it may replace it). */
  running: RunningServer;
  /** The static site, on its own origin, which the gateway allows. */
  site: { origin: string; close: () => Promise<void> };
  /** The site's pages by path (`/name.html`); a page may be added at any time. */
  pages: Record<string, string>;
  /** The suite's browser, launched on first use. */
  browser(): Promise<LaunchedBrowser>;
  /** Serves `html` at `/name` of the site and opens it in a new page. */
  open(name: string, html: string): Promise<TrackedPage>;
}

/**
 * The fixtures every embed suite shares: a static site and the gateway `start(origin)` makes for it,
 * started in beforeAll; the browser, the site and every gateway stopped in afterAll.
 */
export function embedSuite(start: (siteOrigin: string) => Promise<RunningServer>, timeout: number): EmbedSuite {
  let launched: LaunchedBrowser | undefined;
  const suite: EmbedSuite = {
    running: undefined as unknown as RunningServer,
    site: undefined as unknown as EmbedSuite['site'],
    pages: {},
    async browser() {
      launched ??= await launchBrowser();
      return launched;
    },
    async open(name, html) {
      suite.pages[`/${name}`] = html;
      const tracked = await (await suite.browser()).newPage();
      await tracked.page.goto(`${suite.site.origin}/${name}`);
      return tracked;
    },
  };
  beforeAll(async () => {
    suite.site = await staticSite(suite.pages);
    suite.running = await start(suite.site.origin);
  }, timeout);
  afterAll(async () => {
    await launched?.close();
    await suite.site?.close();
    await cleanup();
  }, timeout);
  return suite;
}
