/**
 * The notebooks in notebooks/ run top to bottom with nbclient on a real ipykernel (from the test
 * venv) against a real gateway on the demo project, and show what a researcher expects.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, gateway, ROOT } from './helpers.js';
import { runPython } from './notebook.js';
import type { RunningServer } from '../packages/server/src/index.js';

const TIMEOUT = 180_000;

/** Executes a notebook; returns each code cell's outputs as {type, text, mimes}. */
async function execute(name: string, url: string): Promise<Array<Array<{ type: string; text: string; mimes: string[]; data: Record<string, unknown> }>>> {
  const script = `
import json, os, nbformat
from nbclient import NotebookClient
nb = nbformat.read(os.environ["NOTEBOOK"], as_version=4)
NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": os.path.dirname(os.environ["NOTEBOOK"])}}).execute()
cells = []
for cell in nb.cells:
    if cell.cell_type != "code":
        continue
    outs = []
    for o in cell.outputs:
        data = o.get("data", {})
        text = data.get("text/plain") or o.get("text") or ""
        outs.append({"type": o.output_type, "text": text, "mimes": sorted(data), "data": data})
    cells.append(outs)
print(json.dumps(cells))
`;
  const notebook = path.join(ROOT, 'notebooks', `${name}.ipynb`);
  const result = await runPython(script, { timeoutMs: TIMEOUT, env: { PORTICO_URL: url, NOTEBOOK: notebook }, cwd: path.dirname(notebook) });
  if (result.code !== 0) throw new Error(`nbclient failed:\n${result.stderr.slice(-4000)}`);
  return JSON.parse(result.stdout.trim().split('\n').at(-1)!);
}

let running: RunningServer;
beforeAll(async () => {
  running = await gateway();
}, TIMEOUT);
afterAll(cleanup);

describe('notebooks', { timeout: TIMEOUT }, () => {
  it('remote-calls: plain calls, streams as iterators, events, typed errors, a progress bar', async () => {
    const cells = await execute('remote-calls', running.url);
    const text = cells.map((outs) => outs.filter((o) => o.type !== 'display_data').map((o) => o.text).join(''));
    const bars = cells.map((outs) => outs.filter((o) => o.type === 'display_data'));
    expect(text[0]).toBe("'ok'");
    expect(text[1]).toBe('20');
    expect(text[2]).toBe('(30, 30)');
    expect(text[3]).toBe("['tick 0', 'tick 1', 'tick 2']");
    expect(text[4]).toBe('[0.25, 0.5, 0.75, 1]');
    expect(text[5].trim()).toBe('call_failed');
    // streamer.ticks emits {"progress": …}: one bar per cell, updated in place, saved finished
    expect(text[6]).toBe("'tick 4'");
    // Run again on the same gateway (the instances live on): the same answers, it resets what it uses.
    const again = (await execute('remote-calls', running.url)).map((outs) => outs.filter((o) => o.type !== 'display_data').map((o) => o.text).join(''));
    expect(again).toEqual(text);
    for (const cell of [3, 4, 6]) expect(bars[cell]!.map((o) => o.text)).toEqual(['[##########] 100% (done)']);
    expect(bars[6]![0]!.data['text/html']).toContain('<progress value="1" max="1"');
    expect(bars.filter((outs, cell) => outs.length && ![3, 4, 6].includes(cell))).toEqual([]);
    expect(cells.flat().filter((o) => o.type === 'error')).toEqual([]);
  });

  it('widgets: the last line shows the widget bundle with its fallbacks, and state set from code is Python state', async () => {
    const cells = await execute('widgets', running.url);
    const bundle = cells[1]![0]!;
    // The test venv's kernel has anywidget: the bundle carries the anywidget view beside Portico's own type.
    expect(bundle.mimes).toEqual(['application/vnd.jupyter.widget-view+json', 'application/vnd.portico.widget+json', 'text/html', 'text/plain']);
    const data = bundle.data['application/vnd.portico.widget+json'] as Record<string, unknown>;
    expect(data).toMatchObject({ url: running.url, module: 'counter', version: 1 });
    expect(JSON.stringify(bundle.data)).not.toMatch(/token/i);
    expect(cells[2]![0]!.text).toBe('15');
    expect(cells[3]![0]!.text).toBe('17');
    expect(cells[4]![0]!.mimes).toContain('application/vnd.portico.widget+json');
    expect(cells[5]![0]!.text).toBe('200');
  });

  it('search-and-runs: search by config, dispatch and follow output, cancel', async () => {
    const cells = await execute('search-and-runs', running.url);
    const text = cells.map((outs) => outs.map((o) => o.text).join(''));
    expect(text[1]).toContain("'seven'");
    expect(text[2].trim()).toBe('epoch 2/2 loss=0.2500');
    expect(text[3]).toBe("'finished'");
    expect(text[4]).toBe("'interrupted'");
  });
});
