// A vitest reporter for `npm test`: writes what went wrong, per test module, to the JSON file named
// by PORTICO_TALLY_FILE, so that scripts/test.mjs counts from vitest's own results rather than a
// guess. It records every failed test, every error vitest attached to a module or a suite (collection,
// beforeAll/afterAll, teardown), every skipped test with the note it was skipped with (`ctx.skip(note)`),
// every unhandled error, and why the run ended.
//
// With PORTICO_SUITE_FD (a file descriptor npm test reads), it also writes one JSON line per test
// module as soon as the module ends: its file, its counts as scripts/tally.mjs counts them, and how
// long it took from start to end; npm test shows each as the suite's line.
import { mkdirSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { countModule } from './tally.mjs';

const message = (err) => String(err?.stack ?? err?.message ?? err).split('\n').slice(0, 6).join('\n');

function describeModule(module) {
  const tests = [...module.children.allTests()];
  const suites = [module, ...module.children.allSuites()];
  const result = (state) => tests.filter((t) => t.result().state === state);
  return {
    file: path.relative(process.cwd(), module.moduleId),
    state: module.state(),
    passed: result('passed').length,
    failed: result('failed').map((t) => ({ name: t.fullName, error: message(t.result().errors?.[0]) })),
    skipped: result('skipped').map((t) => ({ name: t.fullName, mode: t.options.mode, note: t.result().note ?? null })),
    // Tests vitest never finished (a worker that died, a run that was interrupted).
    pending: result('pending').map((t) => t.fullName),
    errors: suites.flatMap((s) => s.errors().map((e) => ({ where: s.type === 'module' ? 'module' : s.fullName, error: message(e) }))),
  };
}

export default class TallyReporter {
  /** When each module started (ms), for its line's time. */
  starts = new Map();

  onTestModuleStart(module) {
    this.starts.set(module.moduleId, performance.now());
  }

  onTestModuleEnd(module) {
    const fd = Number(process.env.PORTICO_SUITE_FD);
    if (!Number.isInteger(fd) || fd < 0) return;
    const described = describeModule(module);
    const counted = countModule(described, { nameFilter: process.env.PORTICO_NAME_FILTER === '1' });
    const started = this.starts.get(module.moduleId);
    const ms = started === undefined ? module.diagnostic().duration : performance.now() - started;
    const line = { file: described.file, passed: counted.passed, failed: counted.failed, ms: Math.round(ms) };
    try {
      writeSync(fd, `${JSON.stringify(line)}\n`);
    } catch {
      // npm test stopped reading: the tally file still has everything.
    }
  }

  onTestRunEnd(testModules, unhandledErrors, reason) {
    const file = process.env.PORTICO_TALLY_FILE;
    if (!file) return;
    const tally = {
      reason,
      modules: testModules.map(describeModule),
      unhandled: unhandledErrors.map(message),
    };
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify(tally, null, 2));
  }
}
