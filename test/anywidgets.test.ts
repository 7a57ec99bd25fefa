/**
 * Published anywidgets served unchanged through `portico.widgets.serve`, from Node: a real
 * gateway whose worker runs the test venv's Python (anywidget, wigglystuff, drawdata, quak). The
 * synced traits are the state, traitlets validation refuses bad changes, Python-side trait changes
 * and `send()` reach every client, `on_msg` handlers answer `widget_msg`, and the class's
 * `_esm`/`_css` are the module's assets. The browser suites (e2e/anywidgets*.test.ts) drive the
 * same fixture project through Chromium and JupyterLab.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, Client, cleanup, fixtureFiles, gateway, tempProject } from './helpers.js';
import { TEST_PYTHON } from './notebook.js';

const EXTRA = {
  // A small AnyWidget of the project's own: an observer derives a trait, a handler answers messages.
  'knob.py': `
import anywidget
import traitlets

from portico.widgets import serve


class KnobWidget(anywidget.AnyWidget):
    """A knob whose double follows its value."""

    _esm = "export default { render({ model, el }) { el.textContent = String(model.get('value')); } };"
    _css = ".knob { color: red; }"
    value = traitlets.Int(1).tag(sync=True)
    double = traitlets.Int(2).tag(sync=True)
    hidden = traitlets.Int(0)  # not synced: never part of the state

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.on_msg(self._answer)

    @traitlets.observe("value")
    def _follow(self, change):
        self.double = 2 * change["new"]

    @traitlets.validate("value")
    def _bounded(self, proposal):
        if proposal["value"] > 100:
            raise traitlets.TraitError("value must be at most 100")
        return proposal["value"]

    def _answer(self, widget, content, buffers):
        if content == "boom":
            raise RuntimeError("the knob broke")
        self.send({"echo": content, "sizes": [len(b) for b in buffers]}, buffers=[b"\\x01\\x02"])


class Knob(serve(KnobWidget)):
    class Config:
        value: int = 1

    def turn(self, by: int) -> int:
        self.widget.value += by
        return self.widget.value

    def knobs_alive(self) -> int:
        \"\"\"How many knob widgets the worker still holds (ipywidgets keeps every open widget).\"\"\"
        import gc

        from ipywidgets.widgets.widget import _instances

        gc.collect()
        return sum(isinstance(widget, KnobWidget) for widget in list(_instances.values()))
`,
  // A binary trait, as anywidgets carry images and arrays: bytes in Python, DataView in the page.
  'picture.py': `
import anywidget
import traitlets

from portico.widgets import serve


class PictureWidget(anywidget.AnyWidget):
    _esm = "export default { render({ model, el }) { el.textContent = String(model.get('size')); } };"
    image = traitlets.Bytes(b"").tag(sync=True)
    size = traitlets.Int(0).tag(sync=True)

    @traitlets.observe("image")
    def _measure(self, change):
        self.size = len(change["new"])


class Picture(serve(PictureWidget)):
    def fill(self, n: int) -> int:
        self.widget.image = bytes(range(n))
        return self.widget.size
`,
  'wrong_create.py': `
from wigglystuff import Slider2D

from portico.widgets import serve

Wrong = serve(Slider2D, create=lambda config: "not a widget")
`,
  // anywidget imports an _esm that is a URL; the served module does the same.
  'remote_esm.py': `
import anywidget

from portico.widgets import serve


class Remote(anywidget.AnyWidget):
    _esm = "https://example.org/widgets/remote.js"


Served = serve(Remote)
`,
  'not_a_widget.py': `
from portico.widgets import serve


class Plain:
    pass


Served = serve(Plain)
`,
};

let url: string;

beforeAll(async () => {
  const project = await tempProject({ ...(await fixtureFiles('anywidgets')), ...EXTRA });
  ({ url } = await gateway({ project, python: TEST_PYTHON }));
}, 60_000);
afterAll(cleanup);

describe('serving a published anywidget', { timeout: 60_000 }, () => {
  it('the synced traits the widget class adds are the state; constructor defaults apply', async () => {
    const client = await Client.open(url);
    await client.connect('scatter');
    const state = await client.request({ type: 'widget_get' });
    expect(state.payload.state).toEqual({ data: [], brushsize: 40, width: 800, height: 400, n_classes: 4 });
    client.close();
  });

  it('config fields are constructor keyword arguments', async () => {
    const client = await Client.open(url);
    await client.connect('slider', { version: [{ x: 0.25, y: -0.5 }] });
    const state = await client.request({ type: 'widget_get' });
    expect(state.payload.state).toMatchObject({ x: 0.25, y: -0.5, x_bounds: [-1, 1], width: 400 });
    client.close();
  });

  it('a change from one client sets the trait in Python and reaches every client with what the widget kept', async () => {
    const a = await Client.open(url);
    const b = await Client.open(url);
    const { payload: info } = await a.connect('knob');
    await b.connect(info.uuid);
    const reply = await a.request({ type: 'widget_set', changes: { value: 5 } });
    // the observer's derived change travels with the change that caused it
    expect(reply.payload.changes).toEqual({ value: 5, double: 10 });
    const seen = await b.waitFor((f) => f.type === 'widget_change');
    expect(seen.payload.changes).toEqual({ value: 5, double: 10 });
    const state = await api({ url }, 'POST', '/v1/interfaces/call', { target: info.uuid, method: 'widget_state' });
    expect(state.body.payload).toEqual({ value: 5, double: 10 });
    a.close();
    b.close();
  });

  it('traitlets validation, a wrong type and an unknown key are invalid_argument; the state stays as it was', async () => {
    const client = await Client.open(url);
    await client.connect('knob', { version: [{ value: 3 }] });
    for (const changes of [{ value: 101 }, { value: 'three' }, { hidden: 1 }, { nope: 1 }]) {
      const refused = await client.request({ type: 'widget_set', changes });
      expect(refused, JSON.stringify(changes)).toMatchObject({ type: 'error', payload: { code: 'invalid_argument' } });
    }
    const bounds = await Client.open(url);
    await bounds.connect('slider');
    const inverted = await bounds.request({ type: 'widget_set', changes: { x_bounds: [1, 0] } });
    expect(inverted.payload).toMatchObject({ code: 'invalid_argument', message: expect.stringContaining('Min must be less than max') });
    expect((await bounds.request({ type: 'widget_get' })).payload.state.x_bounds).toEqual([-1, 1]);
    expect((await client.request({ type: 'widget_get' })).payload.state).toEqual({ value: 3, double: 6 });
    client.close();
    bounds.close();
  });

  it('a trait set in Python (a remote method) is pushed to every attached client', async () => {
    const a = await Client.open(url);
    const { payload: info } = await a.connect('knob', { version: [{ value: 10 }] });
    const res = await api({ url }, 'POST', '/v1/interfaces/call', { target: info.uuid, method: 'turn', args: [4] });
    expect(res.body.payload).toBe(14);
    await a.waitFor((f) => f.type === 'widget_change' && f.payload.changes.value === 14);
    await a.waitFor((f) => f.type === 'widget_change' && f.payload.changes.double === 28);
    a.close();
  });

  it('on_msg handlers answer widget_msg through send(), buffers included; a handler that raises fails that message only', async () => {
    const a = await Client.open(url);
    const b = await Client.open(url);
    const { payload: info } = await a.connect('knob', { version: [{ value: 20 }] });
    await b.connect(info.uuid);
    const broken = await a.request({ type: 'widget_msg', content: 'boom' });
    expect(broken.payload).toMatchObject({ code: 'call_failed', message: expect.stringContaining('the knob broke') });
    a.send({ type: 'widget_msg', content: { ping: 1 }, buffers: [Buffer.from([7, 7, 7]).toString('base64')] });
    for (const client of [a, b]) {
      const pushed = await client.waitFor((f) => f.type === 'widget_msg' && f.id === undefined);
      expect(pushed.payload.content).toEqual({ echo: { ping: 1 }, sizes: [3] });
      expect(pushed.payload.buffers.map((buffer: string) => [...Buffer.from(buffer, 'base64')])).toEqual([[1, 2]]);
    }
    a.close();
    b.close();
  });

  it('a client leaving only detaches; the widget of a released instance is closed and let go', async () => {
    const keeper = await Client.open(url);
    const { payload: kept } = await keeper.connect('knob', { version: [{ value: 50 }] });
    await keeper.request({ type: 'widget_get' });
    const alive = async () => (await api({ url }, 'POST', '/v1/interfaces/call', { target: kept.uuid, method: 'knobs_alive' })).body.payload as number;
    const before = await alive();
    const visitors = await Promise.all([51, 52, 53].map(async (value) => {
      const client = await Client.open(url);
      await client.connect('knob', { version: [{ value }] });
      await client.request({ type: 'widget_get' });
      return client;
    }));
    expect(await alive()).toBe(before + 3);
    const uuids = visitors.map((client) => client.frames.find((f) => f.type === 'connected')!.payload.uuid as string);
    for (const client of visitors) client.close();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await alive()).toBe(before + 3); // their instances live on (docs/writing/lifetime.md)
    for (const uuid of uuids) expect((await api({ url }, 'POST', `/v1/interfaces/${uuid}/release`)).body).toEqual({ uuid, released: true });
    await expect.poll(alive, { timeout: 20_000 }).toBe(before);
    keeper.close();
  });

  it('a binary trait travels as a buffer both ways and comes back to a client that reconnects', async () => {
    const a = await Client.open(url);
    const { payload: info } = await a.connect('picture');
    const image = Buffer.from([9, 8, 7, 6, 5]);
    const set = await a.request({ type: 'widget_set', changes: { image: null }, buffer_paths: [['image']], buffers: [image.toString('base64')] });
    expect(set.payload).toMatchObject({ changes: { image: null, size: 5 }, buffer_paths: [['image']], buffers: [image.toString('base64')] });
    // Python set from a method: the bytes reach the page as a buffer of the change
    await api({ url }, 'POST', '/v1/interfaces/call', { target: info.uuid, method: 'fill', args: [3] });
    const pushed = await a.waitFor((f) => f.type === 'widget_change' && f.id === undefined && f.payload.buffer_paths?.length === 1);
    expect(pushed.payload.buffers).toEqual([Buffer.from([0, 1, 2]).toString('base64')]);
    const again = await Client.open(url);
    await again.connect(info.uuid);
    const state = await again.request({ type: 'widget_get' });
    expect(state.payload).toEqual({ state: { image: null, size: 3 }, buffer_paths: [['image']], buffers: [Buffer.from([0, 1, 2]).toString('base64')] });
    a.close();
    again.close();
  });

  it('a create() that returns something else than the widget class fails the instance with a clear message', async () => {
    const client = await Client.open(url);
    await client.connect('wrong_create');
    const refused = await client.request({ type: 'widget_get' });
    expect(refused.payload).toMatchObject({ code: 'call_failed', message: expect.stringContaining('create() returned str, not a Slider2D') });
    client.close();
  });

  it("the widget class's _esm and _css are the module's assets, files from site-packages included", async () => {
    const esm = await fetch(`${url}/v1/project/knob/widget/esm`);
    expect(esm.status).toBe(200);
    expect(await esm.text()).toContain("model.get('value')");
    expect(await (await fetch(`${url}/v1/project/knob/widget/css`)).text()).toBe('.knob { color: red; }');
    const drawn = await fetch(`${url}/v1/project/scatter/widget/css`);
    expect(drawn.status).toBe(200);
    expect((await drawn.text()).length).toBeGreaterThan(1000);
  });

  it("a served module's schema: the widget's description, the subclass's config and methods, and a widget", async () => {
    const schema = (await api({ url }, 'GET', '/v1/project/knob')).body;
    expect(schema).toMatchObject({
      kind: 'Knob',
      doc: 'A knob whose double follows its value.',
      config_schema: { properties: { value: { type: 'integer', default: 1 } } },
      widget: { esm: true, css: true },
    });
    expect(schema.methods.map((method: { name: string }) => method.name)).toEqual(['knobs_alive', 'turn']);
  });

  it('an _esm that is a URL is served as a module that imports that URL, as anywidget loads it', async () => {
    const esm = await (await fetch(`${url}/v1/project/remote_esm/widget/esm`)).text();
    expect(esm).toBe('const widget = await import("https://example.org/widgets/remote.js");\nexport default widget.default ?? widget;\n');
  });

  it('serve() of a class that is not an AnyWidget makes the module fail to import with a clear message', async () => {
    const client = await Client.open(url);
    const refused = await client.request({ type: 'connect', target: 'not_a_widget' });
    expect(refused.payload).toMatchObject({ code: 'module_error', message: expect.stringContaining('anywidget.AnyWidget subclass') });
    client.close();
  });
});
