/**
 * Values as Jupyter sends them, through a real gateway whose worker runs the test venv's Python
 * (numpy, anywidget): numpy scalars and arrays, NaN and ±Infinity (as "NaN", "Infinity",
 * "-Infinity"), dates, Decimal and paths in results over REST and WebSocket, in stream items,
 * events, widget state and widget messages (an array as a message buffer); a served anywidget
 * whose trait holds numpy values, as jupyter-scatter's tooltip puts them there; the strings
 * coming back as floats where Python declares a float, sent by a client or by the widget runtime
 * (which writes NaN that way instead of JSON.stringify's null). Anything else keeps
 * unserializable_result. docs/writing/values.md is the table.
 */
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectWith } from '../packages/widget-runtime/src/connect.js';
import type { WebSocketConstructor } from '../packages/widget-runtime/src/net/socket.js';
import { api, Client, cleanup, gateway, tempProject } from './helpers.js';
import { TEST_PYTHON } from './notebook.js';

const FILES = {
  'values.py': `
import datetime
import decimal
import math
import pathlib

import numpy as np

from portico import Interface, WidgetReply

WHEN = datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.timezone.utc)


class Values(Interface):
    """Returns what a notebook computes."""

    def __init__(self):
        self.state = {"count": np.int64(3), "xs": np.linspace(0, 1, 3), "level": math.nan, "day": datetime.date(2024, 5, 1)}

    def everything(self):
        return {
            "int64": np.int64(7), "float32": np.float32(0.5), "bool_": np.bool_(True),
            "matrix": np.arange(6).reshape(2, 3), "curve": np.array([0.5, np.nan, np.inf, -np.inf]),
            "nan": math.nan, "when": WHEN, "day": datetime.date(2024, 5, 1), "clock": datetime.time(12, 30),
            "price": decimal.Decimal("1.25"), "path": pathlib.PurePosixPath("runs/1/loss.csv"),
            "stamp": np.datetime64("2024-05-01T12:30:00"),
        }

    def losses(self, n: int):
        for i in range(n):
            self.emit({"step": np.int64(i), "loss": np.float32(0.5) if i else np.float64("nan")})
            yield np.float64(1 / (i + 1)) if i else math.inf

    def take(self, x: float, y: float):
        return [repr(x), repr(y)]

    def complex(self):
        return np.complex128(1 + 2j)

    def widget_state(self):
        return self.state

    def widget_message(self, content, buffers):
        return WidgetReply({"mean": np.float64(1.5), "shape": np.array([2, 2])}, [np.arange(4, dtype=np.uint8)])
`,
  // jupyter-scatter's tooltip of an int column: numpy integers and a numpy histogram in a Dict trait.
  'scatter.py': `
import anywidget
import numpy as np
import traitlets

from portico.widgets import serve


class ScatterWidget(anywidget.AnyWidget):
    _esm = "export default { render() {} };"
    tooltip_properties = traitlets.List(["x", "y"]).tag(sync=True)
    tooltip_properties_non_visual_info = traitlets.Dict({}).tag(sync=True)
    opacity = traitlets.Float(1.0).tag(sync=True)


CLUSTER = np.array([3, 1, 4, 1, 5, 9, 2, 6])


class Scatter(serve(ScatterWidget)):
    def tooltip(self, properties: list):
        counts = np.histogram(CLUSTER, bins=4)[0]
        self.widget.tooltip_properties_non_visual_info = {
            name: {"scale": "linear", "domain": [CLUSTER.min(), CLUSTER.max()], "histogram": counts / counts.max()} for name in properties
        }
        self.widget.tooltip_properties = ["x", "y", *properties]
        return len(properties)

    def opacity(self):
        return repr(self.widget.opacity)
`,
};

const EVERYTHING = {
  int64: 7,
  float32: 0.5,
  bool_: true,
  matrix: [[0, 1, 2], [3, 4, 5]],
  curve: [0.5, 'NaN', 'Infinity', '-Infinity'],
  nan: 'NaN',
  when: '2024-05-01T12:30:00+00:00',
  day: '2024-05-01',
  clock: '12:30:00',
  price: 1.25,
  path: 'runs/1/loss.csv',
  stamp: '2024-05-01T12:30:00',
};

const TOOLTIP = { cluster: { scale: 'linear', domain: [1, 9], histogram: [1, 2 / 3, 2 / 3, 1 / 3] } };

let url: string;

beforeAll(async () => {
  const project = await tempProject(FILES, { demo: false });
  ({ url } = await gateway({ project, python: TEST_PYTHON }));
}, 60_000);
afterAll(cleanup);

