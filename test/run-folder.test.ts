/**
 * The run folder is written down once (packages/server/python/portico/shared.json, `run_folder`)
 * and both sides write and read it that way: a folder the run process (Python) wrote reads the same
 * in the gateway as in Python, and so does one the gateway wrote (a run whose process died). The
 * bounds both sides enforce come from the same file. Real files, a real `python3 -m portico.run`.
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../packages/server/src/config/constants.js';
import { SHARED_FILE } from '../packages/server/src/config/shared.js';
import { runEnvironment } from '../packages/server/src/executors/local.js';
import { readRunFolder, RUN_FILES, RUN_TIME } from '../packages/server/src/store/run-folder.js';
import { HEARTBEAT_MS, RunStore, type ExecutionSpec } from '../packages/server/src/store/runs.js';
import { cleanup, tempProject } from './helpers.js';

const PYTHON = 'python3';

const PROJECT = {
  'steps.py': ['from portico import Interface', '', 'class Steps(Interface):', '    def __call__(self):', '        print("step one")', '        self.emit({"step": 1})', ''].join('\n'),
  'fails.py': ['from portico import Interface', '', 'class Fails(Interface):', '    def __call__(self):', '        raise ValueError("no luck")', ''].join('\n'),
  'waits.py': ['import time', '', 'from portico import Interface', '', 'class Waits(Interface):', '    def __call__(self):', '        self.emit({"waiting": True})', '        time.sleep(600)', ''].join('\n'),
};

afterAll(cleanup);

const uuid = (): string => randomBytes(12).toString('hex');

/** How Python reads the folder (portico.run_folder.read_run_folder), as JSON. */
async function pythonReads(dir: string): Promise<unknown> {
  const script = 'import json, sys\nfrom portico.run_folder import read_run_folder\nprint(json.dumps(read_run_folder(sys.argv[1])))';
  const { stdout } = await promisify(execFile)(PYTHON, ['-c', script, dir], { env: runEnvironment() });
  return JSON.parse(stdout);
}

/** A new run of `modules` in a fresh project, its execution.json written by the gateway's run store. */
async function newRun(modules: string[]): Promise<{ runs: RunStore; spec: ExecutionSpec; dir: string }> {
  const project = await tempProject(PROJECT, { demo: false });
  const runs = new RunStore(project);
  const spec: ExecutionSpec = {
    uuid: uuid(),
    project,
    created_at: new Date().toISOString(),
    created_by: 'tester',
    parent: null,
    interfaces: modules.map((module) => ({ uuid: uuid(), module, config: {}, contexts: [] })),
  };
  await runs.create(spec);
  return { runs, spec, dir: runs.dir(spec.uuid) };
}

/** `python3 -m portico.run <dir>` as the local executor starts it; resolves with the child once it has started. */
function startRun(dir: string, project: string) {
  const child = spawn(PYTHON, ['-m', 'portico.run', dir], { cwd: project, stdio: 'ignore', env: runEnvironment() });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exited };
}

/** The raw text of every time file the folder has: each must be the time alone. */
async function timeFiles(dir: string): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for (const key of ['started_at', 'heartbeat_at', 'finished_at'] as const) {
    const text = await readFile(path.join(dir, RUN_FILES[key]), 'utf8').catch(() => null);
    if (text !== null) found[key] = text;
  }
  return found;
}

