import { describe, expect, it } from 'vitest';
import { jobEnded, parseConnectAddress, startFailure } from './slurm-workers.js';

describe('Slurm-placed workers: what srun and slurmstepd say', () => {
  it('a job Slurm ended is told apart by what slurmstepd prints, with its state', () => {
    expect(jobEnded('slurmstepd-vm: error: *** STEP 3.0 ON vm CANCELLED AT 2026-12-06T09:32:01 ***', 'x')).toEqual({
      id: '3',
      state: 'CANCELLED',
      message: 'Slurm ended job 3 on vm (CANCELLED): CANCELLED AT 2026-12-06T09:32:01',
    });
    expect(jobEnded('slurmstepd: error: *** JOB 12 ON gpu-07 CANCELLED AT 2026-12-06T10:00:00 DUE TO TIME LIMIT ***', 'x')).toMatchObject({ id: '12', state: 'TIMEOUT' });
    expect(jobEnded('slurmstepd: error: *** JOB 12 ON gpu-07 CANCELLED AT 2026-12-06T10:00:00 DUE TO PREEMPTION ***', 'x')).toMatchObject({ state: 'PREEMPTED' });
    expect(jobEnded('slurmstepd: error: *** JOB 12 ON gpu-07 CANCELLED AT 2026-12-06T10:00:00 DUE TO NODE FAILURE ***', 'x')).toMatchObject({ state: 'NODE_FAIL' });
    expect(jobEnded('srun: Job has been cancelled', 'portico-worker-a-1')).toEqual({ id: null, state: 'CANCELLED', message: 'Slurm ended job portico-worker-a-1 (CANCELLED): Job has been cancelled' });
    expect(jobEnded('srun: error: vm: task 0: Exited with exit code 1', 'x')).toBeUndefined();
    expect(jobEnded('Traceback (most recent call last):', 'x')).toBeUndefined();
  });

  it('an srun that ended before its worker connected back: refused, unreachable, or a worker that could not connect (named)', () => {
    const refused = startFailure(['srun: error: Unable to allocate resources: Invalid partition name specified'], '7', '10.0.0.1:4000');
    expect([refused.code, refused.message]).toEqual(['job_refused', "Slurm did not take the Python worker's allocation: Invalid partition name specified"]);
    expect(startFailure(['srun: error: Unable to allocate resources: Unable to contact slurm controller (connect failure)'], '7', 'h:1').code).toBe('scheduler_unavailable');
    const unreachable = startFailure(['portico.worker: cannot connect back to the gateway at login1:4000: [Errno 113] No route to host', 'srun: error: gpu-07: task 0: Exited with exit code 2'], '88', 'login1:4000');
    expect(unreachable.code).toBe('worker_unavailable');
    expect(unreachable.message).toBe('The Python worker in Slurm job 88 cannot connect back to the gateway at login1:4000: [Errno 113] No route to host (set --worker-connect to an address the nodes reach)');
    expect(startFailure([], '9', 'h:1').message).toMatch(/srun ended before the worker connected back to h:1: it said nothing/);
  });

  it('--worker-connect: HOST, HOST:PORT or [v6]:PORT', () => {
    expect(parseConnectAddress('login1')).toEqual({ host: 'login1', port: 0 });
    expect(parseConnectAddress('10.1.2.3:4000')).toEqual({ host: '10.1.2.3', port: 4000 });
    expect(parseConnectAddress('[fd00::1]:4000')).toEqual({ host: 'fd00::1', port: 4000 });
    for (const bad of ['', ':4000', 'h:x', 'h:1:2', 'h:70000']) expect(() => parseConnectAddress(bad), bad).toThrow();
  });
});
