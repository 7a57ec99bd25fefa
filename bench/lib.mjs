// Shared bench helpers: percentiles, formatting, spawning the gateway, bounded loops.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Summary of latencies in microseconds. */
export function summarize(samplesUs) {
  const sorted = [...samplesUs].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), n: sorted.length };
}

export const us = (ns) => Number(ns) / 1000;
export const fmt = (v, unit = '') => (Number.isFinite(v) ? `${v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toFixed(3)}${unit}` : 'n/a');

/** Every row `report` printed, with the section it came under (for `npm run bench -- --json`). */
export const recorded = [];
let currentSection = '';

/** Prints a section heading; rows reported after it are recorded under `name`. */
export function section(name, heading) {
  currentSection = name;
  console.log(`\n${heading}`);
}

/** The median of `runs` runs of `measure` (each a number, or an object whose numeric fields are taken one by one). */
export async function medianOf(runs, measure) {
  const results = [];
  for (let i = 0; i < runs; i++) results.push(await measure(i));
  const mid = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  if (typeof results[0] === 'number') return mid(results);
  return Object.fromEntries(Object.keys(results[0]).map((k) => [k, typeof results[0][k] === 'number' ? mid(results.map((r) => r[k])) : results[0][k]]));
}

/** CPU seconds (user + system) a process has used so far (Linux /proc). */
export async function cpuSeconds(pid) {
  const { readFile } = await import('node:fs/promises');
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

/**
 * Prints one figure beside its floor and the ratio; `target` is the ratio to meet. A `baseline`
 * ({ name, value }) is another way to get the same answer, printed beside the figure with the
 * speed-up; the target then stays absolute.
 */
export function report(rows) {
  const width = Math.max(...rows.map((r) => r.name.length));
  for (const r of rows) {
    // A target is a ratio to the floor when there is a floor, else an absolute bound.
    const ratio = r.floor ? r.value / r.floor : undefined;
    const absolute = ratio === undefined || r.higherIsBetter;
    const met = r.target === undefined ? undefined : r.higherIsBetter ? r.value >= r.target : absolute ? r.value <= r.target : ratio <= r.target;
    recorded.push({ section: currentSection, ...r, met });
    const verdict = met === undefined ? '' : met ? '  ok' : '  MISSED';
    const ratioText = ratio === undefined ? '' : `  (${ratio.toFixed(2)}x floor${r.target !== undefined && !absolute ? `, target <= ${r.target}x` : ''})`;
    const targetText = r.target !== undefined && absolute ? `  (target ${r.higherIsBetter ? '>=' : '<='} ${fmt(r.target, r.unit)})` : '';
    const baselineText = r.baseline ? `   ${r.baseline.name} ${fmt(r.baseline.value, r.unit)} (${fmt(r.baseline.value / r.value, 'x')} faster)` : '';
    console.log(`  ${r.name.padEnd(width)}  ${fmt(r.value, r.unit).padStart(10)}${r.floor ? `   floor ${fmt(r.floor, r.unit)}` : ''}${baselineText}${ratioText}${targetText}${verdict}`);
  }
}

/** A copy of the demo project in a temp dir. */
export async function demoProject() {
  const dir = await mkdtemp(path.join(tmpdir(), 'portico-bench-'));
  await cp(path.join(ROOT, 'examples/demo'), dir, { recursive: true, filter: (src) => !src.includes('.portico') && !src.includes('__pycache__') });
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** `fn(dir)` on a fresh copy of the demo project, removed afterwards (a section that changes the project). */
export async function onDemoCopy(fn) {
  const copy = await demoProject();
  try {
    return await fn(copy.dir);
  } finally {
    await copy.remove();
  }
}

/**
 * Stops `child` when the bench process ends, however it ends (a section that throws, Ctrl-C), so a
 * failed run never leaves a gateway running without a parent.
 */
export function stopOnExit(child) {
  const stop = () => child.kill('SIGKILL');
  process.once('exit', stop);
  child.once('exit', () => process.off('exit', stop));
}
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130));

/**
 * Starts the built gateway as its own process; resolves with its URL. `gw.measure(work)` runs
 * `work` and returns its result with the CPU seconds of the gateway and of its workers, and the
 * gateway's allocated bytes, meanwhile
 * (bench/alloc-probe.mjs is loaded into it for the latter). `env` adds to its environment.
 */
