/**
 * A client socket's instance traffic, relayed to the gateway that owns the instance
 * (docs/operating/several-gateways.md). The session opens one socket to the owner's /v1/interfaces/ws as a peer
 * (the peer secret, the client's user, project and interpreter), connects it to the same uuid
 * with the client's buffers mode, and from then on every frame the client sends for the
 * instance (with its binary frames) goes there as it came, and every frame the owner sends
 * (answers, stream items, events, pushes, binary frames) comes back as it came, in order.
 *
 * The relay reads only the start of each answer (its type and id) to know when the frame it
 * answers has ended; when the owner's socket closes unasked, every frame still owed an answer
 * fails with `owner_lost`, and the session goes to whichever gateway owns the instance next.
 * An owner that stops answering pings for a lease time (frozen, or its network gone without a
 * reset) counts as gone too: it stopped renewing its lease as well.
 */
import { WebSocket, type RawData } from 'ws';
import { LIMITS } from '../config/constants.js';
import { ERROR_CODES as ERRORS, PorticoError } from '../errors.js';
import { peerRefused } from '../service/ownership.js';
import type { FrameId } from './decode.js';
import { TickCork } from './tick-cork.js';

/** What a relay tells its session. */
export interface RelayHost<F> {
  /** A message of the owner for the client, as it came (text or binary); a promise while the client's socket is over its high-water mark (the owner's socket pauses until it resolves). */
  toClient(data: Buffer, isBinary: boolean): Promise<void> | undefined;
  /** `frame` got its answer (sent just before). */
  ended(frame: F): void;
  /** The owner is gone (or moved the instance): every frame still owed an answer is in `owed`. */
  lost(error: PorticoError, owed: F[], unreachable: boolean): void;
}