describe('the run folder, written once for both languages', () => {
  it('a folder the run process wrote reads the same in the gateway as in Python', async () => {
    const { runs, spec, dir } = await newRun(['steps', 'fails']);
    const [steps, fails] = spec.interfaces.map((i) => i.uuid);
    expect(await startRun(dir, spec.project).exited).toBe(1);

    const gatewayView = await readRunFolder(dir);
    expect(await pythonReads(dir)).toEqual(gatewayView);
    expect(gatewayView.status).toEqual({
      status: 'failed',
      error: { exception: 'ValueError', message: 'no luck', interface: fails },
      interfaces: [
        { uuid: steps, status: 'finished' },
        { uuid: fails, status: 'failed' },
      ],
    });
    expect(gatewayView.events).toEqual([expect.objectContaining({ interface: steps, payload: { step: 1 } })]);
    expect(gatewayView.cancelled).toBe(false);

    const times = await timeFiles(dir);
    expect(Object.keys(times).sort()).toEqual(['finished_at', 'heartbeat_at', 'started_at']);
    for (const text of Object.values(times)) expect(text).toMatch(RUN_TIME);

    const info = await runs.info(spec);
    expect(info).toMatchObject({ status: 'failed', started_at: times.started_at, finished_at: times.finished_at, error: { exception: 'ValueError', interface: fails } });
  });

  it('a folder the gateway wrote for a run whose process died reads the same in Python, in the same format', async () => {
    const { runs, spec, dir } = await newRun(['steps', 'waits']);
    const [steps, waits] = spec.interfaces.map((i) => i.uuid);
    const { child, exited } = startRun(dir, spec.project);
    // Killed once the second interface is running (it emitted), the first having finished.
    await expect.poll(async () => ((await readRunFolder(dir)).events as Array<{ interface: string }>).some((event) => event.interface === waits)).toBe(true);
    child.kill('SIGKILL');
    await exited;
    await runs.cancel(spec.uuid);
    await runs.recordJob(spec.uuid, { engine: 'slurm', id: '42', submitted_at: spec.created_at });
    await runs.markDied(spec.uuid, 'The run process was killed by SIGKILL');

    const gatewayView = await readRunFolder(dir);
    expect(await pythonReads(dir)).toEqual(gatewayView);
    // status.json as the run process writes it: the interfaces too (the first finished, the rest skipped).
    expect(gatewayView.status).toEqual({
      status: 'failed',
      error: { exception: 'ProcessDied', message: 'The run process was killed by SIGKILL', interface: null },
      interfaces: [
        { uuid: steps, status: 'finished' },
        { uuid: waits, status: 'skipped' },
      ],
    });
    expect(gatewayView).toMatchObject({ cancelled: true, job: { engine: 'slurm', id: '42' } });
    // finished_at as the run process writes it: the time alone, with microseconds, no newline.
    const times = await timeFiles(dir);
    expect(times.finished_at).toMatch(RUN_TIME);
    expect(times.started_at).toMatch(RUN_TIME);
    expect((await runs.info(spec)).finished_at).toBe(times.finished_at);
  });

  it('the stream window, the read block, the display bound, the output window and the run heartbeat are shared.json values on both sides', async () => {
    const shared = JSON.parse(await readFile(SHARED_FILE, 'utf8')) as { limits: Record<string, { value: number }> };
    const value = (name: string): number => shared.limits[name]!.value;
    const script = [
      'import json',
      'from portico._display import DISPLAY_MAX_BYTES',
      'from portico.client.execution import FOLLOW_WINDOW',
      'from portico.run_watch import HEARTBEAT_SECONDS',
      'from portico.worker.call import STREAM_WINDOW',
      'from portico.worker.reads import READ_BLOCK_DEFAULT',
      'print(json.dumps([STREAM_WINDOW, READ_BLOCK_DEFAULT, DISPLAY_MAX_BYTES, FOLLOW_WINDOW, HEARTBEAT_SECONDS]))',
    ].join('\n');
    const { stdout } = await promisify(execFile)(PYTHON, ['-c', script], { env: runEnvironment() });
    const expected = [value('stream_window'), value('read_block_bytes'), value('display_max_bytes'), value('output_window_max_bytes'), value('run_heartbeat_seconds')];
    expect(JSON.parse(stdout)).toEqual(expected);
    expect([LIMITS.streamWindow, LIMITS.readBlockBytes, LIMITS.displayMaxBytes, LIMITS.outputWindowMax, HEARTBEAT_MS / 1000]).toEqual(expected);
  });
});
