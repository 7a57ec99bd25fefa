// Issue 42: one widget state change, page -> Python -> page, three ways in one JupyterLab page:
// through the kernel (a proxy shown as an anywidget, its gateway out of the browser's reach, so
// Portico's extension falls back to the kernel's view), direct (Portico's extension, its own socket
// to the gateway), and Jupyter's own comm echo (a comm target in the same kernel, the floor of any
// kernel path). Then the seconds from `pip install <gateway>/v1/python/…whl` to the first call.
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT, startGateway, stopOnExit, summarize } from './lib.mjs';

const run = promisify(execFile);
const CHROMIUM = process.env.PORTICO_CHROMIUM ?? '/usr/bin/chromium';
const VENV_BIN = path.dirname(process.env.PORTICO_TEST_PYTHON ?? path.join(ROOT, '.cache/test-venv/bin/python'));
const ROUND_TRIPS = 300;
const WARM_UP = 30;

const ECHO = `
from portico import Interface


class Echo(Interface):
    """Answers a ping with a pong of the same value: a state change that comes back changed."""

    class Config:
        name: str = "echo"

    def __init__(self):
        self.ping = 0
        self.pong = 0

    def widget_state(self):
        return {"name": self.config.name, "ping": self.ping, "pong": self.pong}

    def widget_update(self, changes):
        if "ping" in changes:
            self.ping = self.pong = changes["ping"]
        return {"ping": self.ping, "pong": self.pong}
`;
// Keeps each model where the bench's page script finds it, by the interface's config name.
const ECHO_ESM = `export default { render({ model, el }) { (window.__echo ??= {})[model.get('name')] = model; el.textContent = 'echo ' + model.get('name'); } };`;

async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function notebook(direct, kernel) {
  const cell = (source) => ({ cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source });
  return JSON.stringify({
    cells: [
      cell(`from portico.client import Gateway\ndirect = Gateway(${JSON.stringify(direct)}).interface("echo", [{"name": "direct"}])\ndirect`),
      cell(`kernel = Gateway(${JSON.stringify(kernel)}).interface("echo", [{"name": "kernel"}])\nkernel`),
      cell('def _echo(comm, _open):\n    comm.on_msg(lambda msg: comm.send(msg["content"]["data"]))\n\nget_ipython().kernel.comm_manager.register_target("portico_bench_echo", _echo)'),
    ],
    metadata: { kernelspec: { display_name: 'Python 3 (ipykernel)', language: 'python', name: 'python3' } },
    nbformat: 4,
    nbformat_minor: 5,
  });
}

/** JupyterLab from the test venv on `port`, with Portico's extension in Jupyter paths of its own under `dir`. */
async function startLab(dir, port, env) {
  const jupyter = {
    JUPYTER_CONFIG_DIR: path.join(dir, 'config'),
    JUPYTER_DATA_DIR: path.join(dir, 'data'),
    JUPYTER_RUNTIME_DIR: path.join(dir, 'runtime'),
    JUPYTERLAB_SETTINGS_DIR: path.join(dir, 'settings'),
    JUPYTERLAB_WORKSPACES_DIR: path.join(dir, 'workspaces'),
    IPYTHONDIR: path.join(dir, 'ipython'),
    JUPYTER_PATH: '',
    JUPYTER_CONFIG_PATH: '',
    JUPYTER_PREFER_ENV_PATH: '0',
  };
  const all = { ...process.env, ...jupyter, ...env, PATH: `${VENV_BIN}${path.delimiter}${process.env.PATH}` };
  await run(path.join(ROOT, 'node_modules/.bin/portico-lab'), ['install', '--user'], { env: all });
  const root = path.join(dir, 'root');
  await mkdir(root, { recursive: true });
  const lab = spawn(
    path.join(VENV_BIN, 'jupyter'),
    ['lab', '--no-browser', '--allow-root', `--port=${port}`, '--ip=127.0.0.1', '--ServerApp.token=', '--ServerApp.password=', `--ServerApp.root_dir=${root}`, '--LabApp.expose_app_in_browser=True', '--ServerApp.port_retries=0'],
    { env: all, stdio: 'ignore' },
  );
  stopOnExit(lab);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (await fetch(`${url}/api/status`).then((r) => r.ok, () => false)) break;
    if (i === 300 || lab.exitCode !== null) throw new Error(`JupyterLab did not start on ${url}`);
    await new Promise((r) => setTimeout(r, 300));
  }
  return { url, root, stop: () => lab.kill('SIGTERM') };
}

/** In the page: µs samples of `count` state changes on the model named `name`, each waited for back. */
async function modelLoop({ name, count }) {
  {
    const model = window.__echo[name];
    const samples = [];
    const base = Math.floor(Math.random() * 1e9);
    for (let i = 1; i <= count; i++) {
      const value = base + i;
      const t0 = performance.now();
      const back = new Promise((resolve) => {
        const seen = () => {
          if (model.get('pong') !== value) return;
          model.off('change:pong', seen);
          resolve();
        };
        model.on('change:pong', seen);
      });
      model.set('ping', value);
      model.save_changes();
      await back;
      samples.push((performance.now() - t0) * 1000);
    }
    return samples;
  }
}

