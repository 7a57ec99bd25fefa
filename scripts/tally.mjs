// How `npm test` counts: pure functions from what each runner reported to passed / failed, plus the
// lines that say why. Every way a runner can go wrong counts as at least one failure; nothing that
// went wrong can leave the count at zero.

/**
 * Counts a vitest run from the tally reporter's JSON (scripts/vitest-tally.mjs) and vitest's exit status.
 *
 * - a failed test: one failure;
 * - a skipped test: one failure, unless it was skipped with a note (`ctx.skip(note)`, the named
 *   condition, listed in `skips`) or, when `nameFilter` is set (`-t`), not selected by the filter;
 * - a test vitest never finished: one failure;
 * - a module or suite vitest marks failed, or one with errors (collection, beforeAll/afterAll,
 *   teardown): at least one failure, even when its tests were all skipped or none were collected;
 * - an unhandled error: one failure each;
 * - no test module at all, or a non-zero exit status with nothing else counted: one failure.
 *
 * @returns {{ passed: number, failed: number, problems: string[], skips: string[], summary: string }}
 */
export function countVitest(tally, { exitStatus, nameFilter = false }) {
  let passed = 0;
  let failed = 0;
  const problems = [];
  const skips = [];
  let skippedTotal = 0;
  let failedModules = 0;
  if (!tally) {
    return { passed: 0, failed: 1, problems: [`vitest wrote no results (exit status ${exitStatus})`], skips, summary: 'vitest: no results' };
  }
  for (const m of tally.modules) {
    passed += m.passed;
    let count = 0;
    for (const t of m.failed) {
      count += 1;
      problems.push(`failed: ${m.file} > ${t.name}\n    ${t.error.split('\n')[0]}`);
    }
    for (const t of m.skipped) {
      skippedTotal += 1;
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
    if (m.state === 'failed' || m.errors.length > 0) {
      failedModules += 1;
      if (count === 0) {
        count = 1;
        if (m.errors.length === 0) problems.push(`suite failed: ${m.file}`);
      }
    }
    failed += count;
  }
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
  return { passed, failed, problems, skips, summary };
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
  return { passed: Math.max(0, ran - bad), failed, problems, summary: `unittest's own result: ran ${ran}, ${outcome?.[0] ?? 'no outcome line'}` };
}
