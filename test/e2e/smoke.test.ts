/**
 * Smoke tests for what `npm test` provisions: Debian Chromium driven by playwright-core against a
 * real gateway, and the test venv's JupyterLab / nbclient / ipykernel with its `python3` kernelspec.
 * Nothing is mocked: each fails when its piece is missing or broken.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { launchBrowser, type LaunchedBrowser } from '../browser.js';
import { cleanup, gateway } from '../helpers.js';
import { runInVenv, runPython, TEST_PYTHON, VENV_BIN } from '../notebook.js';

// Browser and venv start-up is slower than a REST call; give each test room without letting a hang eat the run.
const E2E_TIMEOUT = 90_000;

describe('browser: /docs in Chromium', { timeout: E2E_TIMEOUT }, () => {
  let b: LaunchedBrowser | undefined;

  afterAll(async () => {
    await b?.close();
    await cleanup();
  }, E2E_TIMEOUT);

  it('Swagger UI renders the API title from /openapi.json, offline and without errors', async () => {
    // Started here rather than in beforeAll: a hook failure would only skip the test, and a missing
    // browser must count as a failure.
    const g = await gateway();
    b = await launchBrowser();
    const { page, errors, requests } = await b.newPage();
    const res = await page.goto(`${g.url}/docs`, { waitUntil: 'load' });
    expect(res?.status()).toBe(200);
    // Swagger UI builds the title from the fetched document, so this proves the bundle ran and the spec loaded.
    const title = page.locator('#swagger-ui .info .title');
    await title.waitFor({ state: 'visible', timeout: 30_000 });
    expect(await title.innerText()).toContain('Portico API');
    // The operations list comes from the same document.
    await page.locator('#swagger-ui .opblock').first().waitFor({ state: 'visible', timeout: 30_000 });
    expect(await page.locator('#swagger-ui .opblock').count()).toBeGreaterThan(5);
    expect(errors).toEqual([]);
    expect(requests.filter((url) => !url.startsWith(g.url))).toEqual([]);
  });
});

describe('notebook venv', { timeout: E2E_TIMEOUT }, () => {
  it('the venv python imports jupyterlab, nbclient and ipykernel', async () => {
    expect(existsSync(TEST_PYTHON), `no test venv python at ${TEST_PYTHON}: run \`npm run provision\``).toBe(true);
    const res = await runPython(
      'import sys, json, jupyterlab, nbclient, nbformat, ipykernel\n' +
        'print(json.dumps({"prefix": sys.prefix, "base": sys.base_prefix, "jupyterlab": jupyterlab.__version__, "nbclient": nbclient.__version__, "ipykernel": ipykernel.__version__}))',
    );
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const info = JSON.parse(res.stdout);
    expect(info.prefix).not.toBe(info.base); // really a venv, not the system Python
    expect(info.jupyterlab).toMatch(/^4\.6\./);
    expect(info.nbclient).toMatch(/^\d+\.\d+/);
    expect(info.ipykernel).toMatch(/^\d+\.\d+/);
  });

  it('`jupyter kernelspec list --json` from the venv lists python3 inside the venv', async () => {
    const res = await runInVenv(path.join(VENV_BIN, 'jupyter'), ['kernelspec', 'list', '--json']);
    expect(res.code, res.stderr).toBe(0);
    const specs = JSON.parse(res.stdout).kernelspecs;
    expect(Object.keys(specs)).toContain('python3');
    const venv = path.dirname(VENV_BIN);
    expect(specs.python3.resource_dir.startsWith(venv + path.sep)).toBe(true);
    expect(specs.python3.spec.argv[0]).toBe(TEST_PYTHON);
  });
});
