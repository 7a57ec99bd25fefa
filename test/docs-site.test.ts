/**
 * The guide builds (issue 43): docs/ is a VitePress site with a sidebar by task and local search;
 * `npm test` builds it with the VitePress the provisioner installed (PORTICO_VITEPRESS, from
 * scripts/docs-site's lockfile), and a dead link, to a page or to a heading, fails. Its shell
 * blocks run in test/readme.test.ts.
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify, stripVTControlCharacters } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { launchBrowser } from './browser.js';
import { ROOT } from './helpers.js';
import { killGroup, launch } from './support/processes.js';

const VITEPRESS = process.env.PORTICO_VITEPRESS ?? path.join(ROOT, '.cache/docs-site/node_modules/vitepress/bin/vitepress.js');
const DOCS = path.join(ROOT, 'docs');
const made: string[] = [];
afterAll(async () => {
  for (const dir of made) await rm(dir, { recursive: true, force: true });
});

/** `vitepress build` of `docs` into a temporary folder: its exit status, output (colours stripped: CI=true turns them on) and folder. */
async function build(docs: string): Promise<{ code: number; output: string; out: string }> {
  const out = await mkdtemp(path.join(tmpdir(), 'portico-site-'));
  made.push(out);
  return promisify(execFile)(process.execPath, [VITEPRESS, 'build', docs, '--outDir', out], { cwd: ROOT, maxBuffer: 16 << 20 }).then(
    ({ stdout, stderr }) => ({ code: 0, output: stripVTControlCharacters(stdout + stderr), out }),
    (err: { stdout: string; stderr: string; code: number }) => ({ code: err.code, output: stripVTControlCharacters(err.stdout + err.stderr), out }),
  );
}

/** The guide as the tests build it, once. */
let built: ReturnType<typeof build> | undefined;
const site = () => (built ??= build(DOCS));

