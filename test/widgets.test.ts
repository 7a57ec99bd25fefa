/**
 * Widgets through the gateway, from Node: state lives in Python, changes go through
 * widget_update and reach every attached client, pushes and messages flow both ways, assets are
 * served with ETags, and an edit on disk tells attached clients to hot-reload.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, Client, cleanup, gateway, tempProject } from './helpers.js';

const EXTRA = {
  'readonly_view.py': `
from portico import Interface


class ReadonlyView(Interface):
    """A widget that only shows its config."""

    class Config:
        title: str = "hello"

    _esm = "export default { render({ model, el }) { el.textContent = model.get('title'); } };"
`,
  'chatty.py': `
from portico import Interface


class Chatty(Interface):
    """Answers widget messages and pushes them."""

    def widget_message(self, content, buffers):
        if content == "silent":
            return None
        self.push_widget_message({"heard": content, "sizes": [len(b) for b in buffers]})
        return {"echo": content, "bytes": [list(b) for b in buffers]}

    def shout(self, text):
        self.push_widget_message({"shout": text})
        return True
`,
};

let project: string;
let url: string;

beforeAll(async () => {
  project = await tempProject(EXTRA);
  ({ url } = await gateway({ project }));
});
afterAll(cleanup);

describe('widget state and changes', () => {
  it('widget_get answers the Python state; widget_set goes through widget_update and reaches every client', async () => {
    const a = await Client.open(url);
    const b = await Client.open(url);
    const { payload: info } = await a.connect('counter', { version: [{ start: 5 }] });
    await b.connect(info.uuid);

    const state = await a.request({ type: 'widget_get' });
    expect(state).toMatchObject({ type: 'widget_state', payload: { state: { count: 5, step: 1 } } });

    const reply = await a.request({ type: 'widget_set', changes: { count: 8 } });
    expect(reply).toMatchObject({ type: 'widget_change', payload: { changes: { count: 8 } } });
    const seen = await b.waitFor((f) => f.type === 'widget_change');
    expect(seen).toEqual({ type: 'widget_change', payload: { changes: { count: 8 } } });
    // the setter got exactly one answer (its own), not the broadcast as well
    expect(a.frames.filter((f) => f.type === 'widget_change')).toHaveLength(1);

    // Python normalized: never below start
    const low = await b.request({ type: 'widget_set', changes: { count: -3 } });
    expect(low.payload.changes).toEqual({ count: 5 });
    await a.waitFor((f) => f.type === 'widget_change' && f.payload.changes.count === 5);

    // the instance itself changed (the same instance answers calls)
    expect((await a.request({ type: 'call', method: 'value' })).payload).toBe(5);
    a.close();
    b.close();
  });

  it('a server push (push_widget_change from a REST call) reaches every attached client', async () => {
    const a = await Client.open(url);
    const b = await Client.open(url);
    const { payload: info } = await a.connect('counter', { version: [{ start: 100 }] });
    await b.connect(info.uuid);
    const res = await api({ url }, 'POST', '/v1/interfaces/call', { target: info.uuid, method: 'add', args: [2] });
    expect(res.status).toBe(200);
    for (const client of [a, b]) {
      const change = await client.waitFor((f) => f.type === 'widget_change');
      expect(change).toEqual({ type: 'widget_change', payload: { changes: { count: 102 } } });
    }
    a.close();
    b.close();
  });

  it('a rejected change answers an error with a stable code and leaves the state as it was', async () => {
    const client = await Client.open(url);
    await client.connect('readonly_view');
    const rejected = await client.request({ type: 'widget_set', changes: { title: 'changed' } });
    expect(rejected).toMatchObject({ type: 'error', payload: { code: 'read_only' } });
    const state = await client.request({ type: 'widget_get' });
    expect(state.payload.state).toEqual({ title: 'hello' });

    await client.request({ type: 'close' }).catch(() => undefined);
    const counter = await Client.open(url);
    await counter.connect('counter');
    const invalid = await counter.request({ type: 'widget_set', changes: { step: 3 } });
    expect(invalid).toMatchObject({ type: 'error', payload: { code: 'invalid_argument' } });
    expect((await counter.request({ type: 'widget_get' })).payload.state.step).toBe(1);
    counter.close();
  });

  it('widget_msg reaches widget_message with its buffers; replies and pushes come back as widget_msg', async () => {
    const a = await Client.open(url);
    const b = await Client.open(url);
    const { payload: info } = await a.connect('chatty');
    await b.connect(info.uuid);
    const reply = await a.request({ type: 'widget_msg', content: { ping: 1 }, buffers: [Buffer.from([1, 2, 3]).toString('base64')] });
    expect(reply).toEqual({ type: 'widget_msg', id: reply.id, payload: { content: { echo: { ping: 1 }, bytes: [[1, 2, 3]] }, buffers: [] } });
    const pushed = await b.waitFor((f) => f.type === 'widget_msg');
    expect(pushed).toEqual({ type: 'widget_msg', payload: { content: { heard: { ping: 1 }, sizes: [3] }, buffers: [] } });
    // widget_message returned None: no reply, but the message is answered once (widget_msg_done)
    const id = a.send({ type: 'widget_msg', content: 'silent' });
    expect(await a.waitFor((f) => f.id === id)).toEqual({ type: 'widget_msg_done', id });
    await a.request({ type: 'ping' });
    expect(a.replies(id)).toHaveLength(1);
    // a push from a method call
    await a.request({ type: 'call', method: 'shout', args: ['hey'] });
    await b.waitFor((f) => f.type === 'widget_msg' && f.payload.content.shout === 'hey');
    a.close();
    b.close();
  });

  it('widget frames before connect answer not_connected', async () => {
    const client = await Client.open(url);
    const reply = await client.request({ type: 'widget_get' });
    expect(reply.payload.code).toBe('not_connected');
    client.close();
  });
});

describe('widget assets', () => {
  it('serves the sibling .widget.js and .widget.css with content types and strong ETags; 304 when unchanged', async () => {
    const esm = await fetch(`${url}/v1/project/counter/widget/esm`);
    expect(esm.status).toBe(200);
    expect(esm.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const etag = esm.headers.get('etag')!;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(await esm.text()).toBe(await readFile(path.join(project, 'counter.widget.js'), 'utf8'));
    const again = await fetch(`${url}/v1/project/counter/widget/esm`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    const css = await fetch(`${url}/v1/project/counter/widget/css`);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(await css.text()).toContain('.counter-button');
  });

  it('serves inline _esm; 404 unknown_module for an unknown module; 404 not_found for a module without a widget, a missing stylesheet; 422 for an unknown asset', async () => {
    const inline = await fetch(`${url}/v1/project/readonly_view/widget/esm`);
    expect(inline.status).toBe(200);
    expect(await inline.text()).toContain("model.get('title')");
    for (const [pathname, status, code] of [
      ['/v1/project/nope/widget/esm', 404, 'unknown_module'],
      ['/v1/project/slow/widget/esm', 404, 'not_found'],
      ['/v1/project/readonly_view/widget/css', 404, 'not_found'],
      ['/v1/project/counter/widget/html', 422, 'validation_error'],
    ] as const) {
      const res = await api({ url }, 'GET', pathname);
      expect([res.status, res.body.code], pathname).toEqual([status, code]);
    }
  });

  it('an edit of the widget file tells attached clients to reload, and the next fetch serves the new source', async () => {
    const other = await tempProject();
    const running = await gateway({ project: other });
    const client = await Client.open(running.url);
    await client.connect('counter');
    const first = await fetch(`${running.url}/v1/project/counter/widget/esm`);
    const etag = first.headers.get('etag');
    const file = path.join(other, 'counter.widget.js');
    await writeFile(file, `${await readFile(file, 'utf8')}\n// edited\n`);
    const reload = await client.waitFor((f) => f.type === 'widget_reload');
    expect(reload.payload.asset).toBe('esm');
    const next = await fetch(`${running.url}/v1/project/counter/widget/esm`, { headers: { 'if-none-match': etag! } });
    expect(next.status).toBe(200);
    expect(next.headers.get('etag')).toBe(reload.payload.etag);
    expect(await next.text()).toContain('// edited');
    client.close();
  });
});
