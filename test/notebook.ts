/**
 * The test-only Python venv (jupyterlab, nbclient, ipykernel, …) that `npm run provision` makes at
 * <repo>/.venv and `npm test` exports as PORTICO_TEST_PYTHON. Not the Python the gateway's workers use.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './helpers.js';

export const TEST_PYTHON = process.env.PORTICO_TEST_PYTHON ?? path.join(ROOT, '.venv/bin/python');
/** The venv's bin folder (jupyter, jupyter-lab, …). */
export const VENV_BIN = path.dirname(TEST_PYTHON);

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command with the venv's bin first on PATH; resolves with its exit code and output (never rejects on a non-zero exit). */
export function runInVenv(cmd: string, args: string[], { cwd = ROOT, timeoutMs = 60_000, env = {} as Record<string, string> } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      {
        cwd,
        timeout: timeoutMs,
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, PATH: `${VENV_BIN}${path.delimiter}${process.env.PATH ?? ''}`, PYTHONNOUSERSITE: '1', ...env },
      },
      (err, stdout, stderr) => {
        const code = (err as { code?: unknown } | null)?.code;
        if (err && typeof code !== 'number') return reject(Object.assign(err, { stdout, stderr }));
        resolve({ code: typeof code === 'number' ? code : 0, stdout, stderr });
      },
    );
  });
}

/** Runs a Python snippet with the venv's python (`python -c`). */
export function runPython(code: string, options: Parameters<typeof runInVenv>[2] = {}): Promise<RunResult> {
  return runInVenv(TEST_PYTHON, ['-c', code], options);
}
