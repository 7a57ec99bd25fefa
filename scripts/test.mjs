#!/usr/bin/env node
// `npm test`: provisions what the suites need when it is missing, builds, runs the Python unit
// tests and every vitest suite, and ends with the plain line `N passed, N failed`, counted from what
// each runner itself reported (scripts/tally.mjs says how) and red whenever anything went wrong.
//
// The terminal gets one line per step and per suite (ok or FAIL, its counts, how long it took), the
// runners' own totals, what went wrong, and the closing line; the lines' counts add up to it.
// Everything else, pip's and apt-get's output, the build's, vitest's and unittest's own reporters,
// goes to a log file named at the start and the end: .cache/test-logs/<time>-<pid>/test.log, beside
// vitest.json and vitest-tally.json (the last 10 runs are kept).
//
//   npm test                         everything, as CI runs it
//   npm test -- test/rest.test.ts    provisioned and built, then only that vitest suite (any vitest
//                                    arguments pass through: -t, --bail, …); the Python tests are left
//                                    out unless PORTICO_TEST_STEPS names them
//
// PORTICO_TEST_STEPS (comma list of provision, build, typecheck, python, vitest) picks the steps;
// PORTICO_TEST_REPORTS names the folder for test.log, vitest.json and vitest-tally.json instead.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { countModule, countUnittest, countVitest, suiteLine } from './tally.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const vitestArgs = process.argv.slice(2);
const steps = new Set(
  (process.env.PORTICO_TEST_STEPS ?? (vitestArgs.length ? 'provision,build,vitest' : 'provision,build,typecheck,python,vitest')).split(',').map((s) => s.trim()),
);

