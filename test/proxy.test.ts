/**
 * One gateway behind a real TLS reverse proxy (Debian's nginx, with the site configuration README
 * "Behind a proxy" shows), started as a user starts it: `portico serve --trusted-proxy 127.0.0.1`.
 * Through the proxy: REST calls, a WebSocket, the landing page's widget in Chromium and the Python
 * client all drive one counter, and the page of the proxy's origin passes the origin check. Reached
 * directly from a peer it does not trust, the gateway ignores X-Forwarded-* headers: a forged
 * X-Forwarded-Host passes no origin check, a forged X-Forwarded-For names no client.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type LaunchedBrowser } from './browser.js';
import { cleanup, Client, ROOT, tempProject } from './helpers.js';
import { killGroup, launch, type Launched } from './support/processes.js';
import { PROXY_PAGE_SITE, startProxy, type Proxy } from './support/nginx.js';
import { cleanEnv, send } from './support/requests.js';

const TIMEOUT = 120_000;
const BIN = path.join(ROOT, 'packages/server/bin/portico.js');
/** A loopback address the gateway does not trust: a client that is not the proxy. */
const STRANGER = '127.0.0.5';

let served: Launched;
let gatewayUrl: string;
let proxy: Proxy;
let ca: string;
let browser: LaunchedBrowser | undefined;