export function startGateway(project, extraArgs = [], { env = {} } = {}) {
  const allocFile = path.join(tmpdir(), `portico-bench-alloc-${process.pid}-${Math.random().toString(36).slice(2)}`);
  const nodeArgs = ['--import', path.join(ROOT, 'bench/alloc-probe.mjs'), ...(process.env.GW_NODE_ARGS ? process.env.GW_NODE_ARGS.split(' ') : [])];
  // Its log (an access line per request) goes to a file: printed, it would bury the figures, and
  // a pipe read by this busy process would slow the gateway's synchronous log writes. Its last
  // lines are printed if it dies.
  const logFile = path.join(tmpdir(), `portico-bench-gateway-${process.pid}-${Math.random().toString(36).slice(2)}.log`);
  const logFd = openSync(logFile, 'w');
  const child = spawn(process.execPath, [...nodeArgs, path.join(ROOT, 'packages/server/bin/portico.js'), 'serve', project, '--port', '0', ...extraArgs], {
    stdio: ['ignore', 'pipe', logFd],
    env: { ...process.env, ...env, PORTICO_BENCH_ALLOC_FILE: allocFile },
  });
  stopOnExit(child);
  closeSync(logFd);
  child.once('exit', (code, signal) => {
    if (code && signal !== 'SIGTERM') console.error(`gateway exited with ${code}; its last log lines:\n${readFileSync(logFile, 'utf8').split('\n').slice(-40).join('\n')}`);
    rmSync(logFile, { force: true });
  });
  // The gateway's children are its Python workers (started before a measured phase by its warm-up).
  const workersCpu = async () => {
    const pids = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(' ').filter(Boolean);
    let total = 0;
    for (const pid of pids) total += await cpuSeconds(pid).catch(() => 0);
    return total;
  };
  const measure = async (work) => {
    const { readFile, rm: remove } = await import('node:fs/promises');
    await remove(allocFile, { force: true });
    const cpu0 = await cpuSeconds(child.pid);
    const workers0 = await workersCpu();
    child.kill('SIGUSR2');
    const result = await work();
    child.kill('SIGUSR2');
    const cpu = (await cpuSeconds(child.pid)) - cpu0;
    const workerCpu = (await workersCpu()) - workers0;
    let allocated;
    for (let i = 0; i < 200 && allocated === undefined; i++) {
      allocated = await readFile(allocFile, 'utf8').then(Number, () => undefined);
      if (allocated === undefined) await new Promise((r) => setTimeout(r, 10));
    }
    await remove(allocFile, { force: true });
    return { result, cpu, workerCpu, allocated };
  };
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /API\s+(http:\/\/\S+)\/v1/.exec(out);
      if (m) resolve({ url: m[1], child, pid: child.pid, measure, stop: () => new Promise((r) => { if (child.exitCode !== null) return r(); child.once('exit', r); child.kill('SIGTERM'); }) });
    });
    child.once('exit', (code) => reject(new Error(`gateway exited (${code}): ${out}`)));
  });
}

/** Resident set size of a process, in MB (Linux /proc). */
export async function rssMb(pid) {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024;
}

/**
 * REST creates of the demo `counter` with new configs (`start` from `first` on), `inFlight` at a
 * time through `post` (a jsonClient's); resolves with the creates per second.
 */
export async function createRate(post, { creates, inFlight, first }) {
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < creates) {
        const i = next++;
        await post('/v1/interfaces', { target: 'counter', version: [{ start: first + i }] });
      }
    }),
  );
  return creates / (Number(process.hrtime.bigint() - t0) / 1e9);
}

/** CPU time (user + system) the processes `pids` used so far, in ms (Linux /proc; a process gone counts 0). */
export async function cpuMs(pids) {
  const { readFile } = await import('node:fs/promises');
  let ticks = 0;
  for (const pid of pids) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
    if (!stat) continue;
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
  }
  return ticks * 10; // USER_HZ is 100 on every Linux Node runs on
}

/**
 * A JSON POST client over one http.Agent (`keepAlive` and `sockets` as http.Agent takes them):
 * `post(pathname, body)` and `get(pathname)` resolve with the parsed 200 body and reject on any other status.
 */
export function jsonClient(url, { sockets = 16, keepAlive = true } = {}) {
  const agent = new http.Agent({ keepAlive, maxSockets: sockets });
  const post = (pathname, body) => send('POST', pathname, body);
  /** GET, same answers. */
  const get = (pathname) => send('GET', pathname);
  const send = (method, pathname, body) =>
    new Promise((resolve, reject) => {
      const text = body === undefined ? '' : JSON.stringify(body);
      const headers = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) };
      const req = http.request(`${url}${pathname}`, { method, agent, headers }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(Buffer.concat(chunks))) : reject(new Error(`${pathname} answered ${res.statusCode}: ${Buffer.concat(chunks)}`))));
      });
      req.on('error', reject);
      req.end(text);
    });
  return { post, get, close: () => agent.destroy() };
}
