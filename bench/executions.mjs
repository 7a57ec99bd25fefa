// Issue 4: dispatch-to-first-output latency, output-window latency at the end of a 1 GiB log,
// and cancel-to-interrupted latency, through the real gateway and real run processes.
import { spawnSync } from 'node:child_process';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { summarize } from './lib.mjs';

async function json(url, method = 'GET', body) {
  const res = await fetch(url, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body && JSON.stringify(body) });
  return res.status === 204 ? null : res.json();
}

/** Wall time of a bare interpreter start: the floor under any run. */
function pythonStartMs(runs = 10) {
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    spawnSync('python3', ['-c', 'pass']);
    samples.push(performance.now() - t0);
  }
  return summarize(samples).p50;
}

export async function executionsBench(url, project) {
  const rows = [];
  const floor = pythonStartMs();
  rows.push({ name: 'python3 -c pass (floor)', value: floor, unit: ' ms' });

  const firstOutput = [];
  for (let i = 0; i < 10; i++) {
    const t0 = performance.now();
    const run = await json(`${url}/v1/executions`, 'POST', { interfaces: [{ target: 'trainer', version: [{ epochs: 1, delay: 0 }, `epochs=${1 + (i % 2)}`] }] });
    for (;;) {
      const out = await json(`${url}/v1/executions/${run.uuid}/output?offset=0&limit=64`);
      if (out.size > 0) break;
      await new Promise((r) => setTimeout(r, 2));
    }
    firstOutput.push(performance.now() - t0);
  }
  rows.push({ name: 'dispatch -> first output p50', value: summarize(firstOutput).p50, unit: ' ms', floor });

  // A finished run whose output.log is then grown to 1 GiB (sparse: the window reads real bytes at the end).
  const run = await json(`${url}/v1/executions`, 'POST', { interfaces: [{ target: 'trainer', version: [{ epochs: 1, delay: 0.01 }] }] });
  for (;;) {
    const info = await json(`${url}/v1/executions/${run.uuid}`);
    if (info.status === 'finished') break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const log = path.join(project, '.portico/executions', run.uuid, 'output.log');
  const handle = await open(log, 'a');
  await handle.truncate(1024 ** 3 - 65536);
  await handle.write(Buffer.alloc(65536, 'y'), 0, 65536, 1024 ** 3 - 65536);
  await handle.close();
  const windows = [];
  for (let i = 0; i < 50; i++) {
    const t0 = performance.now();
    const out = await json(`${url}/v1/executions/${run.uuid}/output`);
    windows.push(performance.now() - t0);
    if (out.size !== 1024 ** 3) throw new Error(`unexpected size ${out.size}`);
  }
  rows.push({ name: 'output window p50 at the end of a 1 GiB log', value: summarize(windows).p50, unit: ' ms' });

  const cancels = [];
  for (let i = 0; i < 5; i++) {
    const long = await json(`${url}/v1/executions`, 'POST', { interfaces: [{ target: 'trainer', version: [{ epochs: 1, delay: 60 }, `fail_at=${100 + i}`] }] });
    for (;;) {
      const info = await json(`${url}/v1/executions/${long.uuid}`);
      if (info.status === 'running') break;
      await new Promise((r) => setTimeout(r, 5));
    }
    const t0 = performance.now();
    await json(`${url}/v1/executions/${long.uuid}/cancel`, 'POST');
    for (;;) {
      const info = await json(`${url}/v1/executions/${long.uuid}`);
      if (info.status === 'interrupted') break;
      await new Promise((r) => setTimeout(r, 2));
    }
    cancels.push(performance.now() - t0);
  }
  rows.push({ name: 'cancel -> interrupted p50 (watcher polls every 100 ms)', value: summarize(cancels).p50, unit: ' ms', target: 1000 });
  return rows;
}
