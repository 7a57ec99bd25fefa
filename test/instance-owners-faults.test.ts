/**
 * Several gateways, one live instance, when things go wrong (docs/operating/several-gateways.md): the
 * owning gateway killed with kill -9 in the middle of a stream or of a forwarded REST call, the
 * owner stopped gracefully, the PostgreSQL index lost and back, and a client that tries to pass
 * as a gateway. Gateways that die run as `portico serve` processes of their own (a process group
 * with their Python worker, killed as a whole); the gateway that survives runs in the test.
 */
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, Client, gateway, ROOT, tempProject } from './helpers.js';
import { startPostgres, type TestPostgres } from './support/postgres.js';
import { freePort, killGroup, launch, type Launched } from './support/processes.js';

const TIMEOUT = 120_000;
const BIN = path.join(ROOT, 'packages/server/bin/portico.js');
const TOKEN = 'faults-api-token';
const SECRET = 'faults-peer-secret';
const AUTH = { authorization: `Bearer ${TOKEN}` };
/** The lease time of every gateway here (seconds): takeovers happen within it. */
const LEASE_SECONDS = 3;

/** A module whose stream goes on until its gateway dies, and whose `hold` call never ends by itself. */
const DRIP = `"""Calls that outlive their gateway."""
import pathlib
import time

from portico import Interface


class Drip(Interface):
    """Drips numbers."""

    def drip(self):
        """Yields a number every 50 ms, for an hour."""
        for i in range(72_000):
            yield i
            time.sleep(0.05)

    def hold(self, marker: str) -> str:
        """Writes \`marker\`, then waits for an hour."""
        pathlib.Path(marker).write_text("started")
        time.sleep(3600)
        return "done"

    def ping(self) -> str:
        return "pong"
`;

/** A call that takes as long as it is asked to. */
const NAP = `"""Calls that take their time."""
import time

from portico import Interface


class Nap(Interface):
    def nap(self, seconds: float) -> str:
        time.sleep(seconds)
        return "rested"
`;

let postgres: TestPostgres;
const served: Launched[] = [];

beforeAll(async () => {
  postgres = await startPostgres();
}, TIMEOUT);

afterAll(async () => {
  for (const launched of served) killGroup(launched.group);
  await cleanup();
  await postgres?.close();
}, TIMEOUT);

/** The environment without the PORTICO_* variables the test run itself may have. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('PORTICO_')));
}

/** `portico serve` on `project` and the shared index, as an operator starts it; its URL once it printed it. */
async function serve(project: string, extra: string[] = []): Promise<Launched & { url: string }> {
  const args = [BIN, 'serve', project, '--port', '0', '--store', postgres.url, '--instance-lease', String(LEASE_SECONDS), '--api-token', TOKEN, '--peer-secret', SECRET, ...extra];
  const launched = launch(process.execPath, args, { cwd: ROOT, env: cleanEnv() });
  served.push(launched);
  const url = (await launched.printed(/API (http:\/\/\S+)\/v1/))[1]!;
  return { ...launched, url };
}

/** A gateway in this process on the same project and index. */
const inProcess = (project: string, extra: Record<string, unknown> = {}) =>
  gateway({ project, store: postgres.url, apiToken: TOKEN, peerSecret: SECRET, instanceLeaseMs: LEASE_SECONDS * 1000, ...extra });

const call = (g: { url: string }, target: string, method: string, args: unknown[] = [], version: unknown[] = []) =>
  api(g, 'POST', '/v1/interfaces/call', { target, version, method, args }, AUTH);
const big = ['~big'];

/** A (a process of its own) owns a counter reset to 0; a socket on B (in the test) is connected to it, relayed. */
async function counterOwnedByA() {
  const project = await tempProject();
  const a = await serve(project);
  const b = await inProcess(project);
  expect((await call(a, 'counter', 'reset', [], big)).body).toEqual({ payload: 0 });
  const socket = await Client.open(b.url, { headers: AUTH });
  await socket.connect('counter', { version: big });
  return { project, a, b, socket };
}

/** The leases of `project` in the database itself: who holds them (address) and whether they still run. */
async function leasesOf(project: string): Promise<Array<{ uuid: string; address: string; live: boolean }>> {
  const client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT uuid, address, expires_at > now() AS live FROM portico_instance_owners WHERE project LIKE $1 ORDER BY uuid', [`%${path.basename(project)}`]);
    return rows;
  } finally {
    await client.end();
  }
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 50));
}