const LOGS = path.join(root, '.cache', 'test-logs');
const KEEP_RUNS = 10;
const reports = process.env.PORTICO_TEST_REPORTS
  ? path.resolve(process.env.PORTICO_TEST_REPORTS)
  : path.join(LOGS, `${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);
mkdirSync(reports, { recursive: true });
if (!process.env.PORTICO_TEST_REPORTS) {
  // The newest runs stay; older folders go (names sort by time).
  const runs = readdirSync(LOGS).sort();
  for (const old of runs.slice(0, Math.max(0, runs.length - KEEP_RUNS))) rmSync(path.join(LOGS, old), { recursive: true, force: true });
}
const logFile = path.join(reports, 'test.log');
const logFd = openSync(logFile, 'a');
const logName = path.relative(process.cwd(), logFile).startsWith('..') ? logFile : path.relative(process.cwd(), logFile);

/** A line for the terminal, and the log. */
const show = (line) => {
  process.stdout.write(`${line}\n`);
  writeSync(logFd, `${line}\n`);
};
/** A heading in the log only, before a step's output. */
const section = (title) => writeSync(logFd, `\n== ${title}\n`);

let passed = 0;
let failed = 0;
const problems = [];
const notes = [];
const summaries = [];

show(`npm test: full output in ${logName}`);

// Chromium, the test venvs, PostgreSQL and Slurm for the suites (fast when already there). A part
// that cannot be provisioned counts as one failure; the suites still run and show what it breaks.
let provisioned = { env: {}, errors: [] };
if (steps.has('provision')) {
  section('provision');
  const started = performance.now();
  try {
    provisioned = (await import('./provision.mjs')).provision({ logFd });
  } catch (err) {
    provisioned.errors.push(`provisioning crashed: ${err?.stack ?? err}`);
  }
  for (const reason of provisioned.errors) {
    problems.push(`provision failed: ${reason}`);
    failed += 1;
  }
  show(suiteLine({ name: 'provision', failed: provisioned.errors.length, ms: performance.now() - started }));
}

if (steps.has('build')) {
  section('build (npm run build)');
  const started = performance.now();
  const res = spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: ['ignore', logFd, logFd], env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', NX_DAEMON: 'false' } });
  const ok = res.status === 0;
  if (!ok) {
    problems.push(`build failed (exit ${res.status ?? res.signal ?? res.error?.message}); its output is in the log`);
    failed += 1;
  }
  show(suiteLine({ name: 'build', failed: ok ? 0 : 1, ms: performance.now() - started }));
}

// The tests' own sources are type-checked too (the builds leave *.test.ts out): a test that calls
// what no longer exists fails here with its line, not as a puzzling runtime error.
if (steps.has('typecheck')) {
  section('typecheck of the tests (tsc --noEmit)');
  const started = performance.now();
  const projects = ['test/tsconfig.json', 'packages/widget-runtime/tsconfig.test.json', 'packages/labextension/tsconfig.test.json'];
  let broken = 0;
  for (const project of projects) {
    const res = spawnSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', project], { cwd: root, stdio: ['ignore', logFd, logFd] });
    if (res.status !== 0) {
      broken += 1;
      problems.push(`tsc -p ${project} found type errors; they are in the log`);
    }
  }
  // Like the build, a step rather than tests: only its failures count in the closing line.
  failed += broken;
  show(suiteLine({ name: `typecheck of the tests (${projects.length} projects)`, failed: broken, ms: performance.now() - started }));
}

if (steps.has('python')) {
  section('python unit tests (packages/server/python/tests)');
  const started = performance.now();
  const python = process.env.PORTICO_PYTHON || 'python3';
  const res = spawnSync(python, ['-m', 'unittest', 'discover', '-s', 'tests'], {
    cwd: path.join(root, 'packages/server/python'),
    stdio: ['ignore', logFd, 'pipe'],
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  writeSync(logFd, res.stderr ?? '');
  const counted = countUnittest(res.stderr ?? '', res.status ?? 1);
  passed += counted.passed;
  failed += counted.failed;
  problems.push(...counted.problems);
  summaries.push(counted.summary);
  show(suiteLine({ name: 'python unit tests', passed: counted.passed, failed: counted.failed, ms: performance.now() - started }));
} else if (!process.env.PORTICO_TEST_STEPS) {
  notes.push('python unit tests: not run (vitest arguments given; PORTICO_TEST_STEPS=python,vitest runs both)');
}

if (steps.has('vitest')) {
  section('vitest');
  const report = path.join(reports, 'vitest.json');
  const tallyFile = path.join(reports, 'vitest-tally.json');
  rmSync(report, { force: true });
  rmSync(tallyFile, { force: true });
  const nameFilter = vitestArgs.some((a) => a === '-t' || a.startsWith('--testNamePattern'));
  // The tally reporter writes each suite's counts on fd 3 as it ends: shown at once.
  const shown = new Map();
  const child = spawn(
    process.execPath,
    [
      path.join(root, 'node_modules/vitest/vitest.mjs'),
      'run',
      // Plain text in the log file.
      '--no-color',
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${report}`,
      `--reporter=${path.join(root, 'scripts/vitest-tally.mjs')}`,
      ...vitestArgs,
    ],
    {
      cwd: root,
      stdio: ['ignore', logFd, logFd, 'pipe'],
      env: { ...process.env, ...provisioned.env, PORTICO_TALLY_FILE: tallyFile, PORTICO_SUITE_FD: '3', PORTICO_NAME_FILTER: nameFilter ? '1' : '0' },
    },
  );
  let pending = '';
  child.stdio[3].setEncoding('utf8');
  child.stdio[3].on('data', (chunk) => {
    pending += chunk;
    for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
      const text = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      try {
        const suite = JSON.parse(text);
        shown.set(suite.file, suite);
        show(suiteLine({ name: suite.file, passed: suite.passed, failed: suite.failed, ms: suite.ms }));
      } catch {
        writeSync(logFd, `${text}\n`);
      }
    }
  });
  const exitStatus = await new Promise((resolve) => {
    child.on('error', (err) => {
      writeSync(logFd, `cannot run vitest: ${err.message}\n`);
      resolve(1);
    });
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
  const tally = existsSync(tallyFile) ? JSON.parse(readFileSync(tallyFile, 'utf8')) : null;
  const counted = countVitest(tally, { exitStatus, nameFilter });
  // Suites vitest never ended (a worker that died, an interrupted run), and any whose final count
  // differs from its line (an error after it ended): their lines from the final results.
  for (const m of tally?.modules ?? []) {
    const final = countModule(m, { nameFilter });
    const line = shown.get(m.file);
    if (!line || line.passed !== final.passed || line.failed !== final.failed) {
      show(suiteLine({ name: `${m.file}${line ? ' (final count)' : ' (never ended)'}`, passed: final.passed, failed: final.failed, ms: line?.ms ?? null }));
    }
  }
  if (counted.outside.failed) show(suiteLine({ name: 'vitest, outside any suite', passed: 0, failed: counted.outside.failed }));
  passed += counted.passed;
  failed += counted.failed;
  problems.push(...counted.problems);
  notes.push(...counted.skips.map((s) => `skipped by a named condition: ${s}`));
  summaries.push(counted.summary);
}

section('summary');
show('');
for (const line of summaries) show(line);
for (const line of notes) show(line);
if (problems.length) {
  show(`\nwhat went wrong (${problems.length}):`);
  for (const line of problems) show(`- ${line}`);
}
show(`full output: ${logName}`);
show(`\n${passed} passed, ${failed} failed`);
process.exitCode = failed > 0 || problems.length > 0 ? 1 : 0;
