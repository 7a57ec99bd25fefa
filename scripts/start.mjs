#!/usr/bin/env node
// `npm start [-- PROJECT] [options]`: `portico serve` on PROJECT (default examples/demo, or
// PORTICO_PROJECT), with the embedded store. Arguments after `--` go to `portico serve`, paths
// taken from the folder npm was started in. Builds first only when a source is newer than its
// last build (a second start goes straight to the gateway), quietly: the build's output shows only
// when it fails, or with --verbose (which also logs every request).
//
// The gateway runs in this process, so a signal sent to it is the gateway's; a signal sent to npm
// alone stops its shell only, and the gateway, orphaned, stops too (cli/main.ts, whenOrphaned).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const verbose = args.includes('--verbose');
const serveArgs = args.filter((a) => a !== '--verbose');
const cli = path.join(root, 'packages/server/dist/cli/main.js');

/** Sources a build leaves out: tests beside the code. */
const NOT_BUILT = /\.(test|oracle|arbitraries)\.ts$/;

/** Newest modification time of the built sources under `dir` (0 when it does not exist). */
function newest(dir) {
  let latest = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    if (e.name === 'node_modules' || e.name.startsWith('.') || NOT_BUILT.test(e.name)) continue;
    const full = path.join(dir, e.name);
    latest = Math.max(latest, e.isDirectory() ? newest(full) : statSync(full).mtimeMs);
  }
  return latest;
}

/**
 * Each package's sources and a file its build rewrites every time it builds: tsc -b leaves an
 * output whose text did not change untouched, but always writes its tsbuildinfo.
 */
const BUILDS = [
  { sources: ['packages/server/src'], output: 'packages/server/tsconfig.tsbuildinfo' },
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

/** The value of `--name V` or `--name=V` among the serve arguments (the last wins, as in `portico serve`). */
function flag(name) {
  let value;
  serveArgs.forEach((a, i) => {
    if (a === name) value = serveArgs[i + 1];
    else if (a.startsWith(`${name}=`)) value = a.slice(name.length + 1);
  });
  return value;
}

/** Whether the port `portico serve` will ask for is taken now (a build is not worth waiting for then). */
async function portTaken() {
  const port = Number(flag('--port') ?? process.env.PORTICO_PORT ?? 8000);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return false;
  const probe = createServer();
  const failure = await new Promise((resolve) => {
    probe.once('error', resolve);
    probe.listen(port, flag('--host') ?? process.env.PORTICO_HOST ?? '127.0.0.1', () => probe.close(() => resolve(undefined)));
  });
  return failure?.code === 'EADDRINUSE';
}

// A taken port is said at once, by the gateway as built before, rather than after a build.
if (stale && !(existsSync(cli) && (await portTaken()))) {
  if (verbose) console.log('Building…');
  const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: verbose ? 'inherit' : 'pipe', encoding: 'utf8' });
  if (build.status !== 0) {
    if (!verbose) process.stderr.write(`${build.stdout ?? ''}${build.stderr ?? ''}`);
    console.error(`npm start: the build failed (exit ${build.status ?? build.signal}); see above`);
    process.exit(1);
  }
}

// npm runs scripts in the repository's root; relative paths mean what they meant where npm started.
if (process.env.INIT_CWD && existsSync(process.env.INIT_CWD)) process.chdir(process.env.INIT_CWD);
process.env.PORTICO_PROJECT ??= path.join(root, 'examples/demo');
// What methods print, warnings and errors; an access line per request too with --verbose.
const logLevel = serveArgs.some((a) => a.startsWith('--log-level')) ? [] : ['--log-level', 'info'];
const accessLog = verbose || serveArgs.some((a) => a.startsWith('--access-log')) ? [] : ['--access-log', 'off'];
const { main } = await import(pathToFileURL(cli).href);
process.exitCode = await main(['serve', ...logLevel, ...accessLog, ...serveArgs]).catch((err) => {
  process.stderr.write(`portico: ${err?.message ?? err}\n`);
  return 1;
});
