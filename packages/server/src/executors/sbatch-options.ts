/**
 * DispatchRequest `resources` → sbatch options. The contract (contract/executions.ts) already
 * refused unknown keys and bad values; this builds one `--name=value` argv item per key, so that
 * nothing a client sends can become a second option, a shell word or a path.
 */
import type { Resources } from '../contract/executions.js';

export interface SlurmDefaults {
  /** The gateway's --slurm-partition (a dispatch's `partition` wins). */
  partition?: string | undefined;
  /** The gateway's --slurm-account (a dispatch's `account` wins). */
  account?: string | undefined;
}

/** The sbatch option of each resource key, in a fixed order. */
const OPTIONS: ReadonlyArray<[keyof Resources, string]> = [
  ['partition', '--partition'],
  ['account', '--account'],
  ['qos', '--qos'],
  ['time_limit', '--time'],
  ['cpus', '--cpus-per-task'],
  ['memory', '--mem'],
  ['gpus', '--gpus'],
];

/**
 * The resource options of one job, e.g. `{cpus: 2, time_limit: 30}` → `['--time=30', '--cpus-per-task=2']`.
 * Defaults of the gateway fill partition and account when the dispatch names none.
 */
export function sbatchResourceArgs(resources: Resources = {}, defaults: SlurmDefaults = {}): string[] {
  const merged: Resources = { ...resources };
  if (merged.partition === undefined && defaults.partition) merged.partition = defaults.partition;
  if (merged.account === undefined && defaults.account) merged.account = defaults.account;
  const args: string[] = [];
  for (const [key, flag] of OPTIONS) {
    const value = merged[key];
    if (value === undefined) continue;
    args.push(`${flag}=${value}`);
  }
  return args;
}

/** `%` starts a filename pattern in sbatch's --output: a path is given literally by doubling it. */
export function sbatchLiteralPath(file: string): string {
  return file.replaceAll('%', '%%');
}
