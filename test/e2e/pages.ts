/**
 * Plain web pages for the browser suites: a static site on its own loopback origin, and the whole
 * embedding a web developer writes to show a widget (one module script, one element).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

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
