/**
 * Rich results, the Jupyter way (issue 32, docs/writing/rich-results.md), through a real gateway whose
 * worker runs the test venv's Python (matplotlib, Pillow, pandas, IPython): a figure, an image
 * and a DataFrame returned by a method answer with their MIME bundle in `display` beside
 * `payload`, over REST and over the WebSocket (base64 text, or binary frames on a socket that
 * asked for them); a repr that raises leaves the others; a bundle over limits.displayMaxBytes
 * answers payload_too_large; the Python client returns an object IPython displays.
 * Beyond results: an emitted figure is an event with its bundle (before the call's result; binary
 * frames right after it), a streamed DataFrame an item with its HTML, a run's emitted figure a
 * line of events.jsonl and an event frame of /v1/executions/ws; oversize events and items are refused.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, Client, cleanup, gateway, ROOT, runEnded, tempProject, waitForRun } from './helpers.js';
import { TEST_PYTHON } from './notebook.js';

const FILES = {
  'plots.py': `
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from PIL import Image

from portico import Interface


class Broken:
    def __repr__(self):
        return "<Broken>"

    def _repr_png_(self):
        raise ValueError("no renderer")

    def _repr_html_(self):
        return "<p>still here</p>"


class Huge:
    def _repr_png_(self):
        return b"\\x89PNG\\r\\n\\x1a\\n" + bytes(33 * 1024 * 1024)


class Noise:
    """An image whose events.jsonl line (base64) is longer than one read of the file."""

    def _repr_png_(self):
        return b"\\x89PNG\\r\\n\\x1a\\n" + bytes(range(256)) * 1600


class Plots(Interface):
    def figure(self, n: int = 3):
        fig, ax = plt.subplots(figsize=(2, 2))
        ax.plot(list(range(n)))
        return fig

    def image(self):
        return Image.new("RGB", (3, 2), (255, 0, 0))

    def table(self):
        return pd.DataFrame({"n": [1, 2], "name": ["a", "b"]})

    def broken(self):
        return Broken()

    def huge(self):
        return Huge()

    def plain(self):
        return {"n": 1}

    def emit_figure(self):
        self.emit({"progress": 0.5, "message": "half way"})
        self.emit(self.figure())
        self.emit(Broken())
        return "drawn"

    def emit_huge(self):
        self.emit(Huge())

    def tables(self, n: int = 2):
        for i in range(n):
            yield pd.DataFrame({"epoch": [i], "loss": [1 / (i + 1)]})

    def huge_items(self):
        yield 1
        yield Huge()

    def __call__(self):
        self.emit({"progress": 0.5})
        self.emit(self.figure())
        self.emit(Noise())
        self.emit({"progress": 1.0})
`,
};

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const isPng = (bytes: Buffer) => [...bytes.subarray(0, 8)].every((b, i) => b === PNG_SIGNATURE[i]);

let url: string;
let project: string;

beforeAll(async () => {
  project = await tempProject(FILES, { demo: false });
  ({ url } = await gateway({ project, python: TEST_PYTHON }));
}, 60_000);
afterAll(cleanup);

const call = (method: string) => api({ url }, 'POST', '/v1/interfaces/call', { target: 'plots', method });

/** The Python side's bound, as the worker holds it. */
async function workerDisplayMax(): Promise<number> {
  const run = await promisify(execFile)(TEST_PYTHON, ['-c', 'from portico import _display; print(_display.DISPLAY_MAX_BYTES)'], {
    env: { ...process.env, PYTHONPATH: path.join(ROOT, 'packages/server/python') },
    encoding: 'utf8',
  });
  return Number(run.stdout.trim());
}

