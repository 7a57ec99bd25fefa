/**
 * Where workers placed away from the gateway connect back (README "Placement"): one TCP listener,
 * opened on first use, bound to the address workers are told (never a wildcard unless the operator
 * names one). The gateway gives each worker it starts an id and a one-time secret; the worker's
 * first frame is `{"op":"hello","worker":<id>,"secret":<secret>,"host","job"}`. Nothing else is
 * read from a connection until that frame checks out: the secret is compared in constant time (as
 * SHA-256 digests, so lengths never differ) and is good once; an unknown id, a wrong secret, a
 * frame that is not a hello or a connection silent too long is refused and logged, its socket
 * destroyed. After the hello the connection is the worker's fd 3 and fd 4: plain frames.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import type { LineLevel } from '../ops/logger.js';

/** A worker that connected back and proved who it is. */
export interface ConnectedWorker {
  socket: net.Socket;
  /** What it sent after its hello in the same reads (its `ready`, usually): frames to decode first. */
  leftover: Buffer;
  /** The node's host name and Slurm job id, as the worker saw them. */
  host: string | null;
  job: string | null;
}

export interface Expected {
  /** `<id>.<secret>`, for the worker's PORTICO_WORKER_TOKEN. */
  token: string;
  connected: Promise<ConnectedWorker>;
  /** The worker will not come (it failed, or was given up on): its secret stops being good. */
  cancel(): void;
}

/** How long a connection may take to say hello (ms). */
const HELLO_TIMEOUT_MS = 10_000;
/** Largest hello header read (bytes): anything larger is no hello. */
const HELLO_MAX_BYTES = 4096;

interface Waiting {
  digest: Buffer;
  resolve: (worker: ConnectedWorker) => void;
}

export class ConnectBack {
  private server: net.Server | undefined;
  private listening: Promise<string> | undefined;
  private readonly waiting = new Map<string, Waiting>();
  /** Connect-backs refused so far (a forged or late one). */
  refused = 0;

  /**
   * `host` is what workers are told and where the listener binds; `port` 0 picks a free one.
   * `log` hears every refusal, with the peer's address.
   */
  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly log: (line: string, level?: LineLevel) => void,
  ) {}

  /** `host:port` workers connect to (listening from the first call on). */
  address(): Promise<string> {
    this.listening ??= new Promise<string>((resolve, reject) => {
      const server = net.createServer({ noDelay: true }, (socket) => this.greet(socket));
      server.once('error', (err) => {
        this.listening = undefined;
        reject(new Error(`cannot listen for workers connecting back on ${this.host}:${this.port}: ${err.message}`));
      });
      server.listen({ host: this.host, port: this.port }, () => {
        this.server = server;
        const { port } = server.address() as net.AddressInfo;
        const address = `${this.host.includes(':') ? `[${this.host}]` : this.host}:${port}`;
        this.log(`listening for workers connecting back on ${address}`);
        resolve(address);
      });
    });
    return this.listening;
  }

  /** A worker about to be started: its token, and the promise of its connection. */
  expect(): Expected {
    const id = randomBytes(9).toString('base64url');
    const secret = randomBytes(32).toString('base64url');
    let resolve!: (worker: ConnectedWorker) => void;
    const connected = new Promise<ConnectedWorker>((r) => (resolve = r));
    this.waiting.set(id, { digest: digest(secret), resolve });
    return { token: `${id}.${secret}`, connected, cancel: () => this.waiting.delete(id) };
  }

  async close(): Promise<void> {
    this.waiting.clear();
    const server = this.server;
    this.server = undefined;
    this.listening = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Reads a new connection's hello; hands it to the worker it names, or refuses it. */
  private greet(socket: net.Socket): void {
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    let got = Buffer.alloc(0);
    const refuse = (why: string): void => {
      this.refused++;
      this.log(`refused a worker connecting back from ${peer}: ${why}`, 'warn');
      cleanup();
      socket.destroy();
    };
    const timer = setTimeout(() => refuse(`no hello within ${HELLO_TIMEOUT_MS / 1000} s`), HELLO_TIMEOUT_MS);
    const cleanup = (): void => {
      clearTimeout(timer);
      socket.off('data', onData);
    };
    const onData = (chunk: Buffer): void => {
      got = Buffer.concat([got, chunk]);
      if (got.length < 8) return;
      const headerLength = got.readUInt32BE(0);
      const bodyLength = got.readUInt32BE(4);
      if (headerLength > HELLO_MAX_BYTES || bodyLength !== 0) return refuse('its first frame is no hello');
      if (got.length < 8 + headerLength) return;
      let hello: Record<string, unknown>;
      try {
        hello = JSON.parse(got.subarray(8, 8 + headerLength).toString('utf8')) as Record<string, unknown>;
      } catch {
        return refuse('its first frame is not JSON');
      }
      if (hello === null || typeof hello !== 'object' || hello.op !== 'hello' || typeof hello.worker !== 'string' || typeof hello.secret !== 'string') return refuse('its first frame is no hello');
      const waiting = this.waiting.get(hello.worker);
      // Compared even for an unknown id, so that timing tells nothing about which ids are good.
      const good = timingSafeEqual(digest(hello.secret), waiting?.digest ?? UNKNOWN) && waiting !== undefined;
      if (!good) return refuse(waiting ? 'wrong secret' : 'no worker is expected with that id (a forged or repeated connect-back)');
      this.waiting.delete(hello.worker); // good once
      cleanup();
      socket.pause();
      waiting.resolve({
        socket,
        leftover: got.subarray(8 + headerLength),
        host: typeof hello.host === 'string' ? hello.host : null,
        job: typeof hello.job === 'string' ? hello.job : null,
      });
    };
    socket.on('data', onData);
    socket.on('error', () => {}); // a reset: its close (or the worker's exit) reports it
  }
}

const UNKNOWN = digest(randomBytes(32).toString('base64url'));

function digest(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}