/** In the page: µs samples of `count` messages echoed by the kernel's comm target. */
async function commLoop(count) {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const comm = kernel.createComm('portico_bench_echo');
  await comm.open({}).done;
  let answered;
  comm.onMsg = () => answered();
  const samples = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    const back = new Promise((resolve) => (answered = resolve));
    comm.send({ i });
    await back;
    samples.push((performance.now() - t0) * 1000);
  }
  comm.close();
  return samples;
}

/** Seconds from `pip install` of the client from the gateway (into a fresh folder) to its first call answered. */
async function pipToFirstCall(url, dir) {
  const site = path.join(dir, 'pip-site');
  const python = path.join(VENV_BIN, 'python');
  const t0 = performance.now();
  const index = await (await fetch(`${url}/v1/python`)).json();
  await run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-index', '--target', site, index.wheels[0].url]);
  await run('python3', ['-c', `from portico.client import Gateway\nprint(Gateway(${JSON.stringify(url)}).interface("echo").widget_state())`], { env: { ...process.env, PYTHONPATH: site } });
  return (performance.now() - t0) / 1000;
}

export async function kernelWidgetsBench() {
  if (!existsSync(CHROMIUM) || !existsSync(path.join(VENV_BIN, 'jupyter'))) return [{ name: 'Chromium or the test venv missing (npm run provision)', value: NaN }];
  const dir = await mkdtemp(path.join(tmpdir(), 'portico-bench-kernel-'));
  const project = path.join(dir, 'project');
  await mkdir(project, { recursive: true });
  await writeFile(path.join(project, 'echo.py'), ECHO);
  await writeFile(path.join(project, 'echo.widget.js'), ECHO_ESM);
  const labPort = await freePort();
  // Two gateways on one project folder would share its embedded index: each gets its own copy.
  const kernelProject = path.join(dir, 'kernel-project');
  await mkdir(kernelProject, { recursive: true });
  await writeFile(path.join(kernelProject, 'echo.py'), ECHO);
  await writeFile(path.join(kernelProject, 'echo.widget.js'), ECHO_ESM);
  const direct = await startGateway(project, ['--allow-origin', `http://127.0.0.1:${labPort}`]);
  const reachless = await startGateway(kernelProject, ['--allow-origin', 'http://nowhere.invalid']);
  let lab;
  let browser;
  try {
    lab = await startLab(dir, labPort, { PYTHONPATH: path.join(ROOT, 'packages/server/python') });
    await writeFile(path.join(lab.root, 'bench.ipynb'), notebook(direct.url, reachless.url));
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
    const page = await browser.newPage();
    await page.goto(`${lab.url}/lab/tree/bench.ipynb`);
    await page.waitForFunction(() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle', null, { timeout: 120_000 });
    await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-all-cells'));
    await page.waitForFunction(() => window.__echo?.direct && window.__echo?.kernel, null, { timeout: 120_000 });
    const kernelPath = await page.locator('.jp-PorticoWidget-kernel').count();
    const samples = { direct: [], kernel: [], comm: [] };
    // Interleaved in rounds, so the three see the same conditions.
    for (let round = 0; round < 3; round++) {
      for (const name of ['direct', 'kernel']) samples[name].push(...(await page.evaluate(modelLoop, { name, count: ROUND_TRIPS / 3 + (round ? 0 : WARM_UP) })).slice(round ? 0 : WARM_UP));
      samples.comm.push(...(await page.evaluate(commLoop, ROUND_TRIPS / 3 + (round ? 0 : WARM_UP))).slice(round ? 0 : WARM_UP));
    }
    const [viaDirect, viaKernel, viaComm] = [samples.direct, samples.kernel, samples.comm].map(summarize);
    const pip = await pipToFirstCall(reachless.url, dir);
    return [
      { name: "Jupyter's comm echo, page -> kernel -> page p50 (the kernel path's floor)", value: viaComm.p50, unit: ' µs' },
      { name: `through the kernel (anywidget; ${kernelPath} view fell back): page -> Python -> page p50`, value: viaKernel.p50, unit: ' µs', floor: viaComm.p50 },
      { name: 'through the kernel p99', value: viaKernel.p99, unit: ' µs', floor: viaComm.p99 },
      { name: "direct (Portico's extension): page -> Python -> page p50", value: viaDirect.p50, unit: ' µs', baseline: { name: 'through the kernel', value: viaKernel.p50 } },
      { name: 'direct p99', value: viaDirect.p99, unit: ' µs', baseline: { name: 'through the kernel', value: viaKernel.p99 } },
      { name: 'pip install from the gateway to the first call answered', value: pip, unit: ' s' },
    ];
  } finally {
    await browser?.close();
    lab?.stop();
    await direct.stop();
    await reachless.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
