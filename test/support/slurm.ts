/**
 * The Slurm cluster of a test suite: a throwaway single-node cluster on loopback
 * (scripts/slurm-cluster.mjs), or the one PORTICO_TEST_SLURM names (the path of its slurm.conf).
 * A suite that cannot get one fails in beforeAll; it is never skipped.
 */
import { existsSync } from 'node:fs';
import { startSlurmCluster } from '../../scripts/slurm-cluster.mjs';

export interface SlurmCluster {
  /** Environment of Slurm commands (SLURM_CONF). */
  env: Record<string, string>;
  /** Stops a throwaway cluster (nothing for PORTICO_TEST_SLURM's). */
  stop(): Promise<void>;
}

export async function slurmCluster(): Promise<SlurmCluster> {
  const named = process.env.PORTICO_TEST_SLURM;
  if (named) {
    if (!existsSync(named)) throw new Error(`PORTICO_TEST_SLURM=${named}: no such slurm.conf`);
    return { env: { SLURM_CONF: named }, stop: async () => undefined };
  }
  const cluster = (await startSlurmCluster({ log: (line: string) => console.log(line) })) as { env: Record<string, string>; stop: () => Promise<void> };
  return { env: cluster.env, stop: cluster.stop };
}
