// Issue 44: live-instance workers placed by Slurm (`portico serve --workers slurm`) on the throwaway
// test cluster (scripts/slurm-cluster.mjs), beside a local worker in the same run: time from the
// first call of a new instance to its answer (allocation + srun + Python start + import + connect
// back) beside a bare `srun true`; then WebSocket call p50, pipelined calls/s and gateway CPU per
// call through each (the demo streamer's echo).
import { spawnSync } from 'node:child_process';
import { startSlurmCluster } from '../scripts/slurm-cluster.mjs';
import { wsCallLoop, wsCallPipelined } from './calls.mjs';
import { cpuSeconds, demoProject, startGateway, summarize } from './lib.mjs';

const SAMPLES = 5;

async function firstCall(url) {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/interfaces/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ target: 'streamer', method: 'echo', args: [1] }) });
  if (res.status !== 200) throw new Error(`first call answered ${res.status}: ${await res.text()}`);
  return performance.now() - t0;
}

/** p50 (µs) of closed-loop calls, pipelined calls/s and gateway CPU µs per pipelined call. */
async function throughGateway(gw) {
  const loop = await wsCallLoop(gw.url, { perConnection: 1000, warmup: 200 });
  const cpu0 = await cpuSeconds(gw.pid);
  const piped = await wsCallPipelined(gw.url, { connections: 4, total: 20_000, inFlight: 32 });
  const cpu = (await cpuSeconds(gw.pid)) - cpu0;
  return { p50: loop.p50, rate: piped.rate, cpuPerCallUs: (cpu * 1e6) / piped.calls };
}

export async function slurmWorkersBench() {
  console.log('\nWorkers placed by Slurm (issue 44): on the throwaway test cluster, beside a local worker and bare srun');
  const cluster = await startSlurmCluster();
  const env = { ...process.env, ...cluster.env };
  const [localProject, slurmProject] = await Promise.all([demoProject(), demoProject()]);
  const gateways = [];
  try {
    const srunTrue = [];
    for (let i = 0; i < SAMPLES; i++) {
      const t0 = performance.now();
      const res = spawnSync('srun', ['true'], { env });
      if (res.status !== 0) throw new Error(`srun true: ${res.stderr}`);
      srunTrue.push(performance.now() - t0);
    }
    // A new instance's first call, each on a gateway started afresh (its worker does not exist yet).
    const first = { local: [], slurm: [] };
    for (let i = 0; i < SAMPLES; i++) {
      for (const [kind, project, args] of [
        ['local', localProject, []],
        ['slurm', slurmProject, ['--workers', 'slurm', '--worker-connect', '127.0.0.1']],
      ]) {
        const gw = await startGateway(project.dir, ['--log-level', 'warn', ...args], { env: cluster.env });
        first[kind].push(await firstCall(gw.url));
        await gw.stop();
      }
    }
    const local = await startGateway(localProject.dir, ['--log-level', 'warn']);
    gateways.push(local);
    const slurm = await startGateway(slurmProject.dir, ['--log-level', 'warn', '--workers', 'slurm', '--worker-connect', '127.0.0.1'], { env: cluster.env });
    gateways.push(slurm);
    await firstCall(local.url);
    await firstCall(slurm.url);
    const viaLocal = await throughGateway(local);
    const viaSlurm = await throughGateway(slurm);
    const floor = summarize(srunTrue).p50;
    return [
      { name: 'srun true (floor: allocation + step, no Python)', value: floor, unit: ' ms' },
      { name: 'first call of a new instance, local worker p50 (start + import)', value: summarize(first.local).p50, unit: ' ms' },
      { name: 'first call of a new instance, Slurm-placed worker p50 (allocation + srun + start + import + connect back)', value: summarize(first.slurm).p50, unit: ' ms', floor },
      { name: 'WebSocket call p50, local worker', value: viaLocal.p50, unit: ' µs' },
      { name: 'WebSocket call p50, Slurm-placed worker (TCP connect-back)', value: viaSlurm.p50, unit: ' µs', floor: viaLocal.p50 },
      { name: 'pipelined calls/s, local worker (4 sockets × 32 in flight)', value: viaLocal.rate, unit: '/s', higherIsBetter: true },
      { name: 'pipelined calls/s, Slurm-placed worker', value: viaSlurm.rate, unit: '/s', floor: viaLocal.rate, higherIsBetter: true },
      { name: 'gateway CPU per pipelined call, local worker', value: viaLocal.cpuPerCallUs, unit: ' µs' },
      { name: 'gateway CPU per pipelined call, Slurm-placed worker', value: viaSlurm.cpuPerCallUs, unit: ' µs', floor: viaLocal.cpuPerCallUs },
    ];
  } finally {
    for (const gw of gateways) await gw.stop();
    await cluster.stop();
    await Promise.all([localProject.remove(), slurmProject.remove()]);
  }
}

// `node bench/slurm-workers.mjs`: this part alone.
if (process.argv[1] && new URL(import.meta.url).pathname === process.argv[1]) {
  const { report } = await import('./lib.mjs');
  report(await slurmWorkersBench());
}
