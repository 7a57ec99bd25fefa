// Issue 6: widget_set -> widget_change round trip beside the call round trip on the same socket
// and the same instance, from Node and from Chromium (when it is installed).
import { existsSync } from 'node:fs';
import { openWs } from './floors.mjs';
import { summarize, us } from './lib.mjs';

const CHROMIUM = process.env.PORTICO_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Alternates a call and a widget_set so both see the same conditions; returns µs samples of each. */
async function nodeLoop(url, count) {
  const ws = await openWs(`${url.replace(/^http/, 'ws')}/v1/interfaces/ws`);
  const next = () => new Promise((resolve) => ws.once('message', (data) => resolve(JSON.parse(data))));
  ws.send(JSON.stringify({ type: 'connect', id: 0, target: 'counter', version: [{ start: 0 }] }));
  const connected = await next();
  if (connected.type !== 'connected') throw new Error(JSON.stringify(connected));
  const calls = [];
  const sets = [];
  for (let i = 0; i < count; i++) {
    let t0 = process.hrtime.bigint();
    ws.send(JSON.stringify({ type: 'call', id: i, method: 'value' }));
    if ((await next()).type !== 'result') throw new Error('call failed');
    calls.push(us(process.hrtime.bigint() - t0));
    t0 = process.hrtime.bigint();
    ws.send(JSON.stringify({ type: 'widget_set', id: i, changes: { count: i } }));
    if ((await next()).type !== 'widget_change') throw new Error('widget_set failed');
    sets.push(us(process.hrtime.bigint() - t0));
  }
  ws.close();
  return { call: summarize(calls.slice(200)), set: summarize(sets.slice(200)) };
}

async function browserLoop(url, count) {
  if (!existsSync(CHROMIUM)) return undefined;
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage();
    await page.goto(`${url}/v1/health`);
    return await page.evaluate(
      async ({ wsUrl, count }) => {
        const ws = new WebSocket(wsUrl);
        await new Promise((resolve) => (ws.onopen = resolve));
        const next = () => new Promise((resolve) => (ws.onmessage = (e) => resolve(JSON.parse(e.data))));
        ws.send(JSON.stringify({ type: 'connect', id: 0, target: 'counter', version: [{ start: 0 }] }));
        await next();
        const calls = [];
        const sets = [];
        for (let i = 0; i < count; i++) {
          let t0 = performance.now();
          ws.send(JSON.stringify({ type: 'call', id: i, method: 'value' }));
          await next();
          calls.push((performance.now() - t0) * 1000);
          t0 = performance.now();
          ws.send(JSON.stringify({ type: 'widget_set', id: i, changes: { count: i } }));
          await next();
          sets.push((performance.now() - t0) * 1000);
        }
        ws.close();
        return { calls, sets };
      },
      { wsUrl: `${url.replace(/^http/, 'ws')}/v1/interfaces/ws`, count },
    ).then(({ calls, sets }) => ({ call: summarize(calls.slice(200)), set: summarize(sets.slice(200)) }));
  } finally {
    await browser.close();
  }
}

export async function widgetsBench(url) {
  const rows = [];
  const fromNode = await nodeLoop(url, 3000);
  rows.push(
    { name: 'Node: call RTT p50 (counter.value)', value: fromNode.call.p50, unit: ' µs' },
    { name: 'Node: widget_set -> widget_change p50', value: fromNode.set.p50, unit: ' µs', floor: fromNode.call.p50, target: 1.2 },
    { name: 'Node: widget_set -> widget_change p99', value: fromNode.set.p99, unit: ' µs', floor: fromNode.call.p99, target: 1.2 },
  );
  const fromBrowser = await browserLoop(url, 2000);
  if (fromBrowser) {
    rows.push(
      { name: 'Chromium: call RTT p50', value: fromBrowser.call.p50, unit: ' µs' },
      { name: 'Chromium: widget_set -> widget_change p50', value: fromBrowser.set.p50, unit: ' µs', floor: fromBrowser.call.p50, target: 1.2 },
      { name: 'Chromium: widget_set -> widget_change p99', value: fromBrowser.set.p99, unit: ' µs', floor: fromBrowser.call.p99, target: 1.2 },
    );
  } else {
    rows.push({ name: `Chromium: not installed at ${CHROMIUM} (npm run provision)`, value: NaN });
  }
  return rows;
}
