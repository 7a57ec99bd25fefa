import { describe, expect, it } from 'vitest';
import { parseSacct, parseSqueue, phaseOf } from './slurm-queue.js';

describe('slurm queue parsing', () => {
  it('squeue lines: id, state, reason; states map to queued, running or ended', () => {
    const jobs = parseSqueue('12|PENDING|Priority\n13|RUNNING|None\n14|TIMEOUT|TimeLimit\n\n');
    expect(jobs.get('12')).toEqual({ phase: 'queued', state: 'PENDING', reason: 'Priority' });
    expect(jobs.get('13')).toEqual({ phase: 'running', state: 'RUNNING', reason: 'None' });
    expect(jobs.get('14')).toEqual({ phase: 'ended', state: 'TIMEOUT', reason: 'TimeLimit' });
    expect(jobs.size).toBe(3);
  });

  it('sacct lines: "CANCELLED by 0" is CANCELLED', () => {
    expect(parseSacct('7|CANCELLED by 0|None\n8|OUT_OF_MEMORY|\n').get('7')).toEqual({ phase: 'ended', state: 'CANCELLED', reason: 'None' });
    expect(parseSacct('8|OUT_OF_MEMORY|\n').get('8')).toEqual({ phase: 'ended', state: 'OUT_OF_MEMORY', reason: null });
  });

  it('every ended state Slurm has is ended, COMPLETING still runs', () => {
    for (const state of ['COMPLETED', 'CANCELLED', 'FAILED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY', 'BOOT_FAIL', 'DEADLINE', 'PREEMPTED']) expect(phaseOf(state)).toBe('ended');
    expect(phaseOf('COMPLETING')).toBe('running');
    expect(phaseOf('CONFIGURING')).toBe('running');
  });
});