describe('racing for a new instance', { timeout: TIMEOUT }, () => {
  it('calls through three gateways at once on an instance nobody has made yet: one owner, one counter', async () => {
    const project = await tempProject();
    const gateways = [await inProcess(project), await inProcess(project), await inProcess(project)];
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => call(gateways[i % 3]!, 'counter', 'add', [1], big)));
    const seen = JSON.stringify(answers.map((answer) => [answer.status, answer.body]));
    expect(answers.map((answer) => answer.status), seen).toEqual(Array(30).fill(200));
    // One counter took all 30: 300 read through each gateway. (What each add answers may be a
    // later count: the worker runs calls of one instance concurrently, and add reads its count
    // back after pushing it.)
    for (const g of gateways) expect((await call(g, 'counter', 'value', [], big)).body, seen).toEqual({ payload: 300 });
    // One gateway made it: the lease names it, and only its worker holds an instance.
    const [lease] = await leasesOf(project);
    const instances = await Promise.all(
      gateways.map(async (g) => ((await api(g, 'GET', '/v1/projects', undefined, AUTH)).body.workers as Array<{ instances: number }>).reduce((n, w) => n + w.instances, 0)),
    );
    expect(instances, JSON.stringify({ lease, urls: gateways.map((g) => g.url) })).toEqual(gateways.map((g) => (g.url === lease!.address ? 1 : 0)));
  });
});

