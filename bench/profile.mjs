// Reading a gateway's `node --cpu-prof` profile: self and inclusive time per function (bench/owners-profile.mjs, bench/rest-profile.mjs).
import path from 'node:path';

/**
 * Self time per function and the inclusive time of each function whose name matches `inclusive`
 * (`name` or `name@file.js`), over the samples taken within `window` ({ from, to }: CLOCK_MONOTONIC
 * µs, as process.hrtime.bigint() / 1000n reads it in any process on the machine) when given.
 */
export function summarizeProfile(profile, inclusive = [], window = undefined) {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map();
  const incl = new Map(inclusive.map((name) => [name, 0]));
  const label = (n) => {
    const f = n.callFrame;
    const file = f.url ? f.url.replace(/^file:\/\//, '').replace(/.*\/(node_modules|packages)\//, '$1/') : '';
    return `${f.functionName || '(anonymous)'} ${file}${file ? `:${f.lineNumber + 1}` : ''}`;
  };
  const dt = profile.timeDeltas;
  let total = 0;
  let idle = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += dt[i] ?? 0;
    const t = dt[i + 1] ?? 0;
    if (window && (at < window.from || at > window.to)) continue;
    const node = nodes.get(profile.samples[i]);
    total += t;
    if (node.callFrame.functionName === '(idle)') {
      idle += t;
      continue;
    }
    const key = label(node);
    self.set(key, (self.get(key) ?? 0) + t);
    // Inclusive: each matching name counted once per sample, wherever it is on the stack.
    const seen = new Set();
    for (let id = node.id; id !== undefined; id = parent.get(id)) {
      const frame = nodes.get(id).callFrame;
      for (const name of [frame.functionName, `${frame.functionName}@${path.basename(frame.url)}`]) {
        if (incl.has(name) && !seen.has(name)) {
          seen.add(name);
          incl.set(name, incl.get(name) + t);
        }
      }
    }
  }
  return { total, idle, self: [...self].sort((x, y) => y[1] - x[1]), inclusive: incl };
}
