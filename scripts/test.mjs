#!/usr/bin/env node
// `npm test`: provisions what the suites need when it is missing, builds, runs the Python unit
// tests and every vitest suite, and ends with the plain line `N passed, N failed`, counted from what
// each runner itself reported (scripts/tally.mjs says how) and red whenever anything went wrong.
//
//   npm test                         everything, as CI runs it
//   npm test -- test/rest.test.ts    provisioned and built, then only that vitest suite (any vitest
//                                    arguments pass through: -t, --bail, …); the Python tests are left
//                                    out unless PORTICO_TEST_STEPS names them
//
// PORTICO_TEST_STEPS (comma list of provision, build, python, vitest) picks the steps;
// PORTICO_TEST_REPORTS names the folder for vitest.json and vitest-tally.json (default: the repo).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { countUnittest, countVitest } from './tally.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });
const step = (title) => process.stdout.write(`\n== ${title}\n`);

const vitestArgs = process.argv.slice(2);
const steps = new Set(
  (process.env.PORTICO_TEST_STEPS ?? (vitestArgs.length ? 'provision,build,vitest' : 'provision,build,python,vitest')).split(',').map((s) => s.trim()),
);
const reports = path.resolve(process.env.PORTICO_TEST_REPORTS ?? root);

let passed = 0;
let failed = 0;
const problems = [];
const notes = [];
const summaries = [];

// Chromium and the test venv for the browser and notebook suites (fast when already there). A part
// that cannot be provisioned counts as one failure; the suites still run and show what it breaks.
let provisioned = { env: {}, errors: [] };
if (steps.has('provision')) {
  step('provision');
  try {
    provisioned = (await import('./provision.mjs')).provision();
  } catch (err) {
    provisioned.errors.push(`provisioning crashed: ${err?.stack ?? err}`);
  }
  for (const reason of provisioned.errors) {
    problems.push(`provision failed: ${reason}`);
    failed += 1;
  }
}

if (steps.has('build')) {
  step('build');
  if (run('npm', ['run', 'build', '--silent']).status !== 0) {
    problems.push('build failed');
    failed += 1;
  }
}

if (steps.has('python')) {
  step('python unit tests');
  const python = process.env.PORTICO_PYTHON || 'python3';
  const res = run(python, ['-m', 'unittest', 'discover', '-s', 'tests'], {
    cwd: path.join(root, 'packages/server/python'),
    stdio: ['ignore', 'inherit', 'pipe'],
    encoding: 'utf8',
  });
  process.stderr.write(res.stderr ?? '');
  const counted = countUnittest(res.stderr ?? '', res.status ?? 1);
  passed += counted.passed;
  failed += counted.failed;
  problems.push(...counted.problems);
  summaries.push(counted.summary);
} else if (!process.env.PORTICO_TEST_STEPS) {
  notes.push('python unit tests: not run (vitest arguments given; PORTICO_TEST_STEPS=python,vitest runs both)');
}

if (steps.has('vitest')) {
  step('vitest');
  const report = path.join(reports, 'vitest.json');
  const tallyFile = path.join(reports, 'vitest-tally.json');
  rmSync(report, { force: true });
  rmSync(tallyFile, { force: true });
  const res = run(
    process.execPath,
    [
      path.join(root, 'node_modules/vitest/vitest.mjs'),
      'run',
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${report}`,
      `--reporter=${path.join(root, 'scripts/vitest-tally.mjs')}`,
      ...vitestArgs,
    ],
    { env: { ...process.env, ...provisioned.env, PORTICO_TALLY_FILE: tallyFile } },
  );
  const tally = existsSync(tallyFile) ? JSON.parse(readFileSync(tallyFile, 'utf8')) : null;
  const nameFilter = vitestArgs.some((a) => a === '-t' || a.startsWith('--testNamePattern'));
  const counted = countVitest(tally, { exitStatus: res.status ?? 1, nameFilter });
  passed += counted.passed;
  failed += counted.failed;
  problems.push(...counted.problems);
  notes.push(...counted.skips.map((s) => `skipped by a named condition: ${s}`));
  summaries.push(counted.summary);
}

step('summary');
for (const line of summaries) console.log(line);
for (const line of notes) console.log(line);
if (problems.length) {
  console.log(`\nwhat went wrong (${problems.length}):`);
  for (const line of problems) console.log(`- ${line}`);
}
console.log(`\n${passed} passed, ${failed} failed`);
process.exitCode = failed > 0 || problems.length > 0 ? 1 : 0;
