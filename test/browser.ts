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

/** A static site on its own loopback origin (another port = another origin). */
export async function staticSite(pages: Record<string, string>): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const body = pages[req.url ?? '/'];
    if (body === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
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
