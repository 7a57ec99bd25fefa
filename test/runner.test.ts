/**
 * `npm test` itself (scripts/test.mjs): each way a vitest run can go wrong makes its count and exit
 * status red, and the final line agrees with what vitest reported. The runner runs here on throwaway
 * suites written to a temporary folder, with only its vitest step (PORTICO_TEST_STEPS=vitest).
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countUnittest } from '../scripts/tally.mjs';
import { ROOT } from './helpers.js';

let dir: string;

beforeAll(async () => {
  // Inside the repo so the suites resolve `vitest` from its node_modules; .cache is ignored by git.
  await mkdir(path.join(ROOT, '.cache'), { recursive: true });
  dir = await mkdtemp(path.join(ROOT, '.cache', 'runner-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface RunnerResult {
  status: number | null;
  output: string;
  last: string;
}

/** Writes one suite (or several, by name) and its vitest config, and runs `node scripts/test.mjs --config <that config>` on it. */
async function runOn(name: string, source: string | Record<string, string>): Promise<RunnerResult> {
  const folder = path.join(dir, name);
  await mkdir(folder, { recursive: true });
  for (const [suite, text] of Object.entries(typeof source === 'string' ? { [name]: source } : source)) {
    await writeFile(path.join(folder, `${suite}.test.ts`), text);
  }
  const config = path.join(folder, 'vitest.config.mjs');
  await writeFile(config, `export default { test: { root: ${JSON.stringify(folder)}, include: ['*.test.ts'] } };\n`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'scripts/test.mjs'), '--config', config], {
      cwd: ROOT,
      env: { ...process.env, PORTICO_TEST_STEPS: 'vitest', PORTICO_TEST_REPORTS: folder, CI: 'true', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('close', (status) => {
      const lines = output.trim().split('\n');
      resolve({ status, output, last: lines[lines.length - 1] });
    });
  });
}

describe('npm test counts from what vitest says went wrong', { timeout: 60_000 }, () => {
  it('a passing suite: green, and the count is vitest\'s', async () => {
    const r = await runOn('passes', `import { expect, it } from 'vitest';\nit('adds', () => { expect(1 + 1).toBe(2); });\n`);
    expect(r.last).toBe('1 passed, 0 failed');
    expect(r.status).toBe(0);
  });

  it('a suite that fails in beforeAll is red, though its tests were only skipped', async () => {
    const r = await runOn(
      'before-all',
      `import { beforeAll, expect, it } from 'vitest';
beforeAll(() => { throw new Error('the fixture cannot start its server'); });
it('would use the server', () => { expect(2 * 2).toBe(4); });
it('would use it again', () => { expect(2).toBe(2); });
`,
    );
    expect(r.status).toBe(1);
    expect(r.last).toMatch(/^0 passed, [1-9]\d* failed$/);
    expect(r.output).toContain('the fixture cannot start its server');
    // Its line says so too, with the same count as the closing line.
    const failed = /^(\d+) passed, (\d+) failed$/.exec(r.last)![2];
    expect(r.output).toMatch(new RegExp(`^FAIL +\\S*before-all\\.test\\.ts +0 passed, ${failed} failed +\\d+\\.\\d s$`, 'm'));
  });

  it('an unhandled rejection is red, though every test passed', async () => {
    const r = await runOn(
      'unhandled',
      `import { expect, it } from 'vitest';
it('passes, but leaves a rejection nobody handles', async () => {
  void Promise.reject(new Error('a promise nobody awaited'));
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(2 * 2).toBe(4);
});
`,
    );
    expect(r.status).toBe(1);
    expect(r.last).toMatch(/^1 passed, [1-9]\d* failed$/);
    expect(r.output).toContain('unhandled error');
    expect(r.output).toContain('a promise nobody awaited');
  });

  it('a suite that cannot be imported is red', async () => {
    const r = await runOn('unloadable', `import { it } from 'vitest';\nthrow new Error('this module cannot be imported');\nit('is never collected', () => {});\n`);
    expect(r.status).toBe(1);
    expect(r.last).toBe('0 passed, 1 failed');
    expect(r.output).toContain('this module cannot be imported');
  });

  it('a skipped test is a failure', async () => {
    const skip = ['it', 'skip'].join('.'); // spelled apart so checks for forgotten skips do not flag this file
    const r = await runOn('skipped', `import { expect, it } from 'vitest';\nit('runs', () => { expect(2 * 2).toBe(4); });\n${skip}('was switched off and forgotten', () => {});\n`);
    expect(r.status).toBe(1);
    expect(r.last).toBe('1 passed, 1 failed');
    expect(r.output).toContain('skipped without a named condition (counts as failed)');
  });

  it('a test skipped by a named condition is listed and stays green', async () => {
    const r = await runOn(
      'named-skip',
      `import { expect, it } from 'vitest';\nit('runs', () => { expect(2 * 2).toBe(4); });\nit('needs a GPU', (ctx) => { ctx.skip('no GPU on this machine'); });\n`,
    );
    expect(r.status).toBe(0);
    expect(r.last).toBe('1 passed, 0 failed');
    expect(r.output).toMatch(/skipped by a named condition: .*needs a GPU: no GPU on this machine/);
  });

  it('a failing test is one failure, with vitest\'s own totals printed beside it', async () => {
    const r = await runOn('fails', `import { expect, it } from 'vitest';\nit('ok', () => {});\nit('wrong', () => { expect(1).toBe(2); });\n`);
    expect(r.status).toBe(1);
    expect(r.last).toBe('1 passed, 1 failed');
    expect(r.output).toContain("vitest's own result: 1 test files (1 failed), 2 tests (1 passed, 1 failed, 0 skipped)");
  });
});

