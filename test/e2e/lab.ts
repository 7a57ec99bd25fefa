/**
 * A real JupyterLab for the browser suites: started from the test venv with Jupyter paths of its
 * own (isolatedJupyter), the Portico extension installed into them by `portico-lab install` (no
 * pip), and the helpers that wait for a notebook's kernel and run JupyterLab commands.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { expect } from 'vitest';
import type { Page } from 'playwright-core';
import { ROOT } from '../helpers.js';
import { isolatedJupyter, runInVenv, VENV_BIN } from '../notebook.js';

/** The extension's installer CLI (an npm bin, no pip). */
export const PORTICO_LAB = path.join(ROOT, 'node_modules/.bin/portico-lab');

/** Where a user's JupyterLab listens: 8888, or the next free of 8889, 8890 (its own choice when 8888 is taken). */
export const JUPYTER_PORTS = [8888, 8889, 8890];

/** A port nobody listens on now, outside JupyterLab's usual ones (so a suite that needs those keeps them). */
export async function anyFreePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The first of `ports` nobody listens on. */
export async function firstFreePort(ports: number[] = JUPYTER_PORTS): Promise<number> {
  for (const port of ports) {
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`JupyterLab's usual ports ${ports.join(', ')} are all in use on this machine`);
}

/**
 * Jupyter paths under `dir` with the Portico extension installed into them and pointed at
 * `gatewayUrl`; the environment that JupyterLab and its kernels run with. The installed extension
 * is the only copy JupyterLab sees, and `jupyter labextension list` calls it enabled and
 * compatible (`OK`). `bin` is the bin folder of the Python environment whose JupyterLab runs
 * (default: the test venv's); pass the same to startLab.
 */
export async function installExtension(dir: string, gatewayUrl: string, { bin = VENV_BIN }: { bin?: string } = {}): Promise<Record<string, string>> {
  const jupyter = isolatedJupyter(dir);
  const settings = path.join(jupyter.JUPYTERLAB_SETTINGS_DIR, '@portico/labextension');
  await mkdir(settings, { recursive: true });
  // The gateway the extension talks to, through JupyterLab's settings registry.
  await writeFile(path.join(settings, 'settings.jupyterlab-settings'), JSON.stringify({ gatewayUrl }));
  const env = {
    ...jupyter,
    PORTICO_URL: gatewayUrl,
    // How a kernel finds portico without pip (the notebook's own sys.path line points at the repo).
    PYTHONPATH: path.join(ROOT, 'packages/server/python'),
    PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
  };
  const installed = await runInVenv(PORTICO_LAB, ['install', '--user'], { env });
  expect(installed.code, installed.stderr).toBe(0);
  const listed = await runInVenv(path.join(bin, 'jupyter'), ['labextension', 'list'], { env });
  const plain = (listed.stdout + listed.stderr).replace(/\x1b\[[0-9;]*m/g, '');
  expect(plain).toContain(`${jupyter.JUPYTER_DATA_DIR}/labextensions`);
  expect(plain).toMatch(/@portico\/labextension v\S+ enabled\s+OK/);
  // Exactly one copy is visible, ours: one installed by a user elsewhere (the project's .venv,
  // ~/.local/share/jupyter, a system prefix) would shadow it or be shadowed unpredictably.
  expect(plain.match(/@portico\/labextension v/g), plain).toHaveLength(1);
  return env;
}

export interface RunningLab {
  url: string;
  /** JupyterLab's stdout and stderr so far, for failure messages. */
  log: string[];
  stop(): Promise<void>;
}

/**
 * JupyterLab on `port` serving `root`, without token or browser; resolves once it answers. It
 * never moves to another port: when `port` was taken meanwhile (another suite started a lab on
 * it), this one fails instead of passing the other lab off as its own.
 */
export async function startLab(env: Record<string, string>, root: string, port: number, { bin = VENV_BIN }: { bin?: string } = {}): Promise<RunningLab> {
  const url = `http://127.0.0.1:${port}`;
  const log: string[] = [];
  const lab: ChildProcess = spawn(
    path.join(bin, 'jupyter'),
    [
      'lab',
      '--no-browser',
      '--allow-root',
      `--port=${port}`,
      '--ip=127.0.0.1',
      '--ServerApp.token=',
      '--ServerApp.password=',
      `--ServerApp.root_dir=${root}`,
      '--LabApp.expose_app_in_browser=True',
      '--LabApp.news_url=',
      '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate',
      '--ServerApp.port_retries=0',
    ],
    { env: { ...process.env, ...env, PATH: `${bin}${path.delimiter}${process.env.PATH}` }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  for (const stream of [lab.stdout!, lab.stderr!]) stream.on('data', (d) => log.push(String(d)));
  let exited = false;
  const gone = new Promise((resolve) => lab.once('exit', resolve));
  lab.once('exit', () => (exited = true));
  // SIGTERM lets JupyterLab shut its kernels down; SIGKILL only if it has not exited 10 s later
  // (a loaded machine takes longer than an idle one, and the kernels must not outlive the suite).
  const stop = async () => {
    if (exited) return;
    lab.kill('SIGTERM');
    await Promise.race([gone, new Promise((r) => setTimeout(r, 10_000))]);
    if (!exited) lab.kill('SIGKILL');
  };
  // Jupyter writes jpserver-<pid>.json into its runtime dir once that process serves: the lab that
  // answers on the port is then this one.
  const serving = path.join(env.JUPYTER_RUNTIME_DIR!, `jpserver-${lab.pid}.json`);
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (exited || Date.now() > deadline) {
      await stop();
      throw new Error(`JupyterLab did not start on port ${port}:\n${log.join('').slice(-3000)}`);
    }
    const ok = existsSync(serving) && (await fetch(`${url}/api/status`).then((r) => r.ok, () => false));
    if (ok) return { url, log, stop };
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** Opens `notebook` in the lab and waits until its kernel is connected and idle (run-all before that can be dropped on a cold start). */
export async function openNotebook(page: Page, labUrl: string, notebook: string): Promise<void> {
  await page.goto(`${labUrl}/lab/tree/${notebook}`);
  await page.waitForFunction(() => (window as any).jupyterapp?.shell, null, { timeout: 90_000 });
  await page.locator('.jp-Notebook').waitFor({ timeout: 90_000 });
  await page.waitForFunction(
    () => (window as any).jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.connectionStatus === 'connected' &&
      (window as any).jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle',
    null,
    { timeout: 120_000 },
  );
}

/** Runs a JupyterLab command and waits for it. Its result stays in the page: some (close-all's
 * disposed widgets) cannot be serialized back, and no caller needs one. */
export async function command(page: Page, id: string, args: Record<string, unknown> = {}): Promise<void> {
  await page.evaluate(async ([id, args]) => {
    await (window as any).jupyterapp.commands.execute(id, args);
  }, [id, args] as const);
}
