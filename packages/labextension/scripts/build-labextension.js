#!/usr/bin/env node
// Builds the prebuilt JupyterLab extension into ./labextension with npm packages alone:
// @jupyterlab/builder's build-labextension, given JupyterLab's core package.json from
// @jupyterlab/core-meta (byte-for-byte the jupyterlab wheel's staging/package.json). No Python,
// no jlpm. Run after `tsc -b` (it bundles ./lib). `--development` builds unminified with source maps.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(here, 'package.json'));

// build-labextension wants a directory holding the core package.json.
const core = mkdtempSync(path.join(tmpdir(), 'portico-jlab-core-'));
try {
  mkdirSync(core, { recursive: true });
  copyFileSync(require.resolve('@jupyterlab/core-meta/core.package.json'), path.join(core, 'package.json'));
  const builder = require.resolve('@jupyterlab/builder/lib/build-labextension.js');
  const args = [builder, '--core-path', core, ...process.argv.slice(2), here];
  const result = spawnSync(process.execPath, args, { stdio: 'inherit' });
  process.exitCode = result.status ?? 1;
} finally {
  rmSync(core, { recursive: true, force: true });
}
