#!/usr/bin/env node
// `npm run docs`: serves the guide in docs/ on http://localhost:5173/ (VitePress's dev server, which
// reloads a page as you edit it), installing VitePress into .cache/docs-site first if it is missing.
// `npm run docs -- build` writes the static site to docs/.vitepress/dist instead; other arguments go
// to VitePress (`-- --port 5174`).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDocsSite, VITEPRESS } from './provision-docs.mjs';
import { ProvisionError } from './provision-shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

try {
  ensureDocsSite();
} catch (err) {
  console.error(`docs: ${err instanceof ProvisionError ? err.message : err}`);
  process.exit(1);
}
const args = process.argv.slice(2);
const command = args[0] === 'build' || args[0] === 'preview' ? [args.shift()] : ['dev'];
const child = spawn(process.execPath, [VITEPRESS, ...command, 'docs', ...args], { cwd: ROOT, stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
