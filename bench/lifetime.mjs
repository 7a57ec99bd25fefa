// Issue 28: how fast a live instance comes back. A worker killed (SIGKILL) until the first call is
// answered again and until a page holds its restored widget state; a wedged worker (SIGSTOP)
// until /v1/health says degraded and until it is ok again; what saving a 1 MB widget state costs,
// beside the widget_set round trip of the same 1 MB. Floors from the same run: starting a bare
// Python interpreter, the liveness bound the wedge check waits for, the widget_set round trip.
import { execFileSync } from 'node:child_process';
import { stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { openWs } from './floors.mjs';
import { medianOf, startGateway } from './lib.mjs';

const PYTHON = process.env.PORTICO_PYTHON || 'python3';
/** --worker-liveness of the bench gateway (s): the wedge figures wait for it. */
const LIVENESS_S = 2;
const STATE_BYTES = 1024 * 1024;
const SAVES = 20;

const BOARD = `
import os, signal
from portico import Interface

class Board(Interface):
    def __init__(self):
        self.title = "untitled"
        self.image = b""

    def widget_state(self):
        return {"title": self.title, "image": self.image}

    def widget_update(self, changes):
        if "title" in changes:
            self.title = str(changes["title"])
        if "image" in changes:
            self.image = bytes(changes["image"])

    def ping(self):
        return "pong"

    def freeze(self):
        os.kill(os.getpid(), signal.SIGSTOP)
`;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A socket with a queue of received frames (binary ones attached to the frame that announced them). */
async function client(url, target) {
  const ws = await openWs(`${url.replace(/^http/, 'ws')}/v1/interfaces/ws`);
  const frames = [];
  let waiting;
  let last; // the last text frame: binary frames right after it are its buffers
  ws.on('message', (data, binary) => {
    if (binary) (last.attached ??= []).push(data);
    else frames.push((last = JSON.parse(String(data))));
    waiting?.();
  });
  const next = async (predicate) => {
    for (;;) {
      const i = frames.findIndex(predicate);
      if (i >= 0) {
        const [frame] = frames.splice(i, 1);
        if (frame.binary_buffers) while ((frame.attached?.length ?? 0) < frame.binary_buffers) await new Promise((r) => (waiting = r));
        return frame;
      }
      await new Promise((r) => (waiting = r));
    }
  };
  let id = 0;
  const request = async (frame) => {
    const mine = ++id;
    ws.send(JSON.stringify({ ...frame, id: mine }));
    return next((f) => f.id === mine);
  };
  const connected = await request({ type: 'connect', target, buffers: 'binary' });
  if (connected.type !== 'connected') throw new Error(JSON.stringify(connected));
  return { ws, next, request, uuid: connected.payload.uuid, close: () => ws.close() };
}

async function workerPid(url) {
  const { workers } = await (await fetch(`${url}/v1/projects`)).json();
  return workers[0]?.pid;
}

/** One kill: ms until the page was told, until a call answered, until the page read the restored state. */
async function afterDeath(url, page, caller) {
  const pid = await workerPid(url);
  const t0 = performance.now();
  process.kill(pid, 'SIGKILL');
  const told = page.next((f) => f.type === 'instance_restarted').then(async () => {
    const toldMs = performance.now() - t0;
    const state = await page.request({ type: 'widget_get' });
    if (state.payload.state.title !== 'kept') throw new Error(`state not restored: ${JSON.stringify(state.payload.state)}`);
    return { toldMs, restoredMs: performance.now() - t0 };
  });
  let answered;
  for (;;) {
    const reply = await caller.request({ type: 'call', method: 'value' });
    if (reply.type === 'result') {
      answered = performance.now() - t0;
      break;
    }
    await sleep(1);
  }
  const { toldMs, restoredMs } = await told;
  // Let the new worker stay up past the crash-loop window before the next kill.
  await sleep(10_500);
  return { toldMs, answered, restoredMs };
}

async function health(url) {
  return (await (await fetch(`${url}/v1/health`)).json()).status;
}

async function afterWedge(url) {
  const caller = await client(url, 'board');
  const t0 = performance.now();
  caller.ws.send(JSON.stringify({ type: 'call', id: 'freeze', method: 'freeze' }));
  while ((await health(url)) !== 'degraded') await sleep(20);
  const degraded = performance.now() - t0;
  while ((await health(url)) !== 'ok') await sleep(20);
  const recovered = performance.now() - t0;
  caller.close();
  await sleep(10_500);
  return { degraded, recovered };
}

/** widget_set of a 1 MB image, then the time until the file on disk holds it; and the file's size. */
async function saveCost(url, project) {
  const page = await client(url, 'board');
  const file = path.join(project, '.portico/interfaces', page.uuid, '.widget-state');
  const image = Buffer.alloc(STATE_BYTES, 7);
  const rtts = [];
  const durable = [];
  let size = 0;
  for (let i = 0; i < SAVES; i++) {
    const before = await stat(file).then((s) => s.mtimeMs, () => 0);
    const t0 = performance.now();
    page.ws.send(JSON.stringify({ type: 'widget_set', id: `s${i}`, changes: { title: `t${i}`, image: null }, buffer_paths: [['image']], binary_buffers: 1 }));
    page.ws.send(image);
    const reply = await page.next((f) => f.id === `s${i}`);
    if (reply.type !== 'widget_change') throw new Error(JSON.stringify(reply));
    rtts.push(performance.now() - t0);
    for (;;) {
      const now = await stat(file).then((s) => s, () => undefined);
      if (now && now.mtimeMs !== before) {
        size = now.size;
        break;
      }
      await sleep(1);
    }
    durable.push(performance.now() - t0);
    await sleep(100);
  }
  page.close();
  const mid = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  return { rtt: mid(rtts), durable: mid(durable), size };
}

function pythonStartMs() {
  const t0 = performance.now();
  execFileSync(PYTHON, ['-c', 'pass']);
  return performance.now() - t0;
}

export async function lifetimeBench(project, runs) {
  await writeFile(path.join(project, 'board.py'), BOARD);
  const gw = await startGateway(project, ['--worker-liveness', String(LIVENESS_S)]);
  try {
    const page = await client(gw.url, 'board');
    await page.request({ type: 'widget_set', changes: { title: 'kept' } });
    const caller = await client(gw.url, 'counter');
    await sleep(200);
    const floorStart = await medianOf(5, pythonStartMs);
    const death = await medianOf(runs, () => afterDeath(gw.url, page, caller));
    const wedge = await medianOf(runs, () => afterWedge(gw.url));
    page.close();
    caller.close();
    const save = await saveCost(gw.url, project);
    return [
      { name: 'worker SIGKILL -> pages told (instance_restarted)', value: death.toldMs, unit: ' ms' },
      { name: 'worker SIGKILL -> first call answered again', value: death.answered, unit: ' ms', floor: floorStart },
      { name: 'worker SIGKILL -> page holds its restored widget state', value: death.restoredMs, unit: ' ms', floor: floorStart },
      { name: `worker SIGSTOP -> /v1/health degraded (--worker-liveness ${LIVENESS_S})`, value: wedge.degraded, unit: ' ms', floor: LIVENESS_S * 1000 },
      { name: 'worker SIGSTOP -> /v1/health ok again (replaced)', value: wedge.recovered, unit: ' ms', floor: LIVENESS_S * 1000 },
      { name: '1 MB widget_set -> widget_change round trip', value: save.rtt, unit: ' ms' },
      { name: '1 MB widget_set -> state file on disk (saved)', value: save.durable, unit: ' ms', floor: save.rtt },
      { name: 'state file bytes for a 1 MB state', value: save.size, unit: ' B', floor: STATE_BYTES },
    ];
  } finally {
    await gw.stop();
  }
}
