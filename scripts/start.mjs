#!/usr/bin/env node
// `npm start`: the gateway on the demo project, with the embedded store. Builds first only when a
// source is newer than what was built (a second start goes straight to the gateway), quietly:
// the build's output shows only when it fails, or with --verbose (which also logs every request).
// Other arguments go to `portico serve` (`npm start -- --allow-origin https://example.org`).
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const verbose = args.includes('--verbose');
const serveArgs = args.filter((a) => a !== '--verbose');

/** Newest modification time of the files under `dir` (0 when it does not exist). */
function newest(dir) {
  let latest = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
    const full = path.join(dir, e.name);
    latest = Math.max(latest, e.isDirectory() ? newest(full) : statSync(full).mtimeMs);
  }
  return latest;
}

/** Each package's sources and the file its build writes last. */
const BUILDS = [
  { sources: ['packages/server/src'], output: 'packages/server/dist/index.js' },
  { sources: ['packages/widget-runtime/src'], output: 'packages/widget-runtime/dist/portico-widget.js' },
  { sources: ['packages/labextension/src', 'packages/labextension/style', 'packages/labextension/schema', 'packages/widget-runtime/src'], output: 'packages/labextension/labextension/package.json' },
];
const mtime = (file) => {
  try {
    return statSync(path.join(root, file)).mtimeMs;
  } catch {
    return 0;
  }
};
const stale = BUILDS.some(({ sources, output }) => Math.max(...sources.map((s) => newest(path.join(root, s)))) > mtime(output));

if (stale) {
  if (verbose) console.log('Building…');
  const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: verbose ? 'inherit' : 'pipe', encoding: 'utf8' });
  if (build.status !== 0) {
    if (!verbose) process.stderr.write(`${build.stdout ?? ''}${build.stderr ?? ''}`);
    console.error(`npm start: the build failed (exit ${build.status ?? build.signal}); see above`);
    process.exit(1);
  }
}

// Quiet unless asked: warnings and errors only, one access line per request with --verbose.
const logLevel = serveArgs.some((a) => a.startsWith('--log-level')) ? [] : ['--log-level', verbose ? 'info' : 'warn'];
const gateway = spawn(process.execPath, [path.join(root, 'packages/server/bin/portico.js'), 'serve', path.join(root, 'examples/demo'), ...logLevel, ...serveArgs], { stdio: 'inherit' });
// Ctrl+C reaches the gateway through the terminal's process group; a signal sent to this script alone is passed on.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => gateway.kill(signal));
gateway.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
