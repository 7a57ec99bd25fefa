// How `npm test` counts: pure functions from what each runner reported to passed / failed, plus the
// lines that say why. Every way a runner can go wrong counts as at least one failure; nothing that
// went wrong can leave the count at zero.

/**
 * Counts one test module (a suite file) of the tally reporter's JSON (scripts/vitest-tally.mjs):
 *
 * - a failed test: one failure;
 * - a skipped test: one failure, unless it was skipped with a note (`ctx.skip(note)`, the named
 *   condition, listed in `skips`) or, when `nameFilter` is set (`-t`), not selected by the filter;
 * - a test vitest never finished: one failure;
 * - a module or suite vitest marks failed, or one with errors (collection, beforeAll/afterAll,
 *   teardown): at least one failure, even when its tests were all skipped or none were collected.
 *
 * npm test's line for the suite and its share of the closing count both come from here.
 *
 * @returns {{ passed: number, failed: number, problems: string[], skips: string[], skipped: number, failedModule: boolean }}
 */
export function countModule(m, { nameFilter = false } = {}) {
  const problems = [];
  const skips = [];
  let count = 0;
  for (const t of m.failed) {
    count += 1;
    problems.push(`failed: ${m.file} > ${t.name}\n    ${t.error.split('\n')[0]}`);
  }
  for (const t of m.skipped) {
    if (t.note) skips.push(`${m.file} > ${t.name}: ${t.note}`);
    else if (nameFilter && t.mode === 'skip') continue; // not selected by -t
    else {
      count += 1;
      // mode 'run' skipped: vitest never ran it because its suite failed first (e.g. in beforeAll).
      const why = t.mode === 'run' ? 'did not run (its suite failed before it)' : 'skipped without a named condition (counts as failed)';
      problems.push(`${why}: ${m.file} > ${t.name}`);
    }
  }
  for (const name of m.pending) {
    count += 1;
    problems.push(`never finished: ${m.file} > ${name}`);
  }
  for (const e of m.errors) problems.push(`error in ${e.where === 'module' ? m.file : `${m.file} > ${e.where}`}:\n    ${e.error.split('\n').slice(0, 3).join('\n    ')}`);
  const failedModule = m.state === 'failed' || m.errors.length > 0;
  if (failedModule && count === 0) {
    count = 1;
    if (m.errors.length === 0) problems.push(`suite failed: ${m.file}`);
  }
  return { passed: m.passed, failed: count, problems, skips, skipped: m.skipped.length, failedModule };
}

/**
 * Counts a vitest run from the tally reporter's JSON (scripts/vitest-tally.mjs) and vitest's exit
 * status: every module as countModule counts it, plus
 *
 * - an unhandled error: one failure each;
 * - no test module at all, or a non-zero exit status with nothing else counted: one failure.
 *
 * `outside` is the part of the count that belongs to no suite (the last two rules).
 *
 * @returns {{ passed: number, failed: number, problems: string[], skips: string[], summary: string, outside: { passed: number, failed: number } }}
 */
export function countVitest(tally, { exitStatus, nameFilter = false }) {
  let passed = 0;
  let failed = 0;
  const problems = [];
  const skips = [];
  let skippedTotal = 0;
  let failedModules = 0;
  if (!tally) {
    return {
      passed: 0,
      failed: 1,
      problems: [`vitest wrote no results (exit status ${exitStatus})`],
      skips,
      summary: 'vitest: no results',
      outside: { passed: 0, failed: 1 },
    };
  }
  for (const m of tally.modules) {
    const counted = countModule(m, { nameFilter });
    passed += counted.passed;
    failed += counted.failed;
    problems.push(...counted.problems);
    skips.push(...counted.skips);
    skippedTotal += counted.skipped;
    if (counted.failedModule) failedModules += 1;
  }
  const inSuites = failed;
  for (const e of tally.unhandled) {
    failed += 1;
    problems.push(`unhandled error (counts as failed):\n    ${e.split('\n').slice(0, 3).join('\n    ')}`);
  }
  if (tally.modules.length === 0) {
    failed += 1;
    problems.push('vitest ran no test file');
  }
  if (exitStatus !== 0 && failed === 0) {
    failed += 1;
    problems.push(`vitest exited with status ${exitStatus} (run end: ${tally.reason}) although no test failed`);
  }
  const tests = tally.modules.reduce((n, m) => n + m.passed + m.failed.length + m.skipped.length + m.pending.length, 0);
  const failedTests = tally.modules.reduce((n, m) => n + m.failed.length, 0);
  const summary =
    `vitest's own result: ${tally.modules.length} test files (${failedModules} failed), ${tests} tests ` +
    `(${passed} passed, ${failedTests} failed, ${skippedTotal} skipped), ${tally.unhandled.length} unhandled errors, exit status ${exitStatus}`;
  return { passed, failed, problems, skips, summary, outside: { passed: 0, failed: failed - inSuites } };
}

/**
 * npm test's line for a step or a suite: `ok` or `FAIL`, the name, its counts (when it has tests)
 * and how long it took, e.g. `ok    test/rest.test.ts                 34 passed, 0 failed    12.3 s`.
 */
export function suiteLine({ name, passed = null, failed = 0, ms = null, ok = failed === 0 }) {
  const counts = passed === null ? (failed ? `${failed} failed` : '') : `${passed} passed, ${failed} failed`;
  const time = ms === null ? '' : `${(ms / 1000).toFixed(1)} s`;
  return `${(ok ? 'ok' : 'FAIL').padEnd(5)} ${name.padEnd(54)} ${counts.padEnd(24)} ${time.padStart(8)}`.trimEnd();
}

/**
 * Counts a `python -m unittest` run from its stderr and exit status. Skips and unexpected successes
 * count as failures; a runner that broke without a count counts as one.
 */
export function countUnittest(stderr, exitStatus) {
  const ran = Number(/^Ran (\d+) tests?/m.exec(stderr)?.[1] ?? 0);
  const outcome = /^(OK|FAILED)(?: \(([^)]*)\))?\s*$/m.exec(stderr);
  const counts = Object.fromEntries([...(outcome?.[2] ?? '').matchAll(/([a-z ]+)=(\d+)/g)].map((m) => [m[1].trim(), Number(m[2])]));
  const bad = (counts.failures ?? 0) + (counts.errors ?? 0) + (counts.skipped ?? 0) + (counts['unexpected successes'] ?? 0);
  const problems = [];
  if (bad) problems.push(`python unit tests: ${outcome[2]}`);
  let failed = bad;
  if (!outcome || ran === 0 || (exitStatus !== 0 && bad === 0)) {
    failed = Math.max(failed, 1);
    problems.push(`python unit tests: the runner ran ${ran} tests and exited with status ${exitStatus}`);
  }
  return { passed: Math.max(0, ran - bad), failed, problems, summary: `unittest's own result: ran ${ran}, ${outcome?.[0].trim() ?? 'no outcome line'}` };
}
