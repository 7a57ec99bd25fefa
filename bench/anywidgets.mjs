// Issue 20: published anywidgets served by portico.widgets.serve, beside a hand-written widget on
// the same gateway and socket conditions. A widget_set of drawdata's ScatterWidget (ipywidgets'
// set_state, traitlets validation) against the demo counter's widget_set; a quak query (DuckDB,
// Arrow IPC reply pushed with a buffer) against a plain call. Needs the test venv (anywidget,
// drawdata, quak): `npm test -- test/anywidgets.test.ts` or `npm run provision` makes it.
import { cp, readdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { openWs } from './floors.mjs';
import { ROOT, startGateway, summarize, us } from './lib.mjs';

const VENV_PYTHON = process.env.PORTICO_TEST_PYTHON ?? path.join(ROOT, '.cache/test-venv/bin/python');
const FIXTURES = path.join(ROOT, 'test/fixtures/anywidgets');

/** A socket connected to `target`; `ask(frame, done)` sends and resolves with the first frame `done` accepts. */
async function attach(url, target) {
  const ws = await openWs(`${url.replace(/^http/, 'ws')}/v1/interfaces/ws`);
  let waiting;
  ws.on('message', (data, binary) => {
    if (binary || !waiting) return;
    const frame = JSON.parse(data);
    if (waiting.done(frame)) {
      const { resolve } = waiting;
      waiting = undefined;
      resolve(frame);
    }
  });
  const ask = (frame, done) => new Promise((resolve) => {
    waiting = { done, resolve };
    ws.send(JSON.stringify(frame));
  });
  const connected = await ask({ type: 'connect', id: 'c', target }, (f) => f.id === 'c');
  if (connected.type !== 'connected') throw new Error(JSON.stringify(connected));
  return { ask, close: () => ws.close() };
}

/** µs of `count` rounds of `step(i)`, alternating between the steps so each sees the same conditions. */
async function alternate(count, steps) {
  const samples = steps.map(() => []);
  for (let i = 0; i < count; i++) {
    for (const [k, step] of steps.entries()) {
      const t0 = process.hrtime.bigint();
      const frame = await step(i);
      if (frame.type === 'error') throw new Error(JSON.stringify(frame));
      samples[k].push(us(process.hrtime.bigint() - t0));
    }
  }
  return samples.map((s) => summarize(s.slice(Math.floor(count / 10))));
}

/** Rows for `npm run bench -- anywidgets`, or one row saying why there are none. */
export async function anywidgetsBench(demoDir) {
  if (!existsSync(VENV_PYTHON)) return [{ name: `no test venv at ${VENV_PYTHON} (npm run provision)`, value: NaN }];
  for (const name of await readdir(FIXTURES)) await cp(path.join(FIXTURES, name), path.join(demoDir, name));
  const gw = await startGateway(demoDir, ['--python', VENV_PYTHON]);
  try {
    const counter = await attach(gw.url, 'counter');
    const scatter = await attach(gw.url, 'scatter');
    const [plainSet, servedSet] = await alternate(2000, [
      (i) => counter.ask({ type: 'widget_set', id: i, changes: { count: i } }, (f) => f.id === i),
      (i) => scatter.ask({ type: 'widget_set', id: i, changes: { brushsize: 10 + (i % 50) } }, (f) => f.id === i),
    ]);
    const table = await attach(gw.url, 'table');
    const [call, query] = await alternate(300, [
      (i) => counter.ask({ type: 'call', id: `v${i}`, method: 'value' }, (f) => f.id === `v${i}`),
      // quak's own message: 100 rows as Arrow IPC, answered by a widget_msg push carrying the buffer
      (i) => table.ask(
        { type: 'widget_msg', id: `q${i}`, content: { type: 'arrow', uuid: `q${i}`, sql: `SELECT * FROM df LIMIT 100 OFFSET ${i * 100}` } },
        (f) => f.type === 'widget_msg' && f.payload?.content?.uuid === `q${i}`,
      ),
    ]);
    for (const socket of [counter, scatter, table]) socket.close();
    return [
      { name: 'demo counter widget_set p50 (hand-written hooks)', value: plainSet.p50, unit: ' µs' },
      { name: 'served ScatterWidget widget_set p50', value: servedSet.p50, unit: ' µs', floor: plainSet.p50 },
      { name: 'served ScatterWidget widget_set p99', value: servedSet.p99, unit: ' µs', floor: plainSet.p99 },
      { name: 'call RTT p50 (counter.value)', value: call.p50, unit: ' µs' },
      { name: 'quak query, 100 rows as Arrow, p50', value: query.p50, unit: ' µs', floor: call.p50 },
      { name: 'quak query, 100 rows as Arrow, p99', value: query.p99, unit: ' µs', floor: call.p99 },
    ];
  } finally {
    await gw.stop();
  }
}