describe('values as Jupyter sends them', { timeout: 60_000 }, () => {
  it('a result with numpy values, NaN, dates, Decimal and a path, over REST and over the WebSocket', async () => {
    const rest = await api({ url }, 'POST', '/v1/interfaces/call', { target: 'values', method: 'everything' });
    expect(rest.status).toBe(200);
    expect(rest.body.payload).toEqual(EVERYTHING);
    const client = await Client.open(url);
    await client.connect('values');
    const result = await client.request({ type: 'call', method: 'everything' });
    expect(result).toMatchObject({ type: 'result', payload: EVERYTHING });
    client.close();
  });

  it('stream items and emit() events carry them too', async () => {
    const client = await Client.open(url);
    await client.connect('values');
    const id = client.send({ type: 'call', method: 'losses', args: [3] });
    await client.waitFor((f) => f.id === id && f.final === true);
    expect(client.replies(id).filter((f) => !f.final).map((f) => f.payload)).toEqual(['Infinity', 0.5, 1 / 3]);
    expect(client.frames.filter((f) => f.type === 'event').map((f) => f.payload)).toEqual([
      { step: 0, loss: 'NaN' },
      { step: 1, loss: 0.5 },
      { step: 2, loss: 0.5 },
    ]);
    client.close();
  });

  it('"NaN" and "Infinity" sent for a float parameter arrive as Python floats', async () => {
    const rest = await api({ url }, 'POST', '/v1/interfaces/call', { target: 'values', method: 'take', args: ['NaN', '-Infinity'] });
    expect(rest.body.payload).toEqual(['nan', '-inf']);
  });

  it('the widget runtime sends NaN and ±Infinity as those strings, not as null', async () => {
    const conn = await connectWith({ url, target: 'values' }, { WebSocket: WebSocket as unknown as WebSocketConstructor });
    try {
      expect(await conn.call('take', [Number.NaN, Number.POSITIVE_INFINITY])).toEqual(['nan', 'inf']);
      expect(await conn.call('take', [null, 1])).toEqual(['None', '1']); // a real null stays null
    } catch (error) {
      conn.close();
      throw error;
    }
    conn.close();
  });

  it('anything else keeps unserializable_result, naming the type', async () => {
    const rest = await api({ url }, 'POST', '/v1/interfaces/call', { target: 'values', method: 'complex' });
    expect(rest.status).toBe(400);
    expect(rest.body).toMatchObject({ code: 'unserializable_result', message: expect.stringContaining('Object of type complex128 is not JSON serializable') });
  });

  it('widget state and a widget message reply with numpy values; an array travels as a buffer', async () => {
    const client = await Client.open(url);
    await client.connect('values');
    const state = await client.request({ type: 'widget_get' });
    expect(state.payload.state).toEqual({ count: 3, xs: [0, 0.5, 1], level: 'NaN', day: '2024-05-01' });
    const reply = await client.request({ type: 'widget_msg', content: 'stats' });
    expect(reply.payload.content).toEqual({ mean: 1.5, shape: [2, 2] });
    expect(reply.payload.buffers.map((b: string) => [...Buffer.from(b, 'base64')])).toEqual([[0, 1, 2, 3]]);
    client.close();
  });

  it("jupyter-scatter's tooltip of an int column: numpy values in a trait reach every attached client", async () => {
    const page = await Client.open(url);
    const { payload: info } = await page.connect('scatter');
    await page.request({ type: 'widget_get' });
    const res = await api({ url }, 'POST', '/v1/interfaces/call', { target: info.uuid, method: 'tooltip', args: [['cluster']] });
    expect(res.status).toBe(200);
    const pushed = await page.waitFor((f) => f.type === 'widget_change' && 'tooltip_properties_non_visual_info' in f.payload.changes);
    expect(pushed.payload.changes.tooltip_properties_non_visual_info).toEqual(TOOLTIP);
    const state = await page.request({ type: 'widget_get' });
    expect(state.payload.state).toMatchObject({ tooltip_properties: ['x', 'y', 'cluster'], tooltip_properties_non_visual_info: TOOLTIP });
    page.close();
  });

  it('a Float trait takes "NaN" from a page and shows it as "NaN"', async () => {
    const page = await Client.open(url);
    const { payload: info } = await page.connect('scatter');
    const set = await page.request({ type: 'widget_set', changes: { opacity: 'NaN' } });
    expect(set.payload.changes).toEqual({ opacity: 'NaN' });
    const res = await api({ url }, 'POST', '/v1/interfaces/call', { target: info.uuid, method: 'opacity' });
    expect(res.body.payload).toBe('nan');
    page.close();
  });
});
