// The documentation site's toolchain (VitePress), for `npm run docs` and the test that builds docs/
// (test/docs-site.test.ts): installed from npm into <repo>/.cache/docs-site with its own pinned
// lockfile (scripts/docs-site/), apart from the project's dependencies, so `npm ci` stays what the
// gateway and its packages need and a VitePress upgrade never moves them. `npm ci` runs only when
// the stamp in it does not match the lockfile's sha256. docs/node_modules links to its node_modules
// (ignored by git), so that Vite resolves VitePress's own dependencies from the site's root as it
// does in a project that installs it.
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { log, notice, ProvisionError, sh } from './provision-shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PINNED = path.join(ROOT, 'scripts', 'docs-site');
export const DOCS_SITE = path.join(ROOT, '.cache', 'docs-site');
export const VITEPRESS = path.join(DOCS_SITE, 'node_modules', 'vitepress', 'bin', 'vitepress.js');

const LINK = path.join(ROOT, 'docs', 'node_modules');
const LINK_TARGET = path.relative(path.dirname(LINK), path.join(DOCS_SITE, 'node_modules'));

/** docs/node_modules → .cache/docs-site/node_modules, made again when it is anything else. */
function linkIntoDocs() {
  let current = null;
  try {
    current = lstatSync(LINK).isSymbolicLink() ? readlinkSync(LINK) : '(not a link)';
  } catch {
    // missing: made below
  }
  if (current === LINK_TARGET) return;
  rmSync(LINK, { recursive: true, force: true });
  symlinkSync(LINK_TARGET, LINK, 'dir');
  log(`docs-site: linked docs/node_modules to ${LINK_TARGET}`);
}

export function ensureDocsSite() {
  const env = { PORTICO_VITEPRESS: VITEPRESS };
  const lock = readFileSync(path.join(PINNED, 'package-lock.json'));
  const sha = createHash('sha256').update(lock).digest('hex');
  const stampFile = path.join(DOCS_SITE, '.portico-provision.json');
  let stamp = null;
  try {
    stamp = JSON.parse(readFileSync(stampFile, 'utf8'));
  } catch {
    // no stamp (new or half-made): install below
  }
  if (stamp?.lock_sha256 === sha && existsSync(VITEPRESS)) {
    log(`docs-site: ${path.relative(ROOT, DOCS_SITE)} up to date (lockfile ${sha.slice(0, 12)})`);
    linkIntoDocs();
    return env;
  }
  notice(`docs-site: installing VitePress (scripts/docs-site) into ${path.relative(ROOT, DOCS_SITE)} (npm ci)`);
  rmSync(DOCS_SITE, { recursive: true, force: true });
  mkdirSync(DOCS_SITE, { recursive: true });
  for (const file of ['package.json', 'package-lock.json']) copyFileSync(path.join(PINNED, file), path.join(DOCS_SITE, file));
  // esbuild's platform binary comes as an optional dependency; no install script is needed.
  sh('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel', 'error'], { what: 'docs-site', cwd: DOCS_SITE });
  if (!existsSync(VITEPRESS)) throw new ProvisionError(`docs-site: npm ci finished but ${path.relative(ROOT, VITEPRESS)} is missing`);
  writeFileSync(stampFile, JSON.stringify({ lock_sha256: sha }, null, 2) + '\n');
  linkIntoDocs();
  log(`docs-site: ready (${path.relative(ROOT, VITEPRESS)})`);
  return env;
}
