// Issue 19: the Slurm executor on the throwaway test cluster (scripts/slurm-cluster.mjs).
// Dispatch -> running and cancel -> ended through the gateway, each beside the same step done with
// bare Slurm commands in this run (sbatch --wrap, scancel, squeue polled every 20 ms); then the cost
// of status polling with 500 live runs: Slurm commands per second (from /metrics) and gateway CPU.
import { spawnSync } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { startSlurmCluster } from '../scripts/slurm-cluster.mjs';
import { demoProject, startGateway, summarize } from './lib.mjs';

const SAMPLES = 5;
const LIVE_RUNS = 500;
const WINDOW_MS = 10_000;
const POLL_MS = 20;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function json(url, method = 'GET', body) {
  const res = await fetch(url, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body && JSON.stringify(body) });
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? null : res.json();
}

/** Polls until `check` holds, at most `timeoutMs`; returns the elapsed ms. */
async function until(check, timeoutMs = 120_000) {
  const t0 = performance.now();
  while (!(await check())) {
    if (performance.now() - t0 > timeoutMs) throw new Error('bench: a step did not finish in time');
    await sleep(POLL_MS);
  }
  return performance.now() - t0;
}

/** Seconds of CPU (user + system) a process used so far. */
async function cpuSeconds(pid) {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

/** The gateway's scheduler command counters from /metrics. */
async function schedulerCommands(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const counts = {};
  for (const m of text.matchAll(/^portico_scheduler_commands_total\{command="(\w+)"\} (\d+)/gm)) counts[m[1]] = Number(m[2]);
  return counts;
}

export async function slurmBench() {
  console.log('\nSlurm executor (issue 19): on the throwaway test cluster, beside bare Slurm commands');
  const rows = [];
  const cluster = await startSlurmCluster();
  const env = { ...process.env, ...cluster.env };
  const slurm = (...args) => {
    const res = spawnSync(args[0], args.slice(1), { env, encoding: 'utf8' });
    if (res.status !== 0) throw new Error(`${args.join(' ')}: ${res.stderr}`);
    return res.stdout.trim();
  };
  const jobState = (id) => spawnSync('squeue', ['--noheader', '--states=all', '--format=%T', `--jobs=${id}`], { env, encoding: 'utf8' }).stdout.trim();
  const cpus = Number(slurm('sinfo', '--noheader', '--format=%c'));
  const project = await demoProject();
  const savedConf = process.env.SLURM_CONF;
  process.env.SLURM_CONF = cluster.env.SLURM_CONF; // the gateway process inherits it
  let gw;
  try {
    // Floors: the same steps with bare Slurm commands.
    const submitFloor = [];
    const cancelFloor = [];
    for (let i = 0; i < SAMPLES; i++) {
      const t0 = performance.now();
      const id = slurm('sbatch', '--parsable', '--output=/dev/null', '--wrap', 'true').split(';')[0];
      await until(() => ['RUNNING', 'COMPLETING', 'COMPLETED', ''].includes(jobState(id)));
      submitFloor.push(performance.now() - t0);
      const long = slurm('sbatch', '--parsable', '--output=/dev/null', '--wrap', 'sleep 120').split(';')[0];
      await until(() => jobState(long) === 'RUNNING');
      const t1 = performance.now();
      slurm('scancel', long);
      await until(() => ['CANCELLED', ''].includes(jobState(long)));
      cancelFloor.push(performance.now() - t1);
    }
    const floorRun = summarize(submitFloor).p50;
    const floorCancel = summarize(cancelFloor).p50;

    gw = await startGateway(project.dir, ['--executor', 'slurm', '--log-level', 'warn']);
    const toRunning = [];
    const toEnded = [];
    for (let i = 0; i < SAMPLES; i++) {
      const t0 = performance.now();
      const run = await json(`${gw.url}/v1/executions`, 'POST', { interfaces: [{ target: 'trainer', version: [{ epochs: 1, delay: 120 }, `fail_at=${100 + i}`] }] });
      await until(async () => (await json(`${gw.url}/v1/executions/${run.uuid}`)).status === 'running');
      toRunning.push(performance.now() - t0);
      const t1 = performance.now();
      await json(`${gw.url}/v1/executions/${run.uuid}/cancel`, 'POST');
      await until(async () => (await json(`${gw.url}/v1/executions/${run.uuid}`)).status === 'interrupted');
      toEnded.push(performance.now() - t1);
    }
    rows.push(
      { name: 'sbatch --wrap true -> started, squeue every 20 ms (floor)', value: floorRun, unit: ' ms' },
      { name: 'dispatch -> running p50 (Python start, 1 s queue snapshot)', value: summarize(toRunning).p50, unit: ' ms', floor: floorRun },
      { name: 'scancel of a running job -> ended (floor)', value: floorCancel, unit: ' ms' },
      { name: 'cancel -> interrupted p50 (marker; no scancel needed)', value: summarize(toEnded).p50, unit: ' ms', floor: floorCancel },
    );

    // 500 live runs: one blocker holds every CPU, the rest stay queued (pending, followed).
    await json(`${gw.url}/v1/executions`, 'POST', { interfaces: [{ target: 'trainer', version: [{ epochs: 1, delay: 600 }] }], resources: { cpus } });
    const t0 = performance.now();
    const uuids = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < LIVE_RUNS) {
          next++;
          uuids.push((await json(`${gw.url}/v1/executions`, 'POST', { interfaces: [{ target: 'trainer', version: [{ epochs: 1 }] }] })).uuid);
        }
      }),
    );
    const dispatchRate = LIVE_RUNS / ((performance.now() - t0) / 1000);

    // Idle: nobody asks, so nothing is polled.
    let before = await schedulerCommands(gw.url);
    let cpu0 = await cpuSeconds(gw.pid);
    await sleep(WINDOW_MS / 2);
    let after = await schedulerCommands(gw.url);
    const idleCommands = ((after.squeue ?? 0) + (after.sacct ?? 0) - (before.squeue ?? 0) - (before.sacct ?? 0)) / (WINDOW_MS / 2000);

    // Busy: 8 clients reading single runs and 1 listing all of them, without pause.
    before = after;
    cpu0 = await cpuSeconds(gw.pid);
    const start = performance.now();
    let requests = 0;
    const stopAt = start + WINDOW_MS;
    await Promise.all([
      ...Array.from({ length: 8 }, async (_, k) => {
        for (let i = k; performance.now() < stopAt; i += 8) {
          await json(`${gw.url}/v1/executions/${uuids[i % uuids.length]}`);
          requests++;
        }
      }),
      (async () => {
        while (performance.now() < stopAt) {
          const listed = await json(`${gw.url}/v1/executions?limit=1000`);
          if (listed.length < LIVE_RUNS) throw new Error(`bench: listed ${listed.length} runs`);
          requests++;
        }
      })(),
    ]);
    const seconds = (performance.now() - start) / 1000;
    after = await schedulerCommands(gw.url);
    const cpu = (await cpuSeconds(gw.pid)) - cpu0;
    const squeues = ((after.squeue ?? 0) - (before.squeue ?? 0)) / seconds;
    const saccts = ((after.sacct ?? 0) - (before.sacct ?? 0)) / seconds;
    rows.push(
      { name: `dispatches/s into the queue (${LIVE_RUNS}, 16 concurrent; one sbatch each)`, value: dispatchRate, unit: '/s' },
      { name: `Slurm status commands/s, ${LIVE_RUNS} live runs, no client`, value: idleCommands, unit: '/s', target: 0 },
      { name: `status requests/s served, ${LIVE_RUNS} live runs (8 get + 1 list loop)`, value: requests / seconds, unit: '/s' },
      { name: 'squeue commands/s meanwhile (one per snapshot, all runs)', value: squeues, unit: '/s', target: 1.5 },
      { name: 'sacct commands/s meanwhile (no accounting here)', value: saccts, unit: '/s' },
      { name: 'gateway CPU meanwhile (of one core)', value: (100 * cpu) / seconds, unit: ' %' },
    );
  } finally {
    if (savedConf === undefined) delete process.env.SLURM_CONF;
    else process.env.SLURM_CONF = savedConf;
    await gw?.stop();
    await cluster.stop();
    // Runs scancelled a moment ago may still be writing their last files: retry the removal.
    await rm(project.dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 300 });
  }
  return rows;
}

// `node bench/slurm.mjs`: this part alone.
if (process.argv[1] && new URL(import.meta.url).pathname === process.argv[1]) {
  const { report } = await import('./lib.mjs');
  report(await slurmBench());
}
