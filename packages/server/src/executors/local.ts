/**
 * The local executor (the default): each run is `python -m portico.run <run dir>`, a child process
 * of the gateway in a session of its own, so that a gateway restart never stops it. The run's own
 * files say the rest; this executor only knows the children it started and still sees running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';
import { PYTHON_DIR } from '../kernel/worker.js';
import { RUN_FILES } from '../store/run-folder.js';
import type { RunStore } from '../store/runs.js';
import type { EngineView, Executor, RunToStart } from './executor.js';

/** The environment a run process gets: the bundled runtime importable, output unbuffered. */
export function runEnvironment(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...base, PYTHONPATH: PYTHON_DIR, PYTHONUNBUFFERED: '1', PYTHONSAFEPATH: '1' };
}

export class LocalExecutor implements Executor {
  readonly name = 'local' as const;
  readonly commands = {};
  /** Run processes this gateway started and that are still running, by run directory. */
  private readonly children = new Map<string, ChildProcess>();

  constructor(private readonly log: (line: string) => void) {}

  async start({ uuid, runs, project, python }: RunToStart): Promise<void> {
    const dir = runs.dir(uuid);
    const log = openSync(path.join(dir, RUN_FILES.output), 'a');
    let child: ChildProcess;
    try {
      child = spawn(python, ['-m', 'portico.run', dir], {
        cwd: project,
        // Its own session: a gateway restart (or Ctrl-C in its terminal) does not stop the run.
        detached: true,
        stdio: ['ignore', log, log],
        env: runEnvironment(),
      });
    } finally {
      closeSync(log);
    }
    this.children.set(dir, child);
    child.unref();
    child.on('error', (err) => this.log(`execution ${uuid}: cannot start ${python}: ${err.message}`));
    child.on('exit', (code, signal) => {
      this.children.delete(dir);
      if (code === 0) return;
      const why = signal ? `The run process was killed by ${signal}` : `The run process exited with code ${code}`;
      // Only records a death the run itself did not describe (status.json wins).
      runs.markDied(uuid, why).catch((err) => this.log(`execution ${uuid}: ${err.message}`));
    });
  }

  async observe(runs: RunStore, uuid: string): Promise<EngineView | undefined> {
    const child = this.children.get(runs.dir(uuid));
    return child ? { kind: 'process', alive: child.exitCode === null && child.signalCode === null, pid: child.pid } : undefined;
  }

  /** The marker is all: the run's watcher interrupts it within a second. */
  async cancel(): Promise<void> {}

  forget(): void {}

  close(): void {}
}