describe('the owner of a live instance dies', { timeout: TIMEOUT }, () => {
  it('kill -9 mid-stream: the stream ends with an owner_lost error, the socket hears instance_restarted, and B takes over with the saved widget state', async () => {
    const project = await tempProject({ 'drip.py': DRIP });
    const a = await serve(project);
    const b = await inProcess(project);
    // A makes both instances: it holds their leases.
    expect((await call(a, 'counter', 'reset', [], big)).body).toEqual({ payload: 0 });
    expect((await call(a, 'drip', 'ping')).body).toEqual({ payload: 'pong' });

    const counter = await Client.open(b.url, { headers: AUTH });
    const { payload: record } = await counter.connect('counter', { version: big });
    expect((await counter.request({ type: 'widget_set', changes: { count: 35 } })).type).toBe('widget_change');
    // The widget_set reached A's instance (the one instance).
    expect((await call(a, 'counter', 'value', [], big)).body).toEqual({ payload: 35 });

    // A saves the widget state a moment after a change (worker/widget_state.py, SAVE_DELAY_S): a
    // kill -9 within that moment would lose it, so the kill waits until the saved file says 35.
    const saved = path.join(project, '.portico/interfaces', record.uuid, '.widget-state');
    await until(() => existsSync(saved) && /"count":\s*35\b/.test(readFileSync(saved, 'latin1')));

    const drip = await Client.open(b.url, { headers: AUTH });
    await drip.connect('drip');
    const id = drip.send({ type: 'call', method: 'drip' });
    await drip.waitFor((f) => f.id === id && f.type === 'stream');

    killGroup(a.group);
    await a.exited;

    const ended = await drip.waitFor((f) => f.id === id && f.type === 'error');
    expect(ended.payload).toMatchObject({ code: 'owner_lost', message: expect.stringContaining('went away') });
    expect(drip.replies(id).filter((f) => f.type === 'stream' && f.final)).toEqual([]);
    for (const socket of [drip, counter]) {
      const restarted = await socket.waitFor((f) => f.type === 'instance_restarted');
      expect(restarted.payload).toMatchObject({ reason: 'owner_lost' });
    }
    expect((await counter.waitFor((f) => f.type === 'instance_restarted')).payload.uuid).toBe(record.uuid);

    // The next frames find the new owner (B, once A's lease ran out): the counter comes back with its saved state.
    expect(await drip.request({ type: 'call', method: 'ping' })).toMatchObject({ type: 'result', payload: 'pong' });
    expect(await counter.request({ type: 'call', method: 'value' })).toMatchObject({ type: 'result', payload: 35 });
    expect((await call(b, 'counter', 'add', [1], big)).body).toEqual({ payload: 45 });
    expect(await counter.waitFor((f) => f.type === 'widget_change' && f.payload?.changes?.count === 45)).toBeTruthy();
    // B holds both leases now.
    expect((await leasesOf(project)).map(({ address, live }) => ({ address, live }))).toEqual([
      { address: b.url, live: true },
      { address: b.url, live: true },
    ]);
  });

  it('kill -9 during a REST call forwarded to it: 502 owner_lost; the next call through B is answered by B', async () => {
    const project = await tempProject({ 'drip.py': DRIP });
    const a = await serve(project);
    const b = await inProcess(project);
    expect((await call(a, 'drip', 'ping')).body).toEqual({ payload: 'pong' });
    const marker = path.join(project, 'hold-started');
    const inFlight = call(b, 'drip', 'hold', [marker]);
    // The call runs on A.
    await until(() => existsSync(marker));

    killGroup(a.group);
    await a.exited;

    const answer = await inFlight;
    expect([answer.status, answer.body.code]).toEqual([502, 'owner_lost']);
    expect(answer.body.message).toContain('went away during the request');
    const next = await call(b, 'drip', 'ping');
    expect([next.status, next.body]).toEqual([200, { payload: 'pong' }]);
    expect((await leasesOf(project)).map(({ address }) => address)).toEqual([b.url]);
  });

  it('frozen (SIGSTOP: no more renewals, its connections still open): what it owes ends with owner_lost, B takes over once its lease ran out, and thawed it serves no stale copy', async () => {
    const { project, a, b, socket } = await counterOwnedByA();
    expect((await socket.request({ type: 'call', method: 'add', args: [2] })).payload).toBe(20);
    const onA = await Client.open(a.url, { headers: AUTH });
    await onA.connect('counter', { version: big });
    const saved = path.join(project, '.portico/interfaces', (await leasesOf(project))[0]!.uuid, '.widget-state');
    await until(() => existsSync(saved) && /"count":\s*20\b/.test(readFileSync(saved, 'latin1')));

    process.kill(-a.group, 'SIGSTOP');
    try {
      // A REST call and a socket frame through B, both forwarded to A, which answers nothing now.
      const inFlight = call(b, 'counter', 'add', [1], big);
      const id = socket.send({ type: 'call', method: 'add', args: [1] });
      const lost = await socket.waitFor((f) => f.id === id, 30_000);
      expect(lost).toMatchObject({ type: 'error', payload: { code: 'owner_lost' } });
      expect((await socket.waitFor((f) => f.type === 'instance_restarted')).payload).toMatchObject({ reason: 'owner_lost' });
      const answer = await inFlight;
      expect([answer.status, answer.body.code]).toEqual([502, 'owner_lost']);
      expect(await socket.request({ type: 'call', method: 'add', args: [1] })).toMatchObject({ type: 'result', payload: 30 });
      expect((await call(b, 'counter', 'value', [], big)).body).toEqual({ payload: 30 });
      expect((await leasesOf(project)).map(({ address }) => address)).toEqual([b.url]);
      // A request that reached A while it was frozen is answered when it thaws: by B's instance,
      // not by the copy A still has (its lease ran out meanwhile).
      const queued = call(a, 'counter', 'add', [1], big);
      const frame = onA.send({ type: 'call', method: 'add', args: [1] });
      process.kill(-a.group, 'SIGCONT');
      const answers = [(await queued).body.payload, (await onA.waitFor((f) => f.id === frame)).payload];
      expect(answers.sort()).toEqual([40, 50]);
      // A's socket heard that the instance it was attached to is gone; its frames go to B now.
      expect((await onA.waitFor((f) => f.type === 'instance_restarted')).payload).toMatchObject({ reason: 'owner_lost' });
      expect(await onA.request({ type: 'call', method: 'value' })).toMatchObject({ type: 'result', payload: 50 });
      expect((await call(b, 'counter', 'value', [], big)).body).toEqual({ payload: 50 });
    } finally {
      process.kill(-a.group, 'SIGCONT');
    }
  });

  it('a graceful stop (SIGTERM) gives its leases back: the socket on B hears instance_restarted owner_lost, and B serves the next call with the saved state', async () => {
    const { project, a, b, socket } = await counterOwnedByA();
    expect((await socket.request({ type: 'call', method: 'add', args: [2] })).payload).toBe(20);
    expect((await leasesOf(project)).map(({ address }) => address)).toEqual([a.url]);

    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    // Nothing is left to wait out: A gave its lease back before it exited (B may hold it already).
    expect((await leasesOf(project)).map(({ address }) => address)).not.toContain(a.url);
    expect((await socket.waitFor((f) => f.type === 'instance_restarted')).payload).toMatchObject({ reason: 'owner_lost' });

    expect(await socket.request({ type: 'call', method: 'add', args: [1] })).toMatchObject({ type: 'result', payload: 30 });
    expect((await leasesOf(project)).map(({ address }) => address)).toEqual([b.url]);
  });

  it('a socket that only listens follows the instance to its new owner: after a graceful stop of A it hears the pushes of calls made through B', async () => {
    const { project, a, b, socket: listener } = await counterOwnedByA();
    expect((await call(a, 'counter', 'add', [1], big)).body).toEqual({ payload: 10 });
    await listener.waitFor((f) => f.type === 'widget_change' && f.payload?.changes?.count === 10);

    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    await listener.waitFor((f) => f.type === 'instance_restarted');
    // The listener sends nothing: its gateway took the lease for it, and it is attached there.
    for (let polls = 0; !(await leasesOf(project)).some(({ address }) => address === b.url); polls++) {
      expect(polls).toBeLessThan(200);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await call(b, 'counter', 'add', [2], big)).body).toEqual({ payload: 30 });
    const push = await listener.waitFor((f) => f.type === 'widget_change' && f.payload?.changes?.count === 30);
    expect(push.id).toBeUndefined();
  });
});

