/**
 * A widget hook called by name (`widget_state`, `widget_update`, `widget_message`), as a client of
 * the reference server calls it: the same answers over REST (POST /v1/interfaces/call) and over
 * the WebSocket (a `call` frame), through a real gateway and worker.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { api, Client, cleanup, gateway, tempProject } from './helpers.js';

afterAll(cleanup);

const ECHOER = 'from portico import Interface\n\nclass Echoer(Interface):\n    def widget_message(self, content, buffers):\n        return {"echo": content}\n';

/** The calls, each as [interface, method, args?, kwargs?]: the counter's hooks and methods, then the echoer's. */
const CALLS: Array<[string, string, unknown[]?, Record<string, unknown>?]> = [
  ['counter', 'widget_state'],
  ['counter', 'widget_update', [{ count: 5 }]],
  ['counter', 'value'],
  ['counter', 'widget_update', [], { changes: { count: 7 } }],
  ['counter', 'widget_state'],
  ['counter', 'widget_update', ['seven']],
  ['counter', '_private'],
  ['echoer', 'widget_message', [{ hi: 1 }]],
  ['echoer', 'widget_message', [], { content: 'x' }],
  ['echoer', 'widget_update', [{ x: 1 }]],
];

/** What a client sees of each call: its payload, or its error code. */
const EXPECTED = [
  { payload: { count: 0, step: 1 } },
  { payload: { count: 5 } },
  { payload: 5 },
  { payload: { count: 7 } },
  { payload: { count: 7, step: 1 } },
  { error: 'invalid_argument' },
  { error: 'forbidden' },
  { payload: { echo: { hi: 1 } } },
  { payload: { echo: 'x' } },
  { error: 'read_only' },
];

describe('widget hooks called by name', () => {
  it('answer the same over REST and over the WebSocket', async () => {
    const g = await gateway({ project: await tempProject({ 'echoer.py': ECHOER }) });

    const rest = [];
    for (const [module, method, args, kwargs] of CALLS) {
      const target = `rest-${module}`;
      await api(g, 'POST', '/v1/interfaces', { target: module, uuid: target });
      const { status, body } = await api(g, 'POST', '/v1/interfaces/call', { target, method, ...(args ? { args } : {}), ...(kwargs ? { kwargs } : {}) });
      rest.push(status === 200 ? { payload: body.payload } : { error: body.detail?.code ?? body.code });
    }

    const sockets: Record<string, Client> = {};
    for (const module of ['counter', 'echoer']) {
      sockets[module] = await Client.open(g.url);
      await sockets[module]!.connect(module, { uuid: `ws-${module}` });
    }
    const ws = [];
    for (const [module, method, args, kwargs] of CALLS) {
      const reply = await sockets[module]!.request({ type: 'call', method, ...(args ? { args } : {}), ...(kwargs ? { kwargs } : {}) });
      ws.push(reply.type === 'result' ? { payload: reply.payload } : { error: reply.payload.code });
    }

    expect(rest).toEqual(EXPECTED);
    expect(ws).toEqual(EXPECTED);
  });
});
