#!/usr/bin/env node
// The build `npm install` (and `npm ci`) runs, as the root `prepare` script: `lerna run build`, every
// package's own `build`, with all of its output in .cache/build.log. It prints one line, what was
// built and how long it took; when the build fails, the whole output and then the log's path (and
// `npm install` fails with it). `node scripts/build.mjs --verbose` shows the output as it comes, as
// `npm run build` (plain lerna) does.
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const logFile = path.join(root, '.cache', 'build.log');
const verbose = process.argv.includes('--verbose');

/** The workspace packages that have a build script, by name: what `lerna run build` builds. */
function packagesWithBuild() {
  const { workspaces = [] } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  return workspaces
    .map((dir) => path.join(root, dir, 'package.json'))
    .filter((file) => existsSync(file))
    .map((file) => JSON.parse(readFileSync(file, 'utf8')))
    .filter((pkg) => pkg.scripts?.build)
    .map((pkg) => pkg.name);
}

const lerna = path.join(root, 'node_modules', '.bin', 'lerna');
if (!existsSync(lerna)) {
  console.error(`build: ${path.relative(root, lerna)} is missing; run \`npm install\` first`);
  process.exit(1);
}

mkdirSync(path.dirname(logFile), { recursive: true });
const fd = verbose ? null : openSync(logFile, 'w');
const started = Date.now();
const res = spawnSync(lerna, ['run', 'build', '--stream'], {
  cwd: root,
  stdio: ['ignore', fd ?? 'inherit', fd ?? 'inherit'],
  env: {
    ...process.env,
    // Plain text in the log; and no Nx daemon or cloud connection left behind by an install.
    ...(verbose ? {} : { NO_COLOR: '1', FORCE_COLOR: '0' }),
    NX_DAEMON: 'false',
    NX_NO_CLOUD: 'true',
    NX_TUI: 'false',
  },
});
if (fd !== null) closeSync(fd);
const seconds = ((Date.now() - started) / 1000).toFixed(1);
const logName = path.relative(process.cwd(), logFile) || logFile;

if (res.status === 0) {
  console.log(`build: ${packagesWithBuild().join(', ')} built in ${seconds} s${verbose ? '' : ` (output in ${logName})`}`);
} else {
  if (!verbose) process.stderr.write(readFileSync(logFile, 'utf8'));
  const why = res.error ? res.error.message : `exit ${res.status ?? res.signal}`;
  console.error(`build: FAILED after ${seconds} s (${why})${verbose ? '' : `; the output above is also in ${logName}`}`);
  process.exitCode = 1;
}
