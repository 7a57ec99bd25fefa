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

/**
 * The parts of a REST request in the gateway (issue 45), each a test of a frame: a sample counts
 * toward the part of the frame nearest its leaf that matches one, so that the framework's code
 * calling the gateway's (koa-compose running a middleware) counts as the gateway's, and a system
 * call made for the access log counts as the access log's.
 */
export const REST_PARTS = [
  ['access log + HTTP metrics', (f) => /access-log\.js|\/pino\/|sonic-boom|ops\/metrics\.js|ops\/series\.js|ops\/logger\.js|prom-client/.test(f.url)],
  ['auth', (f) => /auth\/credentials\.js/.test(f.url) || (f.functionName === 'authenticate' && /http\/app\.js/.test(f.url))],
  ['project binding', (f) => /http\/bind\.js|service\/projects\.js/.test(f.url) || (f.functionName === 'bind' && /service\/gateway\.js/.test(f.url))],
  ['validation (zod)', (f) => /\/zod\//.test(f.url) || (f.functionName === 'parse' && /http\/route\.js/.test(f.url))],
  ['body read + JSON.parse', (f) => /http\/body\.js|json-depth\.js/.test(f.url)],
  ['create/attach (record lookup, resolutions, store, record files)', (f) => /\/store\/|remotes\.js|resolutions\.js|kernel\/pool\.js|canonicalize|service\/executions\.js/.test(f.url) || (/service\/interfaces\.js/.test(f.url) && /create|note|publicInfo|describe/.test(f.functionName))],
  ['the call and its worker frame', (f) => /kernel\/(worker|bridge|frames|display)\.js/.test(f.url) || (/service\/interfaces\.js/.test(f.url) && /call|outcome|onSettled/.test(f.functionName))],
  ['route handler + answer JSON', (f) => /routes\/interfaces\.js/.test(f.url) || ['handleRoute', 'serializeJson'].includes(f.functionName)],
  ['other gateway middleware (errors, origin, CORS, stopping, exact routes)', (f) => /http\/(errors|cors|route|app|forwarded)\.js|dist\/server\.js/.test(f.url)],
  ['Koa + @koa/router (their code and what it calls: the response write)', (f) => /node_modules\/(koa|@koa|koa-compose|delegates|on-finished|mime-types|statuses|vary|type-is|content-type|http-errors|parseurl|encodeurl|fresh|accepts)\//.test(f.url) || /koa-server\.mjs/.test(f.url)],
];

/** Busy µs of `profile` in `window` by part (`parts`: [name, test of a callFrame]); the rest is Node's own (HTTP parsing, streams, the event loop) or GC. */
export function partsOf(profile, parts, window = undefined) {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const found = new Map();
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    const t = profile.timeDeltas[i + 1] ?? 0;
    if (window && (at < window.from || at > window.to)) continue;
    const leaf = nodes.get(profile.samples[i]);
    const name = leaf.callFrame.functionName;
    if (name === '(idle)') continue;
    let part = name === '(garbage collector)' ? 'garbage collector' : undefined;
    for (let id = leaf.id; id !== undefined && !part; id = parent.get(id)) {
      const frame = nodes.get(id).callFrame;
      part = parts.find(([, test]) => test(frame))?.[0];
    }
    part ??= 'Node (HTTP parsing, sockets, streams, event loop, system calls)';
    found.set(part, (found.get(part) ?? 0) + t);
  }
  return [...found].sort((a, b) => b[1] - a[1]);
}
