/**
 * The Slurm executor (`portico serve --executor slurm`): each run is a batch job submitted with
 * sbatch, running `python -m portico.run <run dir>` on a compute node. The run directory must be on
 * storage the nodes share: the job writes its status files and output.log there as a local run
 * does, and the gateway records the job id in `job.json`. Queue states come from SlurmQueue (one
 * batched squeue for all live runs). Cancel writes the marker (done by the service) and scancels a
 * queued job at once, a running one only if it has not ended after a grace period.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { LIMITS } from '../config/constants.js';
import { PorticoError } from '../errors.js';
import { RUN_FILES } from '../store/run-folder.js';
import type { RunStore } from '../store/runs.js';
import type { EngineView, Executor, RunToStart } from './executor.js';
import { runEnvironment } from './local.js';
import { sbatchLiteralPath, sbatchResourceArgs, type SlurmDefaults } from './sbatch-options.js';
import { slurmCommand, SlurmQueue, type SlurmCommand } from './slurm-queue.js';

export interface SlurmOptions extends SlurmDefaults {
  /** Environment of the Slurm commands (SLURM_CONF, PATH); default: the gateway's. */
  env?: NodeJS.ProcessEnv | undefined;
  /** How old a queue snapshot may be (ms). */
  pollMs?: number | undefined;
  /** How long a cancelled running job may take to end by itself before scancel (ms). */
  cancelGraceMs?: number | undefined;
}

/**
 * The batch script: fixed text, nothing of a request in it. The interpreter comes from the
 * environment sbatch exports (PORTICO_RUN_PYTHON), the run directory is the script's argument.
 */
export const JOB_SCRIPT = `#!/bin/sh
# Written by Portico: one execution as a Slurm batch job. Usage: sbatch job.sh <run dir>
exec "$PORTICO_RUN_PYTHON" -m portico.run "$1"
`;

export class SlurmExecutor implements Executor {
  readonly name = 'slurm' as const;
  readonly queue: SlurmQueue;
  private readonly run: SlurmCommand;
  private readonly env: NodeJS.ProcessEnv;
  /** Job ids by run directory (job.json is read until it is there, then once: another gateway may be submitting the run). */
  private readonly jobs = new Map<string, string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly cancelGraceMs: number;

  constructor(
    private readonly options: SlurmOptions,
    private readonly log: (line: string) => void,
  ) {
    this.env = options.env ?? process.env;
    this.run = slurmCommand(this.env, LIMITS.slurmCommandTimeoutMs);
    this.queue = new SlurmQueue(this.run, options.pollMs ?? LIMITS.slurmPollMs, log);
    this.cancelGraceMs = options.cancelGraceMs ?? LIMITS.slurmCancelGraceMs;
  }

  async start({ uuid, runs, project, python, resources }: RunToStart): Promise<void> {
    const dir = runs.dir(uuid);
    const script = path.join(dir, RUN_FILES.job_script);
    await writeFile(script, JOB_SCRIPT, { mode: 0o755 });
    const args = [
      '--parsable',
      `--job-name=portico-${uuid}`,
      `--chdir=${project}`,
      `--output=${sbatchLiteralPath(path.join(dir, RUN_FILES.output))}`,
      '--open-mode=append',
      '--export=ALL',
      ...sbatchResourceArgs(resources, this.options),
      script,
      dir,
    ];
    this.queue.stats.commands.sbatch = (this.queue.stats.commands.sbatch ?? 0) + 1;
    const res = await slurmCommand({ ...runEnvironment(this.env), PORTICO_RUN_PYTHON: python }, LIMITS.slurmCommandTimeoutMs)('sbatch', args);
    // --parsable prints "<id>" or "<id>;<cluster>".
    const id = res.stdout.trim().split(';')[0] ?? '';
    if (res.code !== 0 || !/^\d+$/.test(id)) {
      const message = res.stderr.trim().replace(/^sbatch: error: /gm, '') || `sbatch exited with ${res.code}`;
      const unreachable = res.code === 127 || /Unable to contact slurm controller|Socket timed out|Connection refused|Could not establish a configuration source/i.test(message);
      throw new PorticoError(unreachable ? 'scheduler_unavailable' : 'job_refused', `Slurm did not take the run: ${message}`);
    }
    await runs.recordJob(uuid, { engine: 'slurm', id, submitted_at: new Date().toISOString() });
    this.jobs.set(dir, id);
  }

  private async jobId(runs: RunStore, uuid: string): Promise<string | null> {
    const dir = runs.dir(uuid);
    const known = this.jobs.get(dir);
    if (known !== undefined) return known;
    const id = (await runs.job(uuid))?.id ?? null;
    if (id !== null) this.jobs.set(dir, id);
    return id;
  }

  async observe(runs: RunStore, uuid: string): Promise<EngineView | undefined> {
    const id = await this.jobId(runs, uuid);
    if (id === null) return undefined;
    const { phase, state, reason } = await this.queue.state(id);
    return { kind: 'job', id, phase, state, reason };
  }

  async cancel(runs: RunStore, uuid: string): Promise<void> {
    const id = await this.jobId(runs, uuid);
    if (id === null) return;
    const { phase } = await this.queue.state(id);
    if (phase === 'queued') return this.scancel(id);
    if (phase !== 'running') return;
    // The marker interrupts a running run within a second; scancel only one that ignores it.
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void (async () => {
        if (await runs.hasEnded(uuid)) return;
        if ((await this.queue.state(id)).phase === 'ended') return;
        this.log(`execution ${uuid}: still running ${this.cancelGraceMs / 1000} s after cancel; scancel ${id}`);
        await this.scancel(id);
      })().catch((err) => this.log(`execution ${uuid}: cancel: ${err}`));
    }, this.cancelGraceMs);
    timer.unref();
    this.timers.add(timer);
  }

  private async scancel(id: string): Promise<void> {
    this.queue.stats.commands.scancel = (this.queue.stats.commands.scancel ?? 0) + 1;
    const res = await this.run('scancel', [id]);
    if (res.code !== 0) this.log(`scancel ${id} failed (${res.code}): ${res.stderr.trim()}`);
  }

  get commands(): Readonly<Record<string, number>> {
    return this.queue.stats.commands;
  }

  forget(runs: RunStore, uuid: string): void {
    const dir = runs.dir(uuid);
    const id = this.jobs.get(dir);
    if (id) this.queue.forget(id);
  }

  close(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}