describe('an owner the others cannot reach', { timeout: TIMEOUT }, () => {
  it('a wrong --advertise-url while the owner renews its lease: 503 owner_unreachable over REST and on connect, and the owner keeps serving', async () => {
    const project = await tempProject();
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const a = await inProcess(project, { advertiseUrl: nowhere });
    const b = await inProcess(project);
    expect((await call(a, 'counter', 'reset', [], big)).body).toEqual({ payload: 0 });
    expect((await leasesOf(project)).map(({ address }) => address)).toEqual([nowhere]);
    const answer = await call(b, 'counter', 'add', [1], big);
    expect([answer.status, answer.body.code]).toEqual([503, 'owner_unreachable']);
    expect(answer.body.message).toContain('cannot be reached from this one');
    const socket = await Client.open(b.url, { headers: AUTH });
    expect((await socket.request({ type: 'connect', target: 'counter', version: big })).payload).toMatchObject({ code: 'owner_unreachable' });
    // Nothing ran on B, and A still has the one instance.
    expect((await call(a, 'counter', 'add', [1], big)).body).toEqual({ payload: 10 });
  });
});

describe('the index database lost', { timeout: TIMEOUT }, () => {
  it('calls to a live instance go on, on its owner and forwarded, by socket and by REST; a new instance answers 503 store_unavailable; once it is back the owner renews its leases', async () => {
    const project = await tempProject();
    const logged: string[] = [];
    const a = await inProcess(project, { log: (line: string) => logged.push(line) });
    const b = await inProcess(project);
    expect((await call(a, 'counter', 'reset', [], big)).body).toEqual({ payload: 0 });
    const onA = await Client.open(a.url, { headers: AUTH });
    await onA.connect('counter', { version: big });
    const onB = await Client.open(b.url, { headers: AUTH });
    await onB.connect('counter', { version: big });

    await postgres.stop();
    try {
      expect((await onA.request({ type: 'call', method: 'add', args: [1] })).payload).toBe(10);
      expect((await onB.request({ type: 'call', method: 'add', args: [1] })).payload).toBe(20);
      // REST too: its record is known from its last use, its owner too.
      expect((await call(a, 'counter', 'add', [1], big)).body).toEqual({ payload: 30 });
      expect((await call(b, 'counter', 'add', [1], big)).body).toEqual({ payload: 40 });
      // A new instance needs the index: 503 as a create, over REST and over a socket.
      const fresh = await call(a, 'counter', 'value', [], [{ start: 5 }]);
      expect([fresh.status, fresh.body.code]).toEqual([503, 'store_unavailable']);
      const other = await Client.open(b.url, { headers: AUTH });
      expect((await other.request({ type: 'connect', target: 'counter', version: [{ start: 6 }] })).payload).toMatchObject({ code: 'store_unavailable' });
      // Longer than the lease: A could not renew it, and keeps its instance all the same.
      await until(() => logged.some((line) => line.includes('instance leases could not be renewed')));
      await new Promise((resolve) => setTimeout(resolve, LEASE_SECONDS * 1000 + 500));
      expect((await onA.request({ type: 'call', method: 'add', args: [1] })).payload).toBe(50);
      expect((await onB.request({ type: 'widget_set', changes: { count: 55 } })).type).toBe('widget_change');
      expect((await onA.request({ type: 'call', method: 'value' })).payload).toBe(55);
      // B's knowledge of the owner outlived its lease: nobody can take a lease while the index is away.
      expect((await call(a, 'counter', 'add', [1], big)).body).toEqual({ payload: 65 });
      expect((await call(b, 'counter', 'add', [1], big)).body).toEqual({ payload: 75 });
    } finally {
      await postgres.start();
    }

    // Back: A renews its lease (it still names A and runs), then everything works again.
    await expect.poll(() => leasesOf(project).catch(() => []), { timeout: 30_000, interval: 100 }).toEqual([expect.objectContaining({ address: a.url, live: true })]);
    expect(logged.some((line) => line.includes('instance leases renewed again'))).toBe(true);
    expect((await onB.request({ type: 'call', method: 'add', args: [1] })).payload).toBe(85);
    expect((await call(b, 'counter', 'add', [1], big)).body).toEqual({ payload: 95 });
    let fresh = await call(b, 'counter', 'value', [], [{ start: 5 }]);
    for (let attempt = 0; fresh.status === 503 && attempt < 100; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      fresh = await call(b, 'counter', 'value', [], [{ start: 5 }]);
    }
    expect([fresh.status, fresh.body]).toEqual([200, { payload: 5 }]);
  });
});