/** Answers that end the request whose id they carry (a `stream` frame only when final). */
const ENDING = new Set(['result', 'error', 'widget_state', 'widget_change', 'widget_msg', 'widget_msg_done', 'chunk_done', 'released', 'connected']);
/** `{"type":"<type>","id":<id>` as the gateway writes its frames: the id's JSON text in group 2. */
const HEAD = /^\{"type":"([a-z_]+)"(?:,"id":(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|"(?:[^"\\]|\\.)*"))?/;
const HEAD_BYTES = 160;

/** The type, the id's JSON text and whether it ends its request, of an owner's text frame. */
function answerOf(data: Buffer): { type: string; id: string | undefined; ends: boolean; code?: string } {
  const head = data.toString('utf8', 0, Math.min(data.length, HEAD_BYTES));
  const match = HEAD.exec(head);
  let type: string;
  let id: string | undefined;
  let final: boolean;
  // An id longer than the head read here (string ids run to 256 characters) is read whole too.
  if (match && !(match[2] === undefined && head.startsWith(',"id":', match[0].length))) {
    type = match[1]!;
    id = match[2];
    final = type !== 'stream' || data.toString('latin1', Math.max(0, data.length - 14)).endsWith('"final":true}');
  } else {
    // Not the gateway's own writing (another version?): read it whole.
    const frame = JSON.parse(data.toString('utf8')) as { type?: string; id?: FrameId; final?: boolean };
    type = String(frame.type);
    id = frame.id === undefined ? undefined : JSON.stringify(frame.id);
    final = type !== 'stream' || frame.final === true;
  }
  const ends = id !== undefined && final && (type === 'stream' || ENDING.has(type));
  // Only errors are read whole: an `instance_moved` means the owner no longer has it.
  const code = type === 'error' ? (JSON.parse(data.toString('utf8')) as { payload?: { code?: string } }).payload?.code : undefined;
  return code ? { type, id, ends, code } : { type, id, ends };
}

export class OwnerRelay<F extends { type: string; id?: FrameId }> {
  /** Frames sent to the owner and owed an answer, by their id's JSON text (several with one id: answered in order). */
  private readonly owed = new Map<string, F[]>();
  /** Uploads the owner already answered (an error): their chunk_end gets no answer of its own. */
  private readonly answeredUploads = new Set<string>();
  private lastUpload: string | undefined;
  private closed = false;
  /** The owner's messages until the session starts the relay (after its own `connected`): none goes out before that. */
  private waiting: Array<[Buffer, boolean]> | undefined = [];
  /** Reads from the owner stopped while the client's socket is behind (a pong may wait unread then). */
  private paused = 0;
  private heartbeat: NodeJS.Timeout | undefined;

  /** Frames forwarded in one tick go to the owner in one write (a pipelined client sends many in one read). */
  private readonly cork: TickCork;

  private constructor(
    private readonly socket: WebSocket,
    readonly address: string,
    /** The owner's gateway id. */
    readonly owner: string,
    private readonly host: RelayHost<F>,
  ) {
    this.cork = new TickCork(socket);
  }

  /**
   * Opens the owner's socket and connects it to `uuid`; resolves once the owner answered
   * `connected` (its answer is not relayed: the session answers its client itself). A refused
   * upgrade or connect rejects with the owner's error; an owner that cannot be reached, with
   * `owner_lost` and `unreachable` set. `leaseMs`: an owner that answers no ping for this long
   * (the instance lease time) is gone.
   */
  static open<F extends { type: string; id?: FrameId }>(
    { address, owner }: { address: string; owner: string },
    headers: Record<string, string>,
    params: Record<string, string>,
    connect: { uuid: string; buffers: 'binary' | 'base64' },
    host: RelayHost<F>,
    leaseMs: number,
  ): Promise<OwnerRelay<F>> {
    const url = `${address.replace(/^http/, 'ws')}/v1/interfaces/ws?${new URLSearchParams(params)}`;
    const socket = new WebSocket(url, { headers, perMessageDeflate: false, maxPayload: LIMITS.maxMessageBytes, handshakeTimeout: LIMITS.peerConnectTimeoutMs });
    return new Promise((resolve, reject) => {
      let settled = false;
      // An owner that took the socket but never answers its connect (frozen meanwhile) is gone too.
      let answerDue: NodeJS.Timeout | undefined;
      const fail = (error: PorticoError & { unreachable?: boolean }) => {
        if (settled) return;
        settled = true;
        clearTimeout(answerDue);
        socket.terminate();
        reject(error);
      };
      socket.once('unexpected-response', (_req, res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => fail(ownerRefusal(res.statusCode ?? 502, text)));
      });
      socket.once('error', (err) => fail(Object.assign(unreachableOwner(address, err.message), { unreachable: true })));
      socket.once('close', () => fail(Object.assign(unreachableOwner(address, 'closed'), { unreachable: true })));
      socket.once('open', () => {
        answerDue = setTimeout(() => fail(Object.assign(unreachableOwner(address, 'no answer to connect'), { unreachable: true })), LIMITS.peerConnectTimeoutMs);
        socket.send(JSON.stringify({ type: 'connect', id: 'relay', target: connect.uuid, uuid: connect.uuid, buffers: connect.buffers }));
      });
      socket.once('message', (data: RawData, isBinary) => {
        if (settled) return;
        const frame = isBinary ? undefined : (JSON.parse(String(data)) as { type?: string; payload?: { code?: string; message?: string } });
        if (frame?.type !== 'connected') {
          const code = frame?.type === 'error' ? frame.payload?.code : undefined;
          return fail(code && code in ERRORS ? new PorticoError(code as never, frame!.payload?.message ?? code) : unreachableOwner(address, 'no connected answer'));
        }
        settled = true;
        socket.removeAllListeners();
        clearTimeout(answerDue);
        const relay = new OwnerRelay<F>(socket, address, owner, host);
        relay.listen(leaseMs);
        resolve(relay);
      });
    });
  }

  private listen(leaseMs: number): void {
    const socket = this.socket;
    socket.on('message', (data: Buffer, isBinary) => this.receive(data, isBinary));
    socket.on('error', () => undefined); // its close follows, and says it
    socket.on('close', () => this.gone(ownerWentAway(), true));
    // A frozen owner keeps its socket open and answers nothing: a ping every half lease time,
    // and one unanswered by the next means it is gone (its lease runs out as well).
    let awaiting = false;
    socket.on('pong', () => (awaiting = false));
    this.heartbeat = setInterval(() => {
      if (this.paused > 0) awaiting = false;
      else if (awaiting) this.gone(ownerWentAway(`owner ${this.address} answered no ping for ${leaseMs} ms`), true);
      else {
        awaiting = true;
        socket.ping();
      }
    }, leaseMs / 2);
    this.heartbeat.unref();
  }

  /** From now on the owner's messages go to the client (those that came meanwhile first, in order). */
  start(): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    for (const [data, isBinary] of waiting ?? []) this.receive(data, isBinary);
  }

  private receive(data: Buffer, isBinary: boolean): void {
    if (this.closed) return;
    if (this.waiting) return void this.waiting.push([data, isBinary]);
    const busy = this.host.toClient(data, isBinary);
    if (busy) {
      this.paused++;
      this.socket.pause();
      void busy.then(() => {
        this.paused--;
        this.socket.resume();
      });
    }
    if (isBinary) return;
    let answer: ReturnType<typeof answerOf>;
    try {
      answer = answerOf(data);
    } catch {
      return; // not JSON: the client says so if it cares; nothing here ends
    }
    if (answer.id !== undefined) {
      const frames = this.owed.get(answer.id);
      if (frames && answer.ends) {
        const frame = frames.shift()!;
        if (frames.length === 0) this.owed.delete(answer.id);
        this.host.ended(frame);
      } else if (!frames && answer.type === 'error' && answer.id === this.lastUpload) {
        this.answeredUploads.add(answer.id);
      }
    }
    if (answer.code === 'instance_moved') {
      this.gone(new PorticoError('instance_moved', 'Another gateway owns the live instance now; retry'), false);
    }
  }

  /**
   * Sends a client's frame (validated by the session) with its binary buffers; its answer ends it
   * (`host.ended`). An upload's chunk_start ends at once, as it does locally: its chunk_end is
   * answered for it.
   */
  forward(frame: F, buffers: Buffer[]): void {
    if (this.closed) throw new PorticoError('owner_lost', 'The gateway that owns this live instance went away');
    const id = frame.id === undefined ? undefined : JSON.stringify(frame.id);
    const upload = frame.type === 'chunk_start' && (frame as { mode?: string }).mode !== 'read';
    if (upload) {
      this.lastUpload = id;
      if (id) this.answeredUploads.delete(id);
    }
    const key = frame.type === 'chunk_end' ? (id ?? this.lastUpload) : id;
    this.cork.now();
    const text = JSON.stringify(buffers.length ? { ...frame, binary_buffers: buffers.length } : frame);
    this.socket.send(text);
    for (const buffer of buffers) this.socket.send(buffer, { binary: true, compress: false });
    if (upload || key === undefined) return this.host.ended(frame);
    if (frame.type === 'chunk_end' && this.answeredUploads.delete(key)) return this.host.ended(frame);
    const waiting = this.owed.get(key);
    if (waiting) waiting.push(frame);
    else this.owed.set(key, [frame]);
  }

  /** A binary frame of the client (an upload's bytes); resolves nothing, pauses the client when the owner's socket is behind. */
  forwardBinary(data: Buffer): Promise<void> | undefined {
    if (this.closed) return undefined;
    if (this.socket.bufferedAmount < LIMITS.socketHighWaterBytes) {
      this.socket.send(data, { binary: true, compress: false });
      return undefined;
    }
    return new Promise((resolve) => this.socket.send(data, { binary: true, compress: false }, () => resolve()));
  }

  private gone(error: PorticoError, unreachable: boolean): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    const owed = [...this.owed.values()].flat();
    this.owed.clear();
    this.socket.terminate();
    this.host.lost(error, owed, unreachable);
  }

  /** The client went away: the owner's socket closes (the owner cancels what the client started). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    this.owed.clear();
    this.socket.close(1000, 'client gone');
  }
}

function ownerWentAway(internal?: string): PorticoError {
  return new PorticoError(
    'owner_lost',
    'The gateway that owns this live instance went away during the request; its next use makes the instance again on the gateway that takes it over',
    internal ? { internal } : undefined,
  );
}

function unreachableOwner(address: string, why: string): PorticoError {
  return new PorticoError('owner_lost', 'The gateway that owns this live instance cannot be reached; retry (its instances are taken over once its lease ends)', {
    internal: `owner ${address} unreachable: ${why}`,
  });
}

/**
 * The owner's refusal of the upgrade, as its error body says (`instance_moved`, …). One that
 * refuses this gateway's credential is a setting of the gateways, not the client's fault:
 * `owner_unreachable`, saying which.
 */
function ownerRefusal(status: number, body: string): PorticoError {
  if (status === 401) return peerRefused(status);
  try {
    const parsed = JSON.parse(body) as { code?: string; message?: string; detail?: unknown };
    if (parsed.code && parsed.code in ERRORS) return new PorticoError(parsed.code as never, parsed.message ?? String(parsed.detail));
  } catch {
    // not the gateway's JSON
  }
  return new PorticoError('owner_lost', `The gateway that owns this live instance refused the forwarded socket (HTTP ${status})`);
}