/** The built site over HTTP on loopback, as a static host serves it (`/x` is x.html). */
async function serve(out: string): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = http.createServer(async (req, res) => {
    const pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const file = path.join(out, pathname.endsWith('/') ? `${pathname}index.html` : path.extname(pathname) ? pathname : `${pathname}.html`);
    if (!file.startsWith(out)) return void res.writeHead(403).end();
    const type = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json', '.svg': 'image/svg+xml', '.woff2': 'font/woff2' }[path.extname(file)] ?? 'application/octet-stream';
    readFile(file).then(
      (body) => res.writeHead(200, { 'content-type': type }).end(body),
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Every Markdown page under docs/, from the repository root. */
async function pages(): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(DOCS, { recursive: true, withFileTypes: true })) {
    const dir = path.relative(ROOT, entry.parentPath);
    if (entry.isFile() && entry.name.endsWith('.md') && !dir.split(path.sep).some((p) => p.startsWith('.') || p === 'node_modules')) found.push(path.join(dir, entry.name));
  }
  return found.sort();
}

/** VitePress's heading ids (@mdit-vue/shared's slugify): what a `#fragment` has to match. */
function slug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .normalize('NFKD')
    .replace(/[\u0300-\u036F\u0000-\u001f]/g, '')
    .replace(/[\s~`!@#$%^&*()\-_+=[\]{}|\\;:"'“”‘’<>,.?/]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '')
    .replace(/^(\d)/, '_$1')
    .toLowerCase();
}

describe('the guide', () => {
  it('its sidebar lists every page once, by task, and each page has one title', async () => {
    const config = await readFile(path.join(DOCS, '.vitepress/config.mts'), 'utf8');
    const linked = [...config.matchAll(/link: '\/([^']+)'/g)].map((m) => `docs/${m[1]}.md`);
    expect(new Set(linked).size).toBe(linked.length);
    expect([...linked].sort()).toEqual((await pages()).filter((p) => p !== 'docs/index.md'));
    const groups = [...config.matchAll(/text: '([^']+)',\s*items:/g)].map((m) => m[1]);
    expect(groups).toEqual(['Start', 'Writing interfaces', 'Clients', 'Running', 'Operating', 'Reference', 'Working on Portico']);
    for (const page of linked) expect((await readFile(path.join(ROOT, page), 'utf8')).replace(/^```[\s\S]*?^```/gm, '').match(/^# /gm), page).toHaveLength(1);
  });

  it('every link to a heading leads to one (VitePress checks pages, not headings)', async () => {
    const ids = new Map<string, Set<string>>();
    const idsOf = async (page: string) => {
      if (!ids.has(page)) {
        const text = (await readFile(path.join(ROOT, page), 'utf8')).replace(/^```[\s\S]*?^```/gm, '');
        ids.set(page, new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!))));
      }
      return ids.get(page)!;
    };
    let checked = 0;
    for (const page of await pages()) {
      const text = (await readFile(path.join(ROOT, page), 'utf8')).replace(/^```[\s\S]*?^```/gm, '');
      for (const [, target, fragment] of text.matchAll(/\]\(((?:\.{1,2}\/)[^)#\s]*|)#([^)\s]+)\)/g)) {
        const file = target ? path.relative(ROOT, path.resolve(path.dirname(path.join(ROOT, page)), target!)) : page;
        expect((await idsOf(file)).has(fragment!), `${page}: #${fragment} is no heading of ${file}`).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(0);
  });

  it('builds with no dead link, every page and the local search index in it', { timeout: 180_000 }, async () => {
    const { code, output, out } = await site();
    expect(code, output).toBe(0);
    for (const page of await pages()) {
      const html = await readFile(path.join(out, path.relative(DOCS, page).replace(/\.md$/, '.html')), 'utf8');
      const title = /^# (.+)$/m.exec((await readFile(path.join(ROOT, page), 'utf8')).replace(/^```[\s\S]*?^```/gm, ''));
      expect(html, page).toContain(title ? '<h1 id=' : 'Drive Python from notebooks and web pages');
    }
    // Getting started is the README's set-up and tour, included: written once, shown in both.
    const start = await readFile(path.join(out, 'getting-started.html'), 'utf8');
    const text = start.replace(/<[^>]+>/g, '').replaceAll('&amp;', '&');
    expect(text).toContain('npm install && npm start');
    expect(text).toContain('Create an interface and call it.');
    expect(start).toContain('href="/reference/frames"');
    const chunks = await readdir(path.join(out, 'assets/chunks'));
    const index = chunks.find((c) => c.startsWith('@localSearchIndex'));
    expect(index, chunks.join(', ')).toBeDefined();
    expect(await readFile(path.join(out, 'assets/chunks', index!), 'utf8')).toContain('Helper modules');
  });

  it('in a browser: the sidebar by task leads to every page, and the search box finds a page by what it says', { timeout: 180_000 }, async () => {
    const { code, output, out } = await site();
    expect(code, output).toBe(0);
    const config = await readFile(path.join(DOCS, '.vitepress/config.mts'), 'utf8');
    const links = [...config.matchAll(/link: '(\/[^']+)'/g)].map((m) => m[1]!);
    const served = await serve(out);
    const browser = await launchBrowser();
    try {
      const { page, errors } = await browser.newPage();
      await page.goto(`${served.origin}/writing/interfaces`);
      await expect.poll(() => page.locator('h1').first().textContent()).toContain('Writing an interface');
      const sidebar = await page.locator('.VPSidebar a.VPLink').evaluateAll((as) => as.map((a) => new URL((a as HTMLAnchorElement).href).pathname));
      expect(sidebar).toEqual(links);
      await page.keyboard.press('/');
      await page.locator('.VPLocalSearchBox input').fill('reload');
      const first = page.locator('.VPLocalSearchBox .result').first();
      await expect.poll(() => first.textContent(), { timeout: 10_000 }).toContain('Editing source on disk');
      await page.locator('.VPLocalSearchBox input').fill('helper module underscore');
      await expect.poll(() => first.textContent(), { timeout: 10_000 }).toContain('Helper modules');
      await first.click();
      await expect.poll(() => page.url()).toMatch(/\/writing\/interfaces#helper-modules$/);
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
      await served.close();
    }
  });

  it('npm run docs serves the guide as you edit it, and stops on SIGTERM', { timeout: 120_000 }, async () => {
    const docs = launch('npm', ['run', 'docs', '--', '--port', '0'], { cwd: ROOT });
    try {
      const [, url] = await docs.printed(/Local:\s+(http:\/\/localhost:\d+\/)/);
      const page = await fetch(new URL('writing/interfaces', url!));
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<div id="app">');
      // The dev server renders the page's Markdown when the browser asks for it.
      const module = await fetch(new URL('writing/interfaces.md', url!));
      expect(module.status).toBe(200);
      expect(await module.text()).toContain('Helper modules');
      process.kill(-docs.group, 'SIGTERM');
      await docs.exited; // by the signal, as from a terminal's job control
      await expect(fetch(url!)).rejects.toThrow();
    } finally {
      killGroup(docs.group);
    }
  });

  it('a dead link fails the build, naming the link and its page', { timeout: 180_000 }, async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'portico-docs-'));
    made.push(root);
    const copy = path.join(root, 'docs');
    await cp(DOCS, copy, { recursive: true, filter: (src) => !/[/\\](node_modules|cache|dist)$/.test(src) });
    await cp(path.join(ROOT, 'README.md'), path.join(root, 'README.md'));
    await writeFile(path.join(copy, 'writing/values.md'), (await readFile(path.join(DOCS, 'writing/values.md'), 'utf8')) + '\nSee [the gone page](./gone.md).\n');
    const { code, output } = await build(copy);
    expect(code).not.toBe(0);
    expect(output).toMatch(/dead link .*gone.* in file writing[/\\]values\.md/);
  });
});
