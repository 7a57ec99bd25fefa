#!/usr/bin/env node
// `npm test`: provisions what the suites need when it is missing, builds, runs the Python unit
// tests and every vitest suite, and ends with the plain line `N passed, N failed`.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });

function step(title) {
  process.stdout.write(`\n== ${title}\n`);
}

let passed = 0;
let failed = 0;

// Chromium and the test venv for the browser and notebook suites (fast when already there). A part
// that cannot be provisioned counts as one failure; the suites still run and show what it breaks.
step('provision');
let provisioned = { env: {}, errors: [] };
try {
  provisioned = (await import('./provision.mjs')).provision();
} catch (err) {
  provisioned.errors.push(`provisioning crashed: ${err?.stack ?? err}`);
}
for (const reason of provisioned.errors) {
  console.log(`provision failed: ${reason}`);
  failed += 1;
}

step('build');
if (run('npm', ['run', 'build', '--silent']).status !== 0) {
  console.log('build failed');
  failed += 1;
}

step('python unit tests');
{
  const python = process.env.PORTICO_PYTHON || 'python3';
  const res = run(python, ['-m', 'unittest', 'discover', '-s', 'tests'], {
    cwd: path.join(root, 'packages/server/python'),
    stdio: ['ignore', 'inherit', 'pipe'],
    encoding: 'utf8',
  });
  process.stderr.write(res.stderr ?? '');
  const ran = Number(/Ran (\d+) tests?/.exec(res.stderr ?? '')?.[1] ?? 0);
  const bad = /FAILED \(([^)]*)\)/.exec(res.stderr ?? '')?.[1] ?? '';
  const failures = [...bad.matchAll(/(?:failures|errors)=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
  if (res.status !== 0 && failures === 0) failed += 1; // the runner itself broke
  failed += failures;
  passed += ran - failures;
}

step('vitest');
{
  const report = path.join(root, 'vitest.json');
  rmSync(report, { force: true });
  run(process.execPath, [path.join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`], {
    env: { ...process.env, ...provisioned.env },
  });
  if (existsSync(report)) {
    const r = JSON.parse(readFileSync(report, 'utf8'));
    passed += r.numPassedTests;
    // A suite that failed to load counts no tests: count it as one failure so it cannot hide.
    const unloaded = (r.testResults ?? []).filter((s) => s.status === 'failed' && (s.assertionResults ?? []).length === 0).length;
    failed += r.numFailedTests + unloaded;
  } else {
    console.log('vitest produced no report');
    failed += 1;
  }
}

console.log(`\n${passed} passed, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