/**
 * A way to PostgreSQL for one gateway alone that the test can cut and mend: a TCP port passed on
 * to the server (its unix socket, or its host and port). Cut, it drops every connection and takes
 * none; the other gateways' own connections are untouched.
 */
async function cuttableWay(url: string): Promise<{ url: string; cut: () => void; mend: () => void; close: () => Promise<void> }> {
  const target = new URL(url);
  const socketDir = target.searchParams.get('host');
  const port = Number(target.port || 5432);
  const open = new Set<net.Socket>();
  let cut = false;
  const server = net.createServer((client) => {
    if (cut) return client.destroy();
    const upstream = socketDir ? net.connect(path.join(socketDir, `.s.PGSQL.${port}`)) : net.connect(port, target.hostname);
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      open.add(from);
      from.pipe(to);
      from.on('error', () => to.destroy());
      from.on('close', () => {
        open.delete(from);
        to.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const way = new URL(url);
  way.searchParams.delete('host');
  way.hostname = '127.0.0.1';
  way.port = String((server.address() as net.AddressInfo).port);
  return {
    url: way.toString(),
    cut: () => {
      cut = true;
      for (const socket of open) socket.destroy();
    },
    mend: () => {
      cut = false;
    },
    close: () => new Promise((resolve) => {
      for (const socket of open) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

describe('the index database lost to the owner alone', { timeout: TIMEOUT }, () => {
  it('the other gateways ask the owner before they take its instance over: it still serves it, so calls through them reach its one counter, and once it is back it keeps its lease', async () => {
    const project = await tempProject();
    const way = await cuttableWay(postgres.url);
    try {
      const logged: string[] = [];
      const a = await inProcess(project, { store: way.url, log: (line: string) => logged.push(line) });
      const b = await inProcess(project);
      expect((await call(a, 'counter', 'reset', [], big)).body).toEqual({ payload: 0 });
      const onA = await Client.open(a.url, { headers: AUTH });
      await onA.connect('counter', { version: big });
      expect((await onA.request({ type: 'call', method: 'add', args: [1] })).payload).toBe(10);

      way.cut();
      await until(() => logged.some((line) => line.includes('instance leases could not be renewed')));
      // A's lease and the grace run out: B may take the lease now, and asks A first.
      await new Promise((resolve) => setTimeout(resolve, (LEASE_SECONDS * 4000) / 3 + 500));
      expect((await call(b, 'counter', 'add', [1], big)).body).toEqual({ payload: 20 });
      expect((await onA.request({ type: 'call', method: 'add', args: [1] })).payload).toBe(30);
      const onB = await Client.open(b.url, { headers: AUTH });
      await onB.connect('counter', { version: big });
      expect((await onB.request({ type: 'call', method: 'add', args: [1] })).payload).toBe(40);
      // B handed the lease back to A, which serves the one instance.
      expect((await leasesOf(project)).map(({ address }) => address)).toEqual([a.url]);
      const listed = (await api(b, 'GET', '/v1/projects', undefined, AUTH)).body;
      expect(listed.workers.reduce((n: number, w: { instances: number }) => n + w.instances, 0)).toBe(0);

      way.mend();
      await until(() => logged.some((line) => line.includes('instance leases renewed again')));
      expect((await call(b, 'counter', 'add', [1], big)).body).toEqual({ payload: 50 });
      expect((await onA.request({ type: 'call', method: 'value' })).payload).toBe(50);
      expect((await leasesOf(project)).map(({ address, live }) => [address, live])).toEqual([[a.url, true]]);
      // Nobody's instance was made again.
      expect([...onA.frames, ...onB.frames].filter((f) => f.type === 'instance_restarted')).toEqual([]);
    } finally {
      await way.close();
    }
  });

  it('a long call forwarded to it is not cut off: the gateway waiting on it asks it again once its lease ran out, and leaves it the instance', async () => {
    const project = await tempProject({ 'nap.py': NAP });
    const way = await cuttableWay(postgres.url);
    try {
      const a = await inProcess(project, { store: way.url });
      const b = await inProcess(project);
      expect((await call(a, 'nap', 'nap', [0])).body).toEqual({ payload: 'rested' });
      way.cut();
      // Longer than A's lease and its grace: B, waiting on A, checks the lease (once per lease time) and finds it ended.
      expect((await call(b, 'nap', 'nap', [LEASE_SECONDS * 3])).body).toEqual({ payload: 'rested' });
      expect((await leasesOf(project)).map(({ address }) => address)).toEqual([a.url]);
    } finally {
      await way.close();
    }
  });

  it('a gateway that is not a peer cannot ask whether one serves an instance', async () => {
    const project = await tempProject();
    const a = await inProcess(project);
    expect((await call(a, 'counter', 'reset', [], big)).status).toBe(200);
    const uuid = (await leasesOf(project))[0]!.uuid;
    const asked = await api(a, 'GET', `/v1/peers/instances/${uuid}`, undefined, AUTH);
    expect([asked.status, asked.body.code]).toEqual([403, 'forbidden']);
    const peer = await api(a, 'GET', `/v1/peers/instances/${uuid}`, undefined, { authorization: `Bearer ${SECRET}`, 'x-portico-peer': 'b' });
    expect([peer.status, peer.body]).toEqual([200, { uuid, serving: true }]);
    expect((await api(a, 'GET', '/v1/peers/instances/nobody', undefined, { authorization: `Bearer ${SECRET}`, 'x-portico-peer': 'b' })).body).toEqual({ uuid: 'nobody', serving: false });
  });
});

describe('gateway-to-gateway requests', { timeout: TIMEOUT }, () => {
  it('a client holding the api token cannot pass as a gateway when a separate --peer-secret is set (REST and WebSocket: 401); the peer secret alone is no client credential', async () => {
    const project = await tempProject();
    const a = await serve(project);
    const asPeer = { 'x-portico-peer': 'forged-gateway', 'x-portico-peer-user': 'mallory' };
    // The api token is a client's credential, as before.
    expect((await call(a, 'counter', 'value')).status).toBe(200);
    const refused = await api(a, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'value' }, { ...AUTH, ...asPeer });
    expect([refused.status, refused.body.code]).toEqual([401, 'unauthorized']);
    expect(refused.body.message).toContain('peer secret');
    await expect(Client.open(a.url, { headers: { ...AUTH, ...asPeer } })).rejects.toMatchObject({ status: 401 });
    await expect(Client.open(a.url, { headers: asPeer, protocols: ['bearer', TOKEN] })).rejects.toMatchObject({ status: 401 });
    await expect(Client.open(a.url, { headers: asPeer })).rejects.toMatchObject({ status: 401 });
    // The peer secret without the gateway headers admits no client.
    const secretOnly = await api(a, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'value' }, { authorization: `Bearer ${SECRET}` });
    expect([secretOnly.status, secretOnly.body.code]).toEqual([401, 'unauthorized']);
    // The real peer secret with the gateway headers is admitted, as the user it names.
    const genuine = await api(a, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 3 }] }, { authorization: `Bearer ${SECRET}`, ...asPeer });
    expect([genuine.status, genuine.body.created_by]).toEqual([200, 'mallory']);
  });
});
