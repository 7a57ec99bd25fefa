/**
 * Test helpers: a temporary project (copied from examples/demo or written inline), a real
 * gateway on port 0, and a WebSocket client that records frames in order.
 */
import { cp, mkdtemp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { startServer, type GatewayOptions, type RunningServer } from '../packages/server/src/index.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DEMO = path.join(ROOT, 'examples/demo');

const cleanups: Array<() => Promise<void>> = [];

/** Removes every project and gateway the helpers made (call in afterAll). */
export async function cleanup(): Promise<void> {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
}

/** A fresh copy of the demo project plus extra files, in a temporary directory. */
export async function tempProject(files: Record<string, string> = {}, { demo = true } = {}): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'portico-test-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  if (demo) await cp(DEMO, dir, { recursive: true, filter: (src) => !src.includes('.portico') && !src.includes('__pycache__') });
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), text);
  }
  return dir;
}

/** The files of the fixture project test/fixtures/<name> (its top folder only: no __pycache__ or
 * .portico a gateway run on it left), for tempProject. */
export async function fixtureFiles(name: string): Promise<Record<string, string>> {
  const folder = path.join(ROOT, 'test/fixtures', name);
  const files: Record<string, string> = {};
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    if (entry.isFile()) files[entry.name] = await readFile(path.join(folder, entry.name), 'utf8');
  }
  return files;
}

/** A real gateway on a free loopback port. */
export async function gateway(options: Partial<GatewayOptions> = {}): Promise<RunningServer> {
  const project = options.project ?? (await tempProject());
  const logs: string[] = [];
  // Access lines stay out of the test output unless a test asks for them (logLevel / logger).
  const running = await startServer({ port: 0, host: '127.0.0.1', log: (line) => logs.push(line), logLevel: 'silent', ...options, project });
  cleanups.push(() => running.close());
  return running;
}

export interface Frame {
  type: string;
  id?: string | number;
  payload?: any;
  final?: boolean;
  /** How many binary frames follow with this frame's buffers, and those received (see Client). */
  binary_buffers?: number;
  attached?: Buffer[];
  /** A rich result's (or event's, or stream item's) MIME bundle, and where its binary frames go. */
  display?: any;
  metadata?: any;
  buffer_paths?: string[][];
  /** Other fields of other frame types (interface, reason, …). */
  [field: string]: unknown;
}

/** A WebSocket client that keeps every frame it receives, in order, and can wait for one. */
export class Client {
  readonly frames: Frame[] = [];
  /** Where binary frames go (by default kept in `binary`). */
  onBinary: (data: Buffer) => void = (data) => this.binary.push(data);
  readonly binary: Buffer[] = [];
  private waiters: Array<() => void> = [];
  private nextId = 1;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => {
      // Binary frames right after a frame with `binary_buffers` are its buffers: kept on it as `attached`.
      const last = this.frames.at(-1);
      if (isBinary && last?.binary_buffers && (last.attached ??= []).length < last.binary_buffers) last.attached.push(data as Buffer);
      else if (isBinary) this.onBinary(data as Buffer);
      else this.frames.push(JSON.parse(data.toString()));
      for (const wake of this.waiters.splice(0)) wake();
    });
    ws.on('close', () => {
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  /** `tls`: further options of the connection (`ca` to trust a test certificate, `localAddress`). */
  static open(url: string, options: { headers?: Record<string, string>; protocols?: string[]; path?: string; tls?: { ca?: string; localAddress?: string } } = {}): Promise<Client> {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + (options.path ?? '/v1/interfaces/ws'), options.protocols ?? [], {
      headers: options.headers ?? {},
      ...options.tls,
    });
    cleanups.push(async () => ws.terminate());
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new Client(ws)));
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode, headers: res.headers })));
    });
  }

  send(frame: Record<string, unknown>): string | number {
    const id = (frame.id as string | number | undefined) ?? `r${this.nextId++}`;
    this.ws.send(JSON.stringify({ ...frame, id }));
    return id;
  }

  sendRaw(data: string | Buffer): void {
    this.ws.send(data);
  }

  /** Sends a frame with `buffers` as binary frames right after it (`binary_buffers`); returns its id. */
  sendWithBuffers(frame: Record<string, unknown>, buffers: Buffer[]): string | number {
    const id = this.send({ ...frame, binary_buffers: buffers.length });
    for (const buffer of buffers) this.ws.send(buffer, { binary: true });
    return id;
  }

  /** Waits until `predicate` matches a received frame; returns it. */
  async waitFor(predicate: (frame: Frame) => boolean, timeoutMs = 20_000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.find(predicate);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no matching frame; got ${JSON.stringify(this.frames).slice(0, 2000)}`);
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error('socket closed while waiting');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(250, deadline - Date.now()));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Frames answering the request `id`, in order. */
  replies(id: string | number): Frame[] {
    return this.frames.filter((f) => f.id === id);
  }

  /** Sends a frame and waits for its terminal reply (result, connected, pong, error, or the final stream frame; not a call's output, nor a `waiting` notice). */
  async request(frame: Record<string, unknown>): Promise<Frame> {
    const id = this.send(frame);
    return this.waitFor((f) => f.id === id && f.type !== 'output' && f.type !== 'waiting' && (f.type !== 'stream' || f.final === true));
  }

  async connect(target: string, extra: Record<string, unknown> = {}): Promise<Frame> {
    const reply = await this.request({ type: 'connect', target, ...extra });
    if (reply.type !== 'connected') throw new Error(`connect failed: ${JSON.stringify(reply)}`);
    return reply;
  }

  close(): void {
    this.ws.close();
  }
}

/** fetch against a running gateway, JSON in and out. */
export async function api(
  running: { url: string },
  method: string,
  pathname: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(running.url + pathname, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** The run's ExecutionInfo once `done` holds for it (polled over REST); throws with the last one after `timeoutMs`. */
export async function waitForRun<T extends { status: string }>(g: { url: string }, uuid: string, done: (info: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const info = (await api(g, 'GET', `/v1/executions/${uuid}`)).body as T;
    if (done(info)) return info;
    if (Date.now() > deadline) throw new Error(`run did not get there: ${JSON.stringify(info)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether a run has ended, whatever the outcome. */
export const runEnded = (info: { status: string }): boolean => ['finished', 'failed', 'interrupted'].includes(info.status);
