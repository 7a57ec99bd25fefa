/**
 * Several gateways behind one real TLS reverse proxy (docs/operating/several-gateways.md): three
 * `portico serve` processes on one PostgreSQL index and one project folder, started as a group
 * deploys them, and Debian's nginx on loopback sending requests and sockets to them in turn
 * (round-robin), with the site the README shows. Through the proxy, whichever gateway each
 * request lands on (nginx's access log names it): REST calls count on one counter (10 … 60), a
 * widget page in Chromium shows every count made by calls the proxy sent to the other gateways,
 * and the Python client's calls, socket, widget pushes and stream all reach one instance.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type LaunchedBrowser } from './browser.js';
import { cleanup, ROOT, tempProject } from './helpers.js';
import { GATEWAYS_PAGE_SITE, startProxy, type AccessLine, type Proxy } from './support/nginx.js';
import { startPostgres, type TestPostgres } from './support/postgres.js';
import { cleanEnv, send as request, type Answer, type SendOptions } from './support/requests.js';
import { killGroup, launch, type Launched } from './support/processes.js';

const TIMEOUT = 180_000;
const BIN = path.join(ROOT, 'packages/server/bin/portico.js');
const TOKEN = 'proxy-gateways-token';
const SECRET = 'proxy-gateways-peer-secret';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const WAIT = { timeout: 30_000 };
/** How long afterAll lets a gateway stop after SIGTERM before it counts as stuck (its drain takes 5 s at most). */
const STOP_BOUND_MS = 60_000;

/** One HTTPS request to the proxy (trusting its certificate) with the api token. */
const send = (url: string, options: SendOptions = {}): Promise<Answer> => request(url, { ca, ...options, headers: { ...AUTH, ...options.headers } });

interface Served {
  launched: Launched;
  /** http://127.0.0.1:PORT, as its banner printed it. */
  url: string;
  /** 127.0.0.1:PORT, as nginx's access log names it. */
  host: string;
}

let postgres: TestPostgres;
let project: string;
const gateways: Served[] = [];
let proxy: Proxy;
let ca: string;
let browser: LaunchedBrowser | undefined;

/** Which of the gateways (0, 1, 2) nginx sent the request of `line` to. */
function served(line: AccessLine): number {
  return gateways.findIndex((g) => g.host === line.upstream);
}

/** The gateways nginx sent the requests tagged `ids` (X-Request-Id) to, in that order (nginx logs a request once it ended, which may be just after its client read the answer). */
async function landedOn(ids: string[]): Promise<number[]> {
  let lines: AccessLine[] = [];
  await expect
    .poll(async () => {
      lines = await proxy.access();
      return ids.filter((id) => !lines.some((l) => l.request_id === id));
    }, WAIT)
    .toEqual([]);
  return ids.map((id) => served(lines.find((l) => l.request_id === id)!));
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/** Live instances on each gateway (GET /v1/health asked of each directly). */
async function liveInstances(): Promise<number[]> {
  return Promise.all(
    gateways.map(async (g) => {
      const { instances } = (await (await fetch(`${g.url}/v1/health`, { headers: AUTH })).json()) as { instances: Record<string, number> };
      return sum(Object.values(instances));
    }),
  );
}

/** Open /v1/interfaces/ws sockets on each gateway (its /metrics), peer sockets of forwarding gateways included. */
async function openSockets(): Promise<number[]> {
  return Promise.all(
    gateways.map(async (g) => {
      const text = await (await fetch(`${g.url}/metrics`, { headers: AUTH })).text();
      return Number(/^portico_sockets\{endpoint="interfaces"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    }),
  );
}

beforeAll(async () => {
  postgres = await startPostgres({ durable: false });
  // The demo's counter (the one widget, so a page opens one socket) and streamer.
  const demo = path.join(ROOT, 'examples/demo');
  const files = Object.fromEntries(await Promise.all(['counter.py', 'counter.widget.js', 'counter.widget.css', 'streamer.py'].map(async (name) => [name, await readFile(path.join(demo, name), 'utf8')])));
  project = await tempProject(files, { demo: false });
  for (let i = 0; i < 3; i++) {
    // As an operator starts each one (on its own host in a deployment; here, three loopback ports).
    const launched = launch(
      process.execPath,
      [BIN, 'serve', project, '--port', '0', '--store', postgres.url, '--trusted-proxy', '127.0.0.1', '--instance-lease', '2', '--api-token', TOKEN, '--peer-secret', SECRET, '--log-level', 'info'],
      { cwd: ROOT, env: cleanEnv() },
    );
    gateways.push({ launched, url: '', host: '' });
  }
  for (const g of gateways) {
    g.url = (await g.launched.printed(/API (http:\/\/\S+)\/v1/))[1]!;
    g.host = new URL(g.url).host;
  }
  proxy = await startProxy(gateways.map((g) => g.url));
  ca = await readFile(proxy.certificate, 'utf8');
}, TIMEOUT);

afterAll(async () => {
  // The gateways are told to stop first: nothing the browser or the proxy does at their end can keep them.
  for (const g of gateways) g.launched.child.kill('SIGTERM');
  try {
    await browser?.close();
    await proxy?.stop();
    // A gateway that does not stop is a failure of this suite, with its log; the others still get cleaned up.
    const stuck: string[] = [];
    await Promise.all(
      gateways.map(async (g, i) => {
        const stopped = await Promise.race([g.launched.exited.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), STOP_BOUND_MS))]);
        if (!stopped) stuck.push(`gateway ${i} (${g.url}) still runs ${STOP_BOUND_MS / 1000} s after SIGTERM; its output:\n${g.launched.out()}${g.launched.err()}`);
      }),
    );
    if (stuck.length) throw new Error(stuck.join('\n\n'));
  } finally {
    for (const g of gateways) killGroup(g.launched.group);
    await cleanup();
    await postgres?.close();
  }
}, TIMEOUT);