describe('rich results', { timeout: 60_000 }, () => {
  it('a matplotlib figure answers its PNG over REST, payload null', async () => {
    const res = await call('figure');
    expect(res.status).toBe(200);
    expect(res.body.payload).toBeNull();
    expect(res.body.display['text/plain']).toBe('<Figure size 200x200 with 1 Axes>');
    expect(isPng(Buffer.from(res.body.display['image/png'], 'base64'))).toBe(true);
  });

  it('a PIL image answers PNG and JPEG, a DataFrame its HTML table', async () => {
    const image = await call('image');
    expect(Object.keys(image.body.display).sort()).toEqual(['image/jpeg', 'image/png', 'text/plain']);
    expect(isPng(Buffer.from(image.body.display['image/png'], 'base64'))).toBe(true);
    const table = await call('table');
    expect(table.body.payload).toBeNull();
    expect(table.body.display['text/html']).toContain('<table border="1" class="dataframe">');
    expect(table.body.display['text/html']).toContain('<td>b</td>');
  });

  it('over the WebSocket: the same bundle in the result frame, base64 by default', async () => {
    const client = await Client.open(url);
    await client.connect('plots');
    const figure = await client.request({ type: 'call', method: 'figure' });
    expect(figure).toMatchObject({ type: 'result', payload: null, display: { 'text/plain': '<Figure size 200x200 with 1 Axes>' } });
    expect(isPng(Buffer.from(figure.display['image/png'], 'base64'))).toBe(true);
    const table = await client.request({ type: 'call', method: 'table' });
    expect(table.display['text/html']).toContain('<table');
    client.close();
  });

  it('over a socket connected with buffers: binary, image data comes as binary frames placed by buffer_paths', async () => {
    const client = await Client.open(url);
    await client.connect('plots', { buffers: 'binary' });
    const id = client.send({ type: 'call', method: 'image' });
    const result = await client.waitFor((f) => f.id === id && (f.attached?.length ?? 0) === f.binary_buffers);
    expect(result.binary_buffers).toBe(2);
    expect(result.display['image/png']).toBeNull();
    expect(result.display['text/plain']).toContain('PIL.Image.Image image mode=RGB size=3x2');
    const placed = Object.fromEntries((result.buffer_paths as string[][]).map(([mime], i) => [mime, result.attached![i]!]));
    expect(isPng(placed['image/png']!)).toBe(true);
    expect([...placed['image/jpeg']!.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
    client.close();
  });

  it('a repr method that raises is left out; the others answer', async () => {
    const res = await call('broken');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ payload: null, display: { 'text/html': '<p>still here</p>', 'text/plain': '<Broken>' } });
  });

  it('a bundle over limits.displayMaxBytes answers payload_too_large, over REST and the WebSocket', async () => {
    const protocol = await api({ url }, 'GET', '/v1/protocol');
    const max = protocol.body.limits.displayMaxBytes;
    expect(max).toBe(32 * 1024 * 1024);
    expect(await workerDisplayMax()).toBe(max);
    const res = await call('huge');
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ code: 'payload_too_large', message: expect.stringContaining(`at most ${max} are allowed`) });
    const client = await Client.open(url);
    await client.connect('plots');
    const error = await client.request({ type: 'call', method: 'huge' });
    expect(error).toMatchObject({ type: 'error', payload: { code: 'payload_too_large' } });
    client.close();
  });

  it('plain JSON results carry no display', async () => {
    const res = await call('plain');
    expect(res.body).toEqual({ payload: { n: 1 } });
  });

  it('/v1/protocol and /openapi.json document the shape', async () => {
    const protocol = await api({ url }, 'GET', '/v1/protocol');
    expect(protocol.body.display.binary).toContain('buffer_paths');
    expect(protocol.body.display.progress).toContain('progress between 0 and 1');
    const frame = (type: string) => protocol.body.ws_frames.find((f: { type: string; direction: string }) => f.type === type && f.direction === 'server_to_client');
    const names = (type: string) => frame(type).fields.map((f: { name: string }) => f.name);
    expect(names('result')).toEqual(['id', 'payload', 'display', 'metadata', 'buffer_paths', 'binary_buffers']);
    expect(names('stream')).toEqual(['id', 'payload', 'final', 'display', 'metadata', 'buffer_paths', 'binary_buffers']);
    expect(names('event')).toEqual(['payload', 'display', 'metadata', 'buffer_paths', 'binary_buffers']);
    const openapi = await api({ url }, 'GET', '/openapi.json');
    expect(Object.keys(openapi.body.components.schemas.InterfaceCallResponse.properties)).toEqual(['payload', 'display', 'metadata']);
  });

  it('the Python client returns an object IPython displays, over REST and over the WebSocket', async () => {
    const script = `
import sys
from IPython.core.formatters import DisplayFormatter
from portico.client import Display, Gateway

g = Gateway(sys.argv[1])
for how, figure in (("rest", g.call("plots", "figure")), ("ws", g.interface("plots").figure())):
    data, metadata = DisplayFormatter().format(figure)
    print(how, type(figure).__name__, sorted(data), figure.bytes("image/png")[:4], repr(figure), figure.payload)
print("plain", g.call("plots", "plain"), g.interface("plots").plain())
`;
    // Asynchronously: the gateway answering it runs in this process.
    const run = await promisify(execFile)(TEST_PYTHON, ['-c', script, url], {
      env: { ...process.env, PYTHONPATH: path.join(ROOT, 'packages/server/python') },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim().split('\n')).toEqual([
      "rest Display ['image/png', 'text/plain'] b'\\x89PNG' <Figure size 200x200 with 1 Axes> None",
      "ws Display ['image/png', 'text/plain'] b'\\x89PNG' <Figure size 200x200 with 1 Axes> None",
      "plain {'n': 1} {'n': 1}",
    ]);
  });
});

