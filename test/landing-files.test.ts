/**
 * The landing page's files as a browser fetches them: the page at `/`, then its script modules,
 * stylesheet and icon under /static/, each with its content type and without the API token, every
 * module the page imports included (a module the gateway did not serve would leave the page blank).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, gateway, ROOT } from './helpers.js';

afterAll(cleanup);

const STATIC = path.join(ROOT, 'packages/server/static');
const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

describe('landing page files', () => {
  let url: string;
  beforeAll(async () => {
    url = (await gateway({ apiToken: 'files-token' })).url;
  });

  it('serves every file under static/ at /static/<its path>, with its type and no token', async () => {
    const files = readdirSync(STATIC, { recursive: true, encoding: 'utf8' }).filter((name) => TYPES[path.extname(name)]);
    expect(files).toEqual(expect.arrayContaining(['landing.js', 'landing.css', 'favicon.svg']));
    for (const name of files) {
      const res = await fetch(`${url}/static/${name.split(path.sep).join('/')}`);
      expect({ name, status: res.status, type: res.headers.get('content-type') }).toEqual({ name, status: 200, type: TYPES[path.extname(name)] });
      expect(await res.text()).toBe(readFileSync(path.join(STATIC, name), 'utf8'));
    }
  });

  it('serves every module the page imports, from its script tag down', async () => {
    const page = await (await fetch(`${url}/`)).text();
    const pending = [...page.matchAll(/<script type="module" src="([^"]+)"/g)].map((m) => new URL(m[1], `${url}/`).href);
    expect(pending).toEqual([`${url}/static/landing.js`]);
    const seen = new Set<string>();
    while (pending.length) {
      const module = pending.pop()!;
      if (seen.has(module)) continue;
      seen.add(module);
      const res = await fetch(module);
      expect({ module, status: res.status, type: res.headers.get('content-type') }).toEqual({ module, status: 200, type: 'text/javascript; charset=utf-8' });
      for (const [, specifier] of (await res.text()).matchAll(/^import\s[^;]*?from\s+'([^']+)';/gms)) pending.push(new URL(specifier, module).href);
    }
    // The entry, the rooms it imports, and the widget runtime they use.
    expect(seen.size).toBeGreaterThan(5);
    expect(seen).toContain(`${url}/static/portico-widget.js`);
  });

  it('serves nothing else without the token: the page only at /, no file that static/ lacks', async () => {
    expect((await fetch(`${url}/`)).status).toBe(200);
    for (const other of ['/static/index.html', '/static/landing/missing.js', '/static/landing']) expect({ other, status: (await fetch(`${url}${other}`)).status }).toEqual({ other, status: 401 });
  });
});
