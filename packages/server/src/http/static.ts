/**
 * What a browser loads without credentials: the landing page at `/` (a shell that asks the API
 * for the project, with the token from its own URL fragment when the gateway has one), its
 * stylesheet, script modules and icon (every .js, .css and .svg under static/, read at startup),
 * and the widget runtime bundle at /static/portico-widget.js, which a page on any origin can load
 * with one script tag (served with `Access-Control-Allow-Origin: *`, even to an origin the API
 * refuses, so that such a page can say why instead of staying blank). None holds anything secret.
 */
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type Router from '@koa/router';

const STATIC_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../static');

/** The types of what the page loads from static/ (its index.html is served at `/` alone). */
const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

/** Every such file in static/ and its folders at /static/<its path>, listed once: a new module of the page needs no change here. */
function pageFiles(): Record<string, { file: () => string; type: string }> {
  const found: Record<string, { file: () => string; type: string }> = {};
  for (const name of readdirSync(STATIC_DIR, { recursive: true, encoding: 'utf8' })) {
    const type = TYPES[path.extname(name)];
    if (type) found[`/static/${name.split(path.sep).join('/')}`] = { file: () => path.join(STATIC_DIR, name), type };
  }
  return found;
}

const FILES: Record<string, { file: () => string; type: string; anyOrigin?: true }> = {
  '/': { file: () => path.join(STATIC_DIR, 'index.html'), type: 'text/html; charset=utf-8' },
  ...pageFiles(),
  // Browsers ask for it whatever the page links; the same icon instead of a 404.
  '/favicon.ico': { file: () => path.join(STATIC_DIR, 'favicon.svg'), type: 'image/svg+xml' },
  '/static/portico-widget.js': {
    file: () => fileURLToPath(import.meta.resolve('@portico/widget-runtime/portico-widget.js')),
    type: 'text/javascript; charset=utf-8',
    anyOrigin: true,
  },
};

export function isStaticPath(p: string): boolean {
  return Object.hasOwn(FILES, p);
}

/** Static files any page may load, whatever the origin allowlist says. */
export function isAnyOriginPath(p: string): boolean {
  return isStaticPath(p) && FILES[p]!.anyOrigin === true;
}

export function mountStatic(router: Router): void {
  for (const [route, { file, type }] of Object.entries(FILES)) {
    router.get(route, async (ctx) => {
      ctx.type = type;
      // Never cached: a rebuilt bundle or an edited page shows on the next load.
      ctx.set('Cache-Control', 'no-store');
      if (FILES[route]!.anyOrigin) ctx.set('Access-Control-Allow-Origin', '*');
      ctx.body = await readFile(file());
    });
  }
}