describe('npm test prints a line per suite and keeps the rest in a log', { timeout: 60_000 }, () => {
  it('one line per suite with its counts and time; the lines add up to the closing line; vitest\'s own output is in the log it names', async () => {
    const r = await runOn('two-suites', {
      green: `import { expect, it } from 'vitest';\nit('one', () => { expect([1, 2].length).toBe(2); });\nit('two', () => { console.log('chatter from a test'); });\n`,
      red: `import { expect, it } from 'vitest';\nit('ok', () => {});\nit('wrong', () => { expect(1).toBe(2); });\n`,
    });
    expect(r.status).toBe(1);
    expect(r.last).toBe('3 passed, 1 failed');
    const lines = r.output.split('\n');
    expect(lines).toContainEqual(expect.stringMatching(/^ok +\S*green\.test\.ts +2 passed, 0 failed +\d+\.\d s$/));
    expect(lines).toContainEqual(expect.stringMatching(/^FAIL +\S*red\.test\.ts +1 passed, 1 failed +\d+\.\d s$/));
    // vitest's own reporter and the tests' output go to the log only.
    expect(r.output).not.toContain('chatter from a test');
    expect(r.output).not.toMatch(/Test Files/);
    const named = /^npm test: full output in (\S+)$/m.exec(r.output)?.[1];
    expect(named).toBeTruthy();
    expect(r.output).toContain(`full output: ${named}`);
    const log = await readFile(path.resolve(ROOT, named!), 'utf8');
    expect(log).toContain('chatter from a test');
    expect(log).toMatch(/Test Files +1 failed \| 1 passed \(2\)/);
    expect(log).toContain('3 passed, 1 failed');
  });
});

describe('npm test counts the python unit tests from unittest\'s own lines', () => {
  it('OK is green; failures, errors, skips and a broken runner are red', () => {
    expect(countUnittest('...\nRan 3 tests in 0.1s\n\nOK\n', 0)).toMatchObject({ passed: 3, failed: 0 });
    expect(countUnittest('Ran 5 tests in 0.1s\n\nFAILED (failures=1, errors=2)\n', 1)).toMatchObject({ passed: 2, failed: 3 });
    expect(countUnittest('Ran 4 tests in 0.1s\n\nOK (skipped=1)\n', 0)).toMatchObject({ passed: 3, failed: 1 });
    expect(countUnittest('Traceback (most recent call last):\nImportError: x\n', 1)).toMatchObject({ passed: 0, failed: 1 });
    expect(countUnittest('Ran 0 tests in 0.0s\n\nNO TESTS RAN\n', 5)).toMatchObject({ failed: 1 });
  });
});
