/**
 * The notebook front ends of the kernel-widget suite, each started as a user starts it, from the
 * venv pip installed it into, on a loopback port, with Jupyter paths of its own: JupyterLab and
 * Notebook 7 (`jupyter lab` / `jupyter notebook`), Voilà (`voila notebook.ipynb`) and marimo
 * (`marimo run app.py`). The kernels they start inherit `env` (PORTICO_URL, PYTHONPATH).
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { ROOT } from '../helpers.js';
import { anyFreePort } from './lab.js';

/** The venv of the front ends besides the pinned JupyterLab (scripts/front-ends-requirements.txt). */
export const FRONT_ENDS_BIN = path.dirname(process.env.PORTICO_FRONT_ENDS_PYTHON ?? path.join(ROOT, '.cache/front-ends/bin/python'));

export interface FrontEnd {
  url: string;
  log: string[];
  stop(): Promise<void>;
}

/**
 * Starts `command args` with `env` and resolves once `ready` (a path) answers below 500; fails
 * with the command's output when it exits first or takes longer than 90 s.
 */
export async function startFrontEnd(command: string, args: string[], env: Record<string, string>, port: number, ready: string, cwd?: string): Promise<FrontEnd> {
  const url = `http://127.0.0.1:${port}`;
  const log: string[] = [];
  const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (d) => log.push(String(d)));
  let exited = false;
  const gone = new Promise((resolve) => child.once('exit', resolve));
  child.once('exit', () => (exited = true));
  const stop = async () => {
    if (exited) return;
    child.kill('SIGTERM');
    await Promise.race([gone, new Promise((r) => setTimeout(r, 10_000))]);
    if (!exited) child.kill('SIGKILL');
  };
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (exited || Date.now() > deadline) {
      await stop();
      throw new Error(`${path.basename(command)} did not start on port ${port}:\n${log.join('').slice(-3000)}`);
    }
    const status = await fetch(`${url}${ready}`).then((r) => r.status, () => 0);
    if (status > 0 && status < 500) return { url, log, stop };
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** Jupyter server flags every front end here shares: no token, no browser, loopback, this port only. */
function jupyterFlags(port: number, root: string): string[] {
  return ['--no-browser', '--allow-root', `--port=${port}`, '--ip=127.0.0.1', '--ServerApp.token=', '--ServerApp.password=', `--ServerApp.root_dir=${root}`, '--ServerApp.port_retries=0'];
}

/** `jupyter lab` or `jupyter notebook` (Notebook 7) from `bin`, serving `root`. */
export async function startJupyter(app: 'lab' | 'notebook', bin: string, env: Record<string, string>, root: string): Promise<FrontEnd> {
  const port = await anyFreePort();
  const expose = app === 'lab' ? '--LabApp.expose_app_in_browser=True' : '--JupyterNotebookApp.expose_app_in_browser=True';
  const noNews = app === 'lab' ? ['--LabApp.news_url=', '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate'] : [];
  return startFrontEnd(path.join(bin, 'jupyter'), [app, ...jupyterFlags(port, root), expose, ...noNews], { ...env, PATH: `${bin}${path.delimiter}${process.env.PATH}` }, port, '/api/status');
}

/** Voilà rendering `notebook` (a path under `root`) as a dashboard. */
export async function startVoila(bin: string, env: Record<string, string>, root: string, notebook: string): Promise<FrontEnd> {
  const port = await anyFreePort();
  const args = [notebook, '--no-browser', `--port=${port}`, '--Voila.ip=127.0.0.1', '--Voila.port_retries=0', '--ServerApp.token=', '--show_tracebacks=True'];
  return startFrontEnd(path.join(bin, 'voila'), args, { ...env, PATH: `${bin}${path.delimiter}${process.env.PATH}` }, port, '/voila/static/', root);
}

/** `marimo run app.py` (the app view: its cells run, their outputs shown). */
export async function startMarimo(bin: string, env: Record<string, string>, app: string): Promise<FrontEnd> {
  const port = await anyFreePort();
  const args = ['run', app, '--headless', '--no-token', '--host', '127.0.0.1', '--port', String(port)];
  return startFrontEnd(path.join(bin, 'marimo'), args, { ...env, PATH: `${bin}${path.delimiter}${process.env.PATH}` }, port, '/health', path.dirname(app));
}

/** A notebook (Python 3 kernel) of one code cell per source. */
export async function writeNotebook(file: string, sources: string | string[]): Promise<void> {
  const notebook = {
    cells: [sources].flat().map((source, i) => ({ cell_type: 'code', execution_count: null, id: `portico-cell-${i}`, metadata: {}, outputs: [], source })),
    metadata: { kernelspec: { display_name: 'Python 3 (ipykernel)', language: 'python', name: 'python3' }, language_info: { name: 'python' } },
    nbformat: 4,
    nbformat_minor: 5,
  };
  await writeFile(file, JSON.stringify(notebook, null, 1));
}

/** A marimo app of one cell whose last line is `expression`, after `setup` lines. */
export async function writeMarimoApp(file: string, setup: string[], expression: string): Promise<void> {
  const body = [...setup, expression].map((line) => `    ${line}`).join('\n');
  await writeFile(file, `import marimo\n\napp = marimo.App()\n\n\n@app.cell\ndef _():\n${body}\n    return\n\n\nif __name__ == "__main__":\n    app.run()\n`);
}

/** Runs every cell of the notebook open in a JupyterLab or Notebook 7 page, once its kernel is idle. */
export async function runAllCells(page: Page): Promise<void> {
  await page.waitForFunction(
    () => {
      const app = (window as any).jupyterapp;
      const kernel = app?.shell?.currentWidget?.sessionContext?.session?.kernel;
      return kernel?.connectionStatus === 'connected' && kernel?.status === 'idle';
    },
    null,
    { timeout: 120_000 },
  );
  await page.evaluate(() => (window as any).jupyterapp.commands.execute('notebook:run-all-cells'));
}
