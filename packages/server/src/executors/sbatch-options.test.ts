import { describe, expect, it } from 'vitest';
import { Resources } from '../contract/executions.js';
import { sbatchLiteralPath, sbatchResourceArgs } from './sbatch-options.js';

describe('sbatch options from resources', () => {
  it('one --name=value item per key, in a fixed order', () => {
    expect(sbatchResourceArgs({ gpus: 1, cpus: 4, memory: '16G', time_limit: 90, partition: 'gpu', account: 'lab', qos: 'high' })).toEqual([
      '--partition=gpu',
      '--account=lab',
      '--qos=high',
      '--time=90',
      '--cpus-per-task=4',
      '--mem=16G',
      '--gpus=1',
    ]);
    expect(sbatchResourceArgs({})).toEqual([]);
    expect(sbatchResourceArgs()).toEqual([]);
  });

  it('the gateway defaults fill partition and account only when the dispatch names none', () => {
    expect(sbatchResourceArgs({}, { partition: 'short', account: 'lab' })).toEqual(['--partition=short', '--account=lab']);
    expect(sbatchResourceArgs({ partition: 'long' }, { partition: 'short' })).toEqual(['--partition=long']);
  });

  it('the contract refuses unknown keys and values that could become another option, a word or a path', () => {
    for (const bad of [
      { nodes: 2 },
      { partition: '--wrap=id' },
      { partition: 'a b' },
      { partition: '' },
      { account: '../etc' },
      { qos: 'x;y' },
      { memory: '1G --wrap=id' },
      { memory: '0' },
      { memory: '12Q' },
      { cpus: 0 },
      { cpus: 2.5 },
      { time_limit: 0 },
      { time_limit: '1:00' },
      { gpus: -1 },
    ]) {
      expect(Resources.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
    expect(Resources.safeParse({ partition: 'gpu-a100.x_1', memory: '512M', cpus: 8, time_limit: 1, gpus: 0 }).success).toBe(true);
  });

  it('% in a path is doubled, so sbatch takes the path literally', () => {
    expect(sbatchLiteralPath('/data/100%/run/output.log')).toBe('/data/100%%/run/output.log');
  });
});