describe('three gateways behind one TLS reverse proxy (nginx, round-robin), one PostgreSQL index', { timeout: TIMEOUT }, () => {
  it('REST through the proxy: reset, then add(1) six times, lands on every gateway in turn and counts 10, 20 … 60 on one counter', async () => {
    const big = { target: 'counter', version: ['~big'] };
    const reset = await send(`${proxy.url}/v1/interfaces/call`, { method: 'POST', body: { ...big, method: 'reset' }, headers: { 'x-request-id': 'rest-reset' } });
    expect(reset.body).toEqual({ payload: 0 });
    const answers: unknown[] = [];
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      ids.push(`rest-add-${i}`);
      answers.push((await send(`${proxy.url}/v1/interfaces/call`, { method: 'POST', body: { ...big, method: 'add', args: [1] }, headers: { 'x-request-id': ids[i]! } })).body.payload);
    }
    expect(answers).toEqual([10, 20, 30, 40, 50, 60]);
    // nginx sent them in turn: every gateway answered some, no two in a row the same one.
    const landed = await landedOn(ids);
    expect(new Set(landed)).toEqual(new Set([0, 1, 2]));
    for (let i = 1; i < landed.length; i++) expect(landed[i]).not.toBe(landed[i - 1]);
    // One gateway holds the counter live; the other two forwarded to it.
    expect(sum(await liveInstances())).toBe(1);
  });

  it('a widget page in Chromium through the proxy shows every count of calls the proxy sent to the other gateways, its socket relayed or not', async () => {
    browser = await launchBrowser();
    const pages: Page[] = [];
    const errors: string[] = [];
    /** Opens the landing page through the proxy with the api token; resolves once its counter widget shows `count`. */
    const open = async (count: number) => {
      // The certificate is a throwaway self-signed one: this browser context accepts it.
      const context = await browser!.browser.newContext({ ignoreHTTPSErrors: true });
      const page = await context.newPage();
      page.on('pageerror', (err) => errors.push(err.message));
      page.on('console', (msg) => {
        if (msg.type() === 'error' && !msg.location().url.endsWith('/favicon.ico')) errors.push(msg.text());
      });
      // The api token in the URL fragment (the page keeps it for its tab; a fragment never reaches the proxy).
      await page.goto(`${proxy.url}/#token=${TOKEN}`);
      const button = page.locator('article[data-module="counter"] button.counter-button');
      await expect.poll(() => button.textContent().catch(() => null), WAIT).toBe(`count is ${count}`);
      pages.push(page);
      return button;
    };
    const live = await liveInstances();
    const buttons = [await open(0)];
    // The first page's socket made the counter live, on the gateway it landed on: its one socket is there.
    const owner = (await liveInstances()).findIndex((n, i) => n === live[i]! + 1);
    expect(owner).toBeGreaterThanOrEqual(0);
    expect(await openSockets()).toEqual(gateways.map((_, i) => (i === owner ? 1 : 0)));
    // Another page, until one's socket lands on another gateway, which relays it to the owner: two
    // sockets for that page, the page's and the relay's. Each try shifts nginx's turn by one more request.
    for (let attempt = 0; sum(await openSockets()) === buttons.length; attempt++) {
      expect(attempt, 'no page socket landed on a gateway that does not own the counter').toBeLessThan(4);
      for (let i = 0; i <= attempt; i++) await send(`${proxy.url}/v1/health`);
      buttons.push(await open(0));
    }
    const sockets = await openSockets();
    expect(sum(sockets)).toBe(buttons.length + 1);
    expect(sockets.filter((n, i) => i !== owner && n === 1)).toHaveLength(1);

    // Calls through the proxy, on every gateway in turn: each page shows each count.
    const ids: string[] = [];
    for (let i = 1; i <= 3; i++) {
      ids.push(`page-add-${i}`);
      const answer = await send(`${proxy.url}/v1/interfaces/call`, { method: 'POST', body: { target: 'counter', method: 'add', args: [1] }, headers: { 'x-request-id': ids.at(-1)! } });
      expect(answer.body).toEqual({ payload: i });
      for (const button of buttons) await expect.poll(() => button.textContent(), WAIT).toBe(`count is ${i}`);
    }
    expect(new Set(await landedOn(ids))).toEqual(new Set([0, 1, 2]));
    // A click on the relayed page reaches the one counter (REST through the proxy reads it) and the page on the owner.
    await buttons.at(-1)!.click();
    for (const button of buttons) await expect.poll(() => button.textContent(), WAIT).toBe('count is 4');
    await expect.poll(async () => (await send(`${proxy.url}/v1/interfaces/call`, { method: 'POST', body: { target: 'counter', method: 'value' } })).body.payload, WAIT).toBe(4);
    expect(sum(await liveInstances())).toBe(sum(live) + 1);
    expect(errors).toEqual([]);
    for (const page of pages) await page.context().close();
  });

  it('the Python client through the proxy (https and wss): calls, a socket with its widget pushes, and a stream reach one instance each', async () => {
    const script = `
import sys, threading
from portico.client import Gateway
g = Gateway(sys.argv[1], token=sys.argv[2], timeout=60)
version = ["~big(step=7)"]
print(g.call("counter", "reset", version=version))
print(*[g.call("counter", "add", 1, version=version) for _ in range(6)])
with g.interface("counter", version) as counter:
    pushed = threading.Event()
    counter.on_widget_change(lambda changes: changes.get("count") == 56 and pushed.set())
    print(counter.add(1))
    print(g.call("counter", "add", 1, version=version))
    print(pushed.wait(60))
    print(counter.widget_set(count=100))
    print(g.call("counter", "value", version=version))
print(g.call("streamer", "echo", "made live"))
with g.interface("streamer") as streamer:
    print(list(streamer.ticks(3)))
`;
    const before = (await proxy.access()).length;
    const live = sum(await liveInstances());
    const { stdout } = await promisify(execFile)('python3', ['-c', script, proxy.url, TOKEN], {
      env: { ...cleanEnv(), PYTHONPATH: path.join(ROOT, 'packages/server/python'), SSL_CERT_FILE: proxy.certificate },
    });
    expect(stdout.trim().split('\n')).toEqual(['0', '7 14 21 28 35 42', '49', '56', 'True', "{'count': 100}", '100', 'made live', "['tick 0', 'tick 1', 'tick 2']"]);
    // Its REST calls landed on every gateway; each interface is live on one.
    const calls = async () => (await proxy.access()).slice(before).filter((l) => l.request.startsWith('POST /v1/interfaces/call '));
    await expect.poll(async () => (await calls()).length, WAIT).toBe(10);
    expect(new Set((await calls()).map(served))).toEqual(new Set([0, 1, 2]));
    expect(sum(await liveInstances())).toBe(live + 2);
  });

  it('the guide\'s "Several gateways" (docs/operating/several-gateways.md) shows the site configuration this test runs (but for its port, gateway addresses and certificate)', async () => {
    const readme = await readFile(path.join(ROOT, 'docs/operating/several-gateways.md'), 'utf8');
    expect(readme).toContain(`\`\`\`nginx\n${GATEWAYS_PAGE_SITE}\`\`\``);
  });
});