describe('bundles in events, stream items and runs', { timeout: 60_000 }, () => {
  it('an emitted figure is an event with image/png (base64), before the result; progress stays JSON; a repr that raises falls back', async () => {
    const client = await Client.open(url);
    await client.connect('plots');
    const id = client.send({ type: 'call', method: 'emit_figure' });
    const result = await client.waitFor((f) => f.id === id);
    expect(result).toEqual({ type: 'result', id, payload: 'drawn' });
    const events = client.frames.slice(0, client.frames.indexOf(result)).filter((f) => f.type === 'event');
    expect(events.map((e) => Object.keys(e).sort())).toEqual([['payload', 'type'], ['display', 'payload', 'type'], ['display', 'payload', 'type']]);
    const [progress, figure, broken] = events as any[];
    expect(progress.payload).toEqual({ progress: 0.5, message: 'half way' });
    expect(figure.payload).toBeNull();
    expect(figure.display['text/plain']).toBe('<Figure size 200x200 with 1 Axes>');
    expect(isPng(Buffer.from(figure.display['image/png'], 'base64'))).toBe(true);
    expect(broken).toEqual({ type: 'event', payload: null, display: { 'text/html': '<p>still here</p>', 'text/plain': '<Broken>' } });
    client.close();
  });

  it('on a socket connected with buffers: binary, the PNG is a binary frame right after its event, before the result', async () => {
    const client = await Client.open(url);
    await client.connect('plots', { buffers: 'binary' });
    const id = client.send({ type: 'call', method: 'emit_figure' });
    const result = await client.waitFor((f) => f.id === id);
    const figure = client.frames.find((f) => f.type === 'event' && f.binary_buffers) as any;
    expect(client.frames.indexOf(figure)).toBeLessThan(client.frames.indexOf(result));
    expect(figure).toMatchObject({ payload: null, binary_buffers: 1, buffer_paths: [['image/png']], display: { 'image/png': null, 'text/plain': '<Figure size 200x200 with 1 Axes>' } });
    // The Client puts binary frames on the frame before them: any other frame in between would leave it short.
    expect(figure.attached).toHaveLength(1);
    expect(isPng(figure.attached[0])).toBe(true);
    expect(client.binary).toEqual([]);
    client.close();
  });

  it('a streamed DataFrame is a stream item with its text/html table', async () => {
    const client = await Client.open(url);
    await client.connect('plots');
    const id = client.send({ type: 'call', method: 'tables', args: [2] });
    const end = await client.waitFor((f) => f.id === id && (f.final === true || f.type === 'error'));
    expect(end.type).toBe('stream');
    const items = client.replies(id).filter((f) => !f.final) as any[];
    expect(items).toHaveLength(2);
    for (const item of items) {
      expect(item).toMatchObject({ type: 'stream', payload: null, final: false });
      expect(item.display['text/html']).toContain('<table border="1" class="dataframe">');
      expect(item.display['text/html']).toContain('<th>loss</th>');
    }
    expect(items[1].display['text/plain']).toContain('0.5');
    client.close();
  });

  it('an oversize emitted bundle raises in the method (payload_too_large); an oversize item fails its stream', async () => {
    const max = (await api({ url }, 'GET', '/v1/protocol')).body.limits.displayMaxBytes;
    const res = await call('emit_huge');
    expect(res.status).toBe(413);
    // A failure of the call endpoint: the structured detail (README Errors), with the exception in it.
    expect(res.body).toMatchObject({ code: 'payload_too_large', detail: { code: 'payload_too_large', exception: 'DisplayTooLarge' }, message: expect.stringContaining(`emit() has a display bundle of`) });
    expect(res.body.message).toContain(`at most ${max} are allowed (limits.displayMaxBytes)`);
    const client = await Client.open(url);
    await client.connect('plots');
    const id = client.send({ type: 'call', method: 'huge_items' });
    const error = await client.waitFor((f) => f.id === id && f.type === 'error');
    expect(error.payload).toMatchObject({ code: 'payload_too_large', message: expect.stringContaining('An item of huge_items() has a display bundle of') });
    expect(client.replies(id).filter((f) => f.type === 'stream').map((f) => f.payload)).toEqual([1]);
    client.close();
  });

  it('a run that emits a figure has it in events.jsonl (base64) and in the event frames of /v1/executions/ws', async () => {
    const dispatched = await api({ url }, 'POST', '/v1/executions', { interfaces: [{ target: 'plots' }] });
    expect(dispatched.status).toBe(200);
    const info = await waitForRun<{ status: string; uuid: string }>({ url }, dispatched.body.uuid, runEnded);
    expect(info.status).toBe('finished');
    const lines = (await readFile(path.join(project, '.portico/executions', info.uuid, 'events.jsonl'), 'utf8')).trim().split('\n').map((line) => JSON.parse(line));
    expect(lines.map((l) => Object.keys(l).join())).toEqual(['at,interface,payload', 'at,interface,payload,display', 'at,interface,payload,display', 'at,interface,payload']);
    expect([lines[0].payload, lines[3].payload]).toEqual([{ progress: 0.5 }, { progress: 1 }]);
    expect(lines[1].payload).toBeNull();
    expect(isPng(Buffer.from(lines[1].display['image/png'], 'base64'))).toBe(true);
    expect(Buffer.from(lines[2].display['image/png'], 'base64')).toHaveLength(8 + 256 * 1600);
    const client = await Client.open(url, { path: '/v1/executions/ws' });
    await client.request({ type: 'connect', target: info.uuid, offset: 0 });
    // Every line, the one longer than a read of the file too, and the ones after it.
    await client.waitFor((f) => f.type === 'event' && f.payload.payload?.progress === 1);
    const events = client.frames.filter((f) => f.type === 'event');
    expect(events.map((e) => e.payload)).toEqual(lines);
    client.close();
  });
});
