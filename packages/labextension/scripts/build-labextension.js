#!/usr/bin/env node
// Builds the prebuilt JupyterLab extension with npm packages alone: @jupyterlab/builder's
// build-labextension, given JupyterLab's core package.json from @jupyterlab/core-meta
// (byte-for-byte the jupyterlab wheel's staging/package.json). No Python, no jlpm. Run after
// `tsc -b` (it bundles ./lib). `--development` builds unminified with source maps.
//
// Built beside, then swapped: the builder empties and rewrites its output folder as it goes, so a
// `portico-lab install` (or a JupyterLab test) copying ./labextension meanwhile would get half a
// build. It builds into a folder of its own under .builds/ instead (a staging package whose lib,
// schema and style link to this one's), and ./labextension is a symlink swapped to the new build in
// one rename when it is complete. A reader that resolved the link before keeps reading the build it
// started with: the previous build stays until the next one.
import { spawnSync } from 'node:child_process';
import { copyFileSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(here, 'package.json'));
const OUTPUT = path.join(here, 'labextension'); // package.json's jupyterlab.outputDir
const BUILDS = path.join(here, '.builds');

/** The build ./labextension links to now, if it is such a link. */
function currentBuild() {
  try {
    return lstatSync(OUTPUT).isSymbolicLink() ? path.basename(path.dirname(readlinkSync(OUTPUT))) : null;
  } catch {
    return null;
  }
}

// build-labextension wants a directory holding the core package.json.
const core = mkdtempSync(path.join(tmpdir(), 'portico-jlab-core-'));
mkdirSync(BUILDS, { recursive: true });
const staging = mkdtempSync(path.join(BUILDS, 'build-'));
let built = false;
try {
  copyFileSync(require.resolve('@jupyterlab/core-meta/core.package.json'), path.join(core, 'package.json'));
  copyFileSync(path.join(here, 'package.json'), path.join(staging, 'package.json'));
  for (const part of ['lib', 'schema', 'style', 'src']) symlinkSync(path.join('..', '..', part), path.join(staging, part), 'dir');
  const builder = require.resolve('@jupyterlab/builder/lib/build-labextension.js');
  const args = [builder, '--core-path', core, ...process.argv.slice(2), staging];
  const result = spawnSync(process.execPath, args, { stdio: 'inherit' });
  process.exitCode = result.status ?? 1;
  built = result.status === 0;
} finally {
  rmSync(core, { recursive: true, force: true });
}

if (built) {
  const previous = currentBuild();
  const link = path.join(here, `.labextension-${process.pid}`);
  rmSync(link, { force: true });
  symlinkSync(path.join('.builds', path.basename(staging), 'labextension'), link, 'dir');
  // A folder left by a build from before this scheme cannot be renamed over; it goes first.
  if (!lstatSync(OUTPUT, { throwIfNoEntry: false })?.isSymbolicLink()) rmSync(OUTPUT, { recursive: true, force: true });
  renameSync(link, OUTPUT);
  for (const name of readdirSync(BUILDS)) {
    if (name !== path.basename(staging) && name !== previous) rmSync(path.join(BUILDS, name), { recursive: true, force: true });
  }
} else {
  rmSync(staging, { recursive: true, force: true });
}
