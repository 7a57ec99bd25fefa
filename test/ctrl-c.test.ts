/**
 * Ctrl+C in a terminal is a clean stop (issue 43): the gateway runs on a real pseudo-terminal
 * (test/support/pty-run.py) and the test types Ctrl+C there, so SIGINT reaches the whole
 * foreground process group as it does from a person's terminal (the suites that send SIGTERM
 * signal one process). With a call, a stream, a create and an upload in flight: one drain, every
 * request answered, the workers stopped by the gateway (never by the terminal's SIGINT: no
 * KeyboardInterrupt, nothing "lost"), no half-written file, exit 0, the port free. The same under
 * `npm start`, where one Ctrl+C reaches the gateway twice (from the terminal, and passed on by npm).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api, cleanup, Client, ROOT, tempProject } from './helpers.js';

afterAll(cleanup);

const PTY_RUN = path.join(ROOT, 'test/support/pty-run.py');
const PORTICO = path.join(ROOT, 'packages/server/bin/portico.js');

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Terminal {
  child: ChildProcess;
  output: () => string;
  ctrlC: () => void;
  exited: Promise<number>;
}

/** `command` on a pty of its own; resolves once the terminal shows `ready`. */
async function onTerminal(command: string[], ready: RegExp, env: Record<string, string> = {}): Promise<Terminal> {
  const child = spawn('python3', [PTY_RUN, ...command], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
  let text = '';
  child.stdout!.on('data', (d) => (text += String(d)));
  const exited = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? -1)));
  const deadline = Date.now() + 120_000;
  while (!ready.test(text)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`never ready:\n${text}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, output: () => text, ctrlC: () => child.stdin!.write('ctrl-c\n'), exited };
}

/** A shell's environment, not npm's: `npm test` would hand its npm_lifecycle_event to the gateway. */
const NOT_UNDER_NPM = { npm_lifecycle_event: '' };

/** The line a gateway prints once it listens. */
const banner = (port: number) => new RegExp(`API\\s+http://127\\.0\\.0\\.1:${port}/v1`);

const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(false)));
    socket.once('error', () => resolve(true));
  });

/** Starts a call, a stream, a create and an upload on the gateway at `url`, all still running when it returns. */
async function inFlight(url: string) {
  const call = api({ url }, 'POST', '/v1/interfaces/call', { target: 'slow', method: 'wait', args: [1.5] });
  const streaming = await Client.open(url);
  await streaming.connect('streamer');
  const streamId = streaming.send({ type: 'call', method: 'aticks', args: [6, 0.25] });
  const stream = streaming.waitFor((f) => f.id === streamId && (f.type !== 'stream' || f.final === true), 60_000).then(() => streaming.replies(streamId));
  const creates = Promise.all(Array.from({ length: 20 }, (_, i) => api({ url }, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 1000 + i }] })));
  const uploading = await Client.open(url);
  await uploading.connect('files');
  uploading.send({ type: 'chunk_start', id: 'up', path: 'ctrl-c.bin', mode: 'write' });
  uploading.sendRaw(Buffer.alloc(256 * 1024, 7));
  const upload = uploading.waitFor((f) => f.id === 'up' && (f.type === 'chunk_done' || f.type === 'error'), 60_000);
  await new Promise((r) => setTimeout(r, 300)); // all of it under way
  // Each is awaited in turn once Ctrl+C is typed; one that fails first must fail the test there,
  // not surface later as an unhandled rejection of another.
  for (const pending of [call, stream, creates, upload]) pending.catch(() => {});
  return { call, stream, creates, upload, finishUpload: () => uploading.send({ type: 'chunk_end', id: 'up' }), close: () => (streaming.close(), uploading.close()) };
}

/** What a clean stop looks like in the terminal and on disk. */
async function expectCleanStop(terminal: Terminal, port: number, project: string, work: Awaited<ReturnType<typeof inFlight>>) {
  try {
    return await cleanStop(terminal, port, project, work);
  } catch (err) {
    work.close();
    throw new Error(`${(err as Error).message}\nwhat the terminal showed:\n${terminal.output()}`, { cause: err });
  }
}

