/**
 * A widget page driving an instance whose worker Slurm placed (issue 44), in Debian Chromium: the
 * demo counter mounted with `<portico-widget>` on a gateway started with `--workers slurm`
 * against the suite's real one-node cluster. The page and a second client change the state both
 * ways through the worker in its job; then the job is cancelled from outside (`scancel`), and the
 * page hears `instance_restarted` with reason `allocation_ended`, shows the state the instance
 * came back with in a new job, and keeps working. While that new job waits behind another one, the
 * element says so with Slurm's reason, until the state is read.
 */
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embedSuite } from '../browser.js';
import { api, Client, gateway, tempProject } from '../helpers.js';
import { slurmCluster, type SlurmCluster } from '../support/slurm.js';

const E2E_TIMEOUT = 180_000;

let cluster: SlurmCluster;
let slurmEnv: NodeJS.ProcessEnv;
// Registered before the embed suite's own beforeAll, so the cluster is up when its gateway starts.
beforeAll(async () => {
  cluster = await slurmCluster();
  slurmEnv = { ...process.env, ...cluster.env };
}, 120_000);
// after* hooks run in reverse: this one after the embed suite has stopped its gateway (and its jobs).
afterAll(async () => cluster?.stop(), 60_000);

const suite = embedSuite(
  async (origin) => gateway({ project: await tempProject(), workers: 'slurm', workerConnect: '127.0.0.1', slurm: { env: slurmEnv }, allowOrigins: [origin] }),
  E2E_TIMEOUT,
);

/** Submits a job asking for every CPU of the node; its id. */
function blockNode(): string {
  const cpus = Number(spawnSync('sinfo', ['--noheader', '--format=%c'], { env: slurmEnv, encoding: 'utf8' }).stdout.trim().split('\n')[0]);
  const res = spawnSync('sbatch', ['--parsable', '--job-name=blocker', `--cpus-per-task=${cpus}`, '--output=/dev/null', '--wrap', 'sleep 600'], { env: slurmEnv, encoding: 'utf8' });
  const id = res.stdout.trim().split(';')[0]!;
  expect(id, res.stderr).toMatch(/^\d+$/);
  return id;
}

/** The job of the worker that holds live instances, as /v1/projects lists it. */
async function runningJob(): Promise<string> {
  const workers = (await api(suite.running, 'GET', '/v1/projects')).body.workers as Array<{ instances: number; placement?: { job: string; state: string } }>;
  const worker = workers.find((w) => w.instances > 0 && w.placement?.state === 'RUNNING');
  expect(worker, JSON.stringify(workers)).toBeDefined();
  return worker!.placement!.job;
}

describe('a widget page through a Slurm-placed worker', { timeout: E2E_TIMEOUT }, () => {
  it('syncs both ways with the worker in its job; after scancel it shows the restored state from a new job and keeps working', async () => {
    suite.pages['/slurm.html'] = `<!doctype html><html><body>
<script>
  window.restarts = [];
  document.addEventListener('portico-instance-restarted', (event) => window.restarts.push(event.detail));
</script>
<script type="module" src="${suite.running.url}/static/portico-widget.js"></script>
<portico-widget url="${suite.running.url}" target="counter" version='[{"start": 3}]'></portico-widget>
</body></html>`;
    const { page, errors } = await (await suite.browser()).newPage();
    await page.goto(`${suite.site.origin}/slurm.html`);
    const button = page.locator('portico-widget button.counter-button');
    await expect.poll(() => button.textContent(), { timeout: 90_000 }).toBe('count is 3');
    await page.waitForFunction(() => (document.querySelector('portico-widget') as any)?.handle?.uuid, null, { timeout: 30_000 });
    const uuid = await page.evaluate(() => (document.querySelector('portico-widget') as any).handle.uuid as string);
    const job = await runningJob();

    // The page to Python: two clicks reach the instance in the job.
    await button.click();
    await button.click();
    await expect.poll(async () => (await api(suite.running, 'POST', '/v1/interfaces/call', { target: uuid, method: 'value' })).body.payload).toBe(5);
    // Python to the page: another client sets the count, the page follows.
    const other = await Client.open(suite.running.url);
    await other.connect(uuid);
    expect((await other.request({ type: 'widget_set', changes: { count: 10 } })).type).toBe('widget_change');
    await expect.poll(() => button.textContent()).toBe('count is 10');
    other.close();

    // The state the instance will come back with is on disk, then Slurm ends the job from outside.
    const saved = path.join(suite.running.gateway.options.project, '.portico/interfaces', uuid, '.widget-state');
    await expect.poll(() => readFile(saved).then((bytes) => /"count":\s*10\b/.test(bytes.toString('latin1')), () => false), { timeout: 30_000 }).toBe(true);
    // A job that wants the whole node queues behind the worker's; once the worker's job ends it
    // runs first, so the allocation the page's re-read asks for has to wait.
    const blocker = blockNode();
    expect(spawnSync('scancel', [job], { env: slurmEnv }).status).toBe(0);

    await expect.poll(() => page.evaluate(() => (window as any).restarts.length), { timeout: 60_000 }).toBe(1);
    const [restart] = await page.evaluate(() => (window as any).restarts);
    expect(restart).toMatchObject({ uuid, reason: 'allocation_ended' });
    await expect.poll(() => page.locator('portico-widget .portico-widget-notice[role=status]').textContent(), { timeout: 10_000 }).toMatch(/lost its Slurm allocation/);

    const notice = page.locator('portico-widget .portico-widget-notice[role=status]');
    await expect.poll(() => notice.textContent(), { timeout: 60_000 }).toMatch(/waiting for the Python worker… Slurm job \d+: PENDING \((Resources|Priority)\)/);
    expect(spawnSync('scancel', [blocker], { env: slurmEnv }).status).toBe(0);
    // The page read the state again, which made the instance anew in a new job with its saved
    // state: it shows 10, the notice goes, and a click goes on from there.
    await expect.poll(() => button.textContent(), { timeout: 90_000 }).toBe('count is 10');
    await expect.poll(() => notice.count(), { timeout: 30_000 }).toBe(0);
    await button.click();
    await expect.poll(async () => (await api(suite.running, 'POST', '/v1/interfaces/call', { target: uuid, method: 'value' })).body.payload, { timeout: 90_000 }).toBe(11);
    await expect.poll(() => button.textContent(), { timeout: 30_000 }).toBe('count is 11');
    expect(await runningJob()).not.toBe(job);
    expect(errors).toEqual([]);
    await page.close();
  });
});
