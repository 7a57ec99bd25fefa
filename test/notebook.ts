/**
 * The test-only Python venv (jupyterlab, nbclient, ipykernel, …) that `npm run provision` makes at
 * <repo>/.cache/test-venv and `npm test` exports as PORTICO_TEST_PYTHON. Not the Python the
 * gateway's workers use, and not the project's own `.venv`, so nothing a user installs there
 * (`npx portico-lab install`, kernels) can shadow what a test installs.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT } from './helpers.js';

export const TEST_PYTHON = process.env.PORTICO_TEST_PYTHON ?? path.join(ROOT, '.cache/test-venv/bin/python');
/** The venv's bin folder (jupyter, jupyter-lab, …). */
export const VENV_BIN = path.dirname(TEST_PYTHON);

/**
 * Jupyter's config, data and runtime paths (and IPython's) of its own under `dir`, searched before
 * anything else: `~/.jupyter`, `~/.local/share/jupyter`, `JUPYTER_PATH` and an extension or kernel
 * installed into another environment cannot shadow or break what a test sets up. The venv's own
 * share/jupyter (its `python3` kernelspec) still comes after these.
 */
export function isolatedJupyter(dir: string): Record<string, string> {
  const env = {
    JUPYTER_CONFIG_DIR: path.join(dir, 'config'),
    JUPYTER_DATA_DIR: path.join(dir, 'data'),
    JUPYTER_RUNTIME_DIR: path.join(dir, 'runtime'),
    JUPYTERLAB_SETTINGS_DIR: path.join(dir, 'settings'),
    JUPYTERLAB_WORKSPACES_DIR: path.join(dir, 'workspaces'),
    IPYTHONDIR: path.join(dir, 'ipython'),
    JUPYTER_PATH: '',
    JUPYTER_CONFIG_PATH: '',
    // In a venv jupyter_core would search the venv's share/jupyter before JUPYTER_DATA_DIR.
    JUPYTER_PREFER_ENV_PATH: '0',
  };
  for (const folder of [env.JUPYTER_CONFIG_DIR, env.JUPYTER_DATA_DIR, env.JUPYTER_RUNTIME_DIR]) mkdirSync(folder, { recursive: true });
  return env;
}

let defaultJupyter: Record<string, string> | undefined;
/** One isolated set of Jupyter paths per test process, removed when it exits. */
function jupyterDefaults(): Record<string, string> {
  if (!defaultJupyter) {
    const dir = mkdtempSync(path.join(tmpdir(), 'portico-jupyter-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    defaultJupyter = isolatedJupyter(dir);
  }
  return defaultJupyter;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command with the venv's bin first on PATH and isolated Jupyter paths (`env` may name its
 * own); resolves with its exit code and output (never rejects on a non-zero exit).
 */
export function runInVenv(cmd: string, args: string[], { cwd = ROOT, timeoutMs = 60_000, env = {} as Record<string, string> } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      {
        cwd,
        timeout: timeoutMs,
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, ...jupyterDefaults(), PATH: `${VENV_BIN}${path.delimiter}${process.env.PATH ?? ''}`, PYTHONNOUSERSITE: '1', ...env },
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

/**
 * Runs a notebook snippet as a kernel would, in a fresh folder: `%pip install X` installs X there
 * (pip --target, with the venv's pip), `!command` runs in a shell, and the rest is Python run by
 * `python3` with that folder first on its path. Resolves with what the Python part printed.
 */
export async function runNotebookSnippet(snippet: string, env: Record<string, string | undefined> = process.env): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'portico-snippet-'));
  try {
    const python: string[] = [];
    for (const line of snippet.split('\n')) {
      const pip = /^%pip install (.+)$/.exec(line);
      if (pip) await run(TEST_PYTHON, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--target', dir, ...pip[1]!.split(' ')], env);
      else if (line.startsWith('!')) await run('sh', ['-c', line.slice(1)], env);
      else python.push(line);
    }
    return await run('python3', ['-c', python.join('\n')], { ...env, PYTHONPATH: dir });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function run(cmd: string, args: string[], env: Record<string, string | undefined>): Promise<string> {
  const defined = Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
  return new Promise((resolve, reject) =>
    execFile(cmd, args, { env: defined, timeout: 120_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stderr}`)) : resolve(stdout))),
  );
}