async function cleanStop(terminal: Terminal, port: number, project: string, work: Awaited<ReturnType<typeof inFlight>>) {
  const started = performance.now();
  terminal.ctrlC();
  work.finishUpload();
  const call = await work.call;
  expect(call.status).toBe(200);
  expect(call.body.payload).toBeGreaterThanOrEqual(1.5);
  const stream = await work.stream;
  expect(stream.filter((f) => f.type === 'stream' && !f.final).map((f) => f.payload)).toEqual([0, 1, 2, 3, 4, 5]);
  expect(stream.at(-1)).toMatchObject({ type: 'stream', final: true });
  // Creates: each answered, with its record or with shutting_down, never cut.
  for (const res of await work.creates) expect(res.status === 200 || res.body.code === 'shutting_down', JSON.stringify(res.body)).toBe(true);
  const upload = await work.upload;
  expect(upload.type === 'chunk_done' || upload.payload?.code === 'shutting_down', JSON.stringify(upload)).toBe(true);
  work.close();
  expect(await terminal.exited).toBe(0);
  const stoppedInMs = performance.now() - started;
  expect(await portFree(port)).toBe(true);
  const text = terminal.output();
  expect(text).not.toMatch(/Traceback|KeyboardInterrupt|lost|again, stopping now|worker_crashed/);
  expect(text).toMatch(/SIGINT, stopping/);
  // Nothing half-written: no temp file of an upload or a record left in the project's data.
  const leftovers: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (/\.tmp|\.partial|\.part$/.test(entry.name)) leftovers.push(full);
    }
  };
  await walk(path.join(project, '.portico'));
  expect(leftovers).toEqual([]);
  return stoppedInMs;
}

describe('Ctrl+C in a terminal', { timeout: 180_000 }, () => {
  it('portico serve: one drain, everything in flight answered, workers stopped by the gateway, exit 0, port free', async () => {
    const project = await tempProject();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const terminal = await onTerminal(['node', PORTICO, 'serve', project, '--port', String(port)], banner(port), NOT_UNDER_NPM);
    const work = await inFlight(url);
    const ms = await expectCleanStop(terminal, port, project, work);
    console.log(`portico serve: Ctrl+C to exit with a call, a stream, creates and an upload in flight: ${ms.toFixed(0)} ms`);
    // The widget state and the index were saved by the stop, as by a SIGTERM: the records are there.
    expect(JSON.parse(await readFile(path.join(project, '.portico', 'index.json'), 'utf8').catch(() => '{}'))).toBeTruthy();
  });

  it('npm start: the same, though npm passes the one Ctrl+C on a second time', async () => {
    const project = await tempProject();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const terminal = await onTerminal(['npm', 'start', '--', project, '--port', String(port)], banner(port));
    // A refused page is told the command this gateway was started with.
    const refused = await (await fetch(`${url}/v1/origin`, { headers: { origin: 'http://elsewhere.test' } })).json();
    expect(refused.message).toContain('Allow it with: npm start -- --allow-origin http://elsewhere.test');
    const work = await inFlight(url);
    await expectCleanStop(terminal, port, project, work);
  });

  it('a second Ctrl+C, later, stops at once (exit 130)', async () => {
    const project = await tempProject();
    const port = await freePort();
    const terminal = await onTerminal(['node', PORTICO, 'serve', project, '--port', String(port)], banner(port), NOT_UNDER_NPM);
    // Cut off by the stop at once: its connection just closes.
    const call = api({ url: `http://127.0.0.1:${port}` }, 'POST', '/v1/interfaces/call', { target: 'slow', method: 'wait', args: [30] }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 500));
    terminal.ctrlC();
    await new Promise((r) => setTimeout(r, 1500));
    terminal.ctrlC();
    expect(await terminal.exited).toBe(130);
    expect(terminal.output()).toMatch(/SIGINT again, stopping now/);
    await call;
  });

});