/** The gateway's JSON log lines so far (stderr is no terminal, so every line is JSON). */
function logLines(): Array<Record<string, unknown>> {
  return served
    .err()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

const call = (base: string, body: Record<string, unknown>, extra: Parameters<typeof send>[1] = {}) =>
  send(`${base}/v1/interfaces/call`, { method: 'POST', body, ca, ...extra });

beforeAll(async () => {
  const project = await tempProject();
  served = launch(process.execPath, [BIN, 'serve', project, '--port', '0', '--trusted-proxy', '127.0.0.1', '--log-level', 'info'], { cwd: ROOT, env: cleanEnv() });
  gatewayUrl = (await served.printed(/API (http:\/\/\S+)\/v1/))[1]!;
  proxy = await startProxy(gatewayUrl);
  ca = await readFile(proxy.certificate, 'utf8');
}, TIMEOUT);

afterAll(async () => {
  // The gateway is told to stop first: nothing the browser or the proxy does at their end can keep it.
  served?.child.kill('SIGTERM');
  try {
    await browser?.close();
    await proxy?.stop();
    await served?.exited;
  } finally {
    if (served) killGroup(served.group);
    await cleanup();
  }
}, TIMEOUT);

describe('one gateway behind a TLS reverse proxy (nginx)', { timeout: TIMEOUT }, () => {
  it('the banner says whose X-Forwarded-* headers the gateway believes', () => {
    expect(served.out()).toContain('  Proxies  X-Forwarded-Proto, -Host and -For believed from 127.0.0.1 only');
  });

  it('REST through the proxy: the counter counts on, and a page of the proxy’s origin passes the origin check', async () => {
    const big = { target: 'counter', version: ['~big'] };
    const origin = { origin: proxy.url };
    expect((await call(proxy.url, { ...big, method: 'reset' }, { headers: origin })).body).toEqual({ payload: 0 });
    const counts = [];
    for (let i = 0; i < 3; i++) counts.push((await call(proxy.url, { ...big, method: 'add', args: [1] }, { headers: origin })).body.payload);
    expect(counts).toEqual([10, 20, 30]);
    // The proxy's own page is the gateway's own: /v1/origin says so, and another page is still refused.
    expect((await send(`${proxy.url}/v1/origin`, { ca, headers: origin })).body).toEqual({ origin: proxy.url, allowed: true, message: null });
    const other = await call(proxy.url, { ...big, method: 'value' }, { headers: { origin: 'https://elsewhere.example' } });
    expect([other.status, other.body.code]).toEqual([403, 'forbidden']);
    // The scheme counts: the proxy serves https, so an http page of the same host is another origin.
    const plain = await call(proxy.url, { ...big, method: 'value' }, { headers: { origin: proxy.url.replace('https:', 'http:') } });
    expect([plain.status, plain.body.code]).toEqual([403, 'forbidden']);
  });

  it('a WebSocket through the proxy (wss) drives the same counter, from a page of the proxy’s origin', async () => {
    const ws = await Client.open(proxy.url, { headers: { origin: proxy.url }, tls: { ca } });
    await ws.connect('counter', { version: ['~big'] });
    const counts = [];
    for (let i = 0; i < 3; i++) counts.push((await ws.request({ type: 'call', method: 'add', args: [1] })).payload);
    expect(counts).toEqual([40, 50, 60]);
    ws.close();
    // …and a socket from another page is refused at the upgrade.
    await expect(Client.open(proxy.url, { headers: { origin: 'https://elsewhere.example' }, tls: { ca } })).rejects.toMatchObject({ status: 403 });
  });

  it('the access log and the socket log name the client the proxy forwarded for, not the proxy', async () => {
    await send(`${proxy.url}/v1/health`, { ca, localAddress: STRANGER, headers: { 'x-request-id': 'through-proxy' } });
    // A client's own X-Forwarded-For reaches the gateway behind the proxy's entry: the right-most untrusted one counts.
    await send(`${proxy.url}/v1/health`, { ca, localAddress: STRANGER, headers: { 'x-request-id': 'forged-through-proxy', 'x-forwarded-for': '198.51.100.7' } });
    const ws = await Client.open(proxy.url, { tls: { ca, localAddress: STRANGER }, headers: { 'x-request-id': 'socket-through-proxy' } });
    await ws.connect('counter', { version: ['~big'] });
    const closed = new Promise((resolve) => ws.ws.once('close', resolve));
    ws.ws.close(1000, 'done');
    await closed;
    await expect.poll(() => logLines().find((l) => l.msg === 'socket' && l.req_id === 'socket-through-proxy')).toMatchObject({ client: STRANGER, status: 101 });
    await expect.poll(() => logLines().find((l) => l.req_id === 'through-proxy')).toMatchObject({ msg: 'http', client: STRANGER, path: '/v1/health', status: 200 });
    await expect.poll(() => logLines().find((l) => l.req_id === 'forged-through-proxy')).toMatchObject({ client: STRANGER });
  });

  it('reached directly from a peer it does not trust, the gateway ignores X-Forwarded-*: a forged X-Forwarded-Host passes no origin check', async () => {
    const forged = { origin: 'https://evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https', 'x-forwarded-for': '198.51.100.7' };
    const rest = await call(gatewayUrl, { target: 'counter', method: 'value' }, { localAddress: STRANGER, headers: { ...forged, 'x-request-id': 'forged-direct' } });
    expect([rest.status, rest.body.code]).toEqual([403, 'forbidden']);
    expect(rest.body.message).toContain('https://evil.example');
    expect((await send(`${gatewayUrl}/v1/origin`, { localAddress: STRANGER, headers: forged })).body).toMatchObject({ origin: 'https://evil.example', allowed: false });
    await expect(Client.open(gatewayUrl, { headers: forged, tls: { localAddress: STRANGER } })).rejects.toMatchObject({ status: 403 });
    // Its access line names the peer, not the address it claimed to forward for.
    await expect.poll(() => logLines().find((l) => l.req_id === 'forged-direct')).toMatchObject({ client: STRANGER, status: 403, code: 'forbidden' });
    // The same headers from the trusted address are the proxy's word, and are believed.
    const trusted = await call(gatewayUrl, { target: 'counter', method: 'value' }, { headers: forged });
    expect(trusted.status).toBe(200);
  });

  it('the landing page through the proxy in Chromium: the counter widget renders, a click round-trips, the snippets name the proxy', async () => {
    browser = await launchBrowser();
    // The certificate is a throwaway self-signed one: this browser context accepts it.
    const context = await browser.browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !msg.location().url.endsWith('/favicon.ico')) errors.push(msg.text());
    });
    await page.goto(`${proxy.url}/`);
    const button = page.locator('article[data-module="counter"] button.counter-button');
    await expect.poll(() => button.textContent().catch(() => null), { timeout: 30_000 }).toBe('count is 0');
    await button.click();
    await expect.poll(() => button.textContent()).toBe('count is 1');
    // The click reached Python: REST through the proxy reads it back…
    await expect.poll(async () => (await call(proxy.url, { target: 'counter', method: 'value' })).body.payload).toBe(1);
    // …and a push from Python reaches the page through the proxy's socket.
    expect((await call(proxy.url, { target: 'counter', method: 'add', args: [5] })).body.payload).toBe(6);
    await expect.poll(() => button.textContent()).toBe('count is 6');
    // The "Use it" snippets give the address the page was reached at.
    expect(await page.locator('article[data-module="counter"] [data-snippet="notebook"]').textContent()).toContain(`Gateway("${proxy.url}")`);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('the Python client through the proxy (https and wss), trusting the certificate with SSL_CERT_FILE', async () => {
    const script = `
import sys
from portico.client import Gateway
g = Gateway(sys.argv[1])
version = [{"start": 100}]
print(g.call("counter", "reset", version=version))
with g.interface("counter", version) as counter:
    print(counter.add(2))
    print(counter.add(3))
print(g.call("counter", "value", version=version))
`;
    const { stdout } = await promisify(execFile)('python3', ['-c', script, proxy.url], {
      env: { ...cleanEnv(), PYTHONPATH: path.join(ROOT, 'packages/server/python'), SSL_CERT_FILE: proxy.certificate },
    });
    expect(stdout.trim().split('\n')).toEqual(['100', '102', '105', '105']);
  });

  it('the guide\'s "Behind a proxy" (docs/operating/proxy.md) shows the site configuration this test runs', async () => {
    const readme = await readFile(path.join(ROOT, 'docs/operating/proxy.md'), 'utf8');
    expect(readme).toContain(`\`\`\`nginx\n${PROXY_PAGE_SITE}\`\`\``);
  });
});
