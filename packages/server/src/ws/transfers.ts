/**
 * The one binary transfer a socket may have at a time (binary frames carry no id): an upload
 * receiving bytes, an upload being made durable after its chunk_end, or a read sending bytes.
 * An upload whose disk writes are behind stops the socket's reading until they caught up.
 *
 * Every upload id is answered exactly once: chunk_done, or one `error`. An upload refused at its
 * chunk_start (not connected, an invalid frame) or failed later (a path through a symlink that
 * leads outside, a size bound, a disk error) is answered when it is refused; its binary frames
 * and its chunk_end are then swallowed without a second answer.
 */
import { LIMITS } from '../config/constants.js';
import type { ClientFrame } from '../contract/frames.js';
import { PorticoError } from '../errors.js';
import type { RequestContext } from '../service/context.js';
import type { Gateway } from '../service/gateway.js';
import type { InterfaceInfo } from '../service/interfaces.js';
import { Upload, uploadRoot } from '../service/uploads.js';
import type { FrameId } from './decode.js';

/** An upload; a read (no upload); or an upload refused at its chunk_start, already answered, waiting for its chunk_end to swallow its bytes. */
type Transfer = { id: FrameId; upload: Upload; finishing: boolean; refused?: undefined } | { id: FrameId; upload?: undefined; refused?: boolean };

type Frame<T extends ClientFrame['type']> = Extract<ClientFrame, { type: T }>;

/** The interface a transfer is for. */
interface Placed {
  ctx: RequestContext;
  record: InterfaceInfo;
}

/** What a transfer needs of its socket session. */
export interface TransferSocket {
  readonly gateway: Gateway;
  /** Aborted when the socket goes away. */
  readonly signal: AbortSignal;
  closed(): boolean;
  send(frame: object): void;
  sendError(id: FrameId, error: PorticoError): void;
  sendChunk(chunk: Buffer): Promise<void>;
  pause(): void;
  resume(): void;
}

export class Transfers {
  private transfer: Transfer | undefined;
  /** The socket stopped reading because an upload's disk writes (or an owner's socket) are behind. */
  private paused = false;

  constructor(private readonly socket: TransferSocket) {}

  /** A transfer runs (the socket is not idle); a refused upload only waiting for its chunk_end is none. */
  get active(): boolean {
    return this.transfer !== undefined && !this.transfer.refused;
  }

  /** The id a transfer is owed its answer by, between its frames too (a failed or refused upload had it). */
  get owed(): FrameId | undefined {
    return this.transfer && !this.transfer.upload?.error && !this.transfer.refused ? this.transfer.id : undefined;
  }

  /**
   * An upload's chunk_start was refused before it began (and answered): its binary frames and its
   * chunk_end are swallowed, not answered again. A transfer that is active keeps the socket (a
   * chunk_start refused with transfer_active changes nothing).
   */
  refused(id: FrameId): void {
    if (this.active) return;
    void this.transfer?.upload?.abort();
    this.transfer = { id, refused: true };
  }

  /** The socket went away: an upload cut off before chunk_end leaves the target as it was. */
  abort(): void {
    void this.transfer?.upload?.abort();
    this.transfer = undefined;
  }

  /** Refuses a new transfer while another is active (binary frames carry no id to tell two apart). */
  private checkNoTransfer(): void {
    const current = this.transfer;
    // A failed or refused upload only waits for its chunk_end to swallow its bytes: a new transfer replaces it.
    if (current && !current.refused && !(current.upload?.error && !current.finishing)) {
      throw new PorticoError('transfer_active', `Transfer '${current.id}' is still active on this socket; finish it before starting another`);
    }
  }

  /** chunk_start (write | append): from here on, binary frames are this upload's bytes. */
  async upload(connection: Placed, frame: Frame<'chunk_start'>): Promise<void> {
    this.checkNoTransfer();
    const { id } = frame;
    let reported = false;
    const transfer: Transfer = {
      id,
      finishing: false,
      upload: new Upload(
        Promise.resolve().then(() => uploadRoot(connection.ctx, connection.record.uuid)),
        frame.path,
        frame.mode === 'append' ? 'append' : 'write',
        {
          maxBytes: this.socket.gateway.options.uploadMax,
          highWater: LIMITS.uploadHighWaterBytes,
          onDrain: () => this.resumeReading(),
          onFail: (error) => {
            if (reported || this.socket.closed()) return;
            reported = true;
            this.socket.sendError(id, error);
          },
        },
      ),
    };
    this.transfer = transfer;
  }

  /** Whether an upload refused at its chunk_start waits for this chunk_end id (or any, without one) to swallow. */
  refusedAs(id: FrameId): boolean {
    return this.transfer?.refused === true && (id === undefined || id === this.transfer.id);
  }

  /** A binary frame: the active upload's bytes. */
  receive(data: Buffer): void {
    const transfer = this.transfer;
    if (transfer?.refused) return; // answered when refused
    if (!transfer?.upload || transfer.finishing) {
      return this.socket.sendError(undefined, new PorticoError('no_active_upload', 'Binary frame received without chunk_start (or after its chunk_end)'));
    }
    transfer.upload.write(data);
    if (transfer.upload.overHighWater && !this.paused) {
      this.paused = true;
      this.socket.pause();
    }
  }

  /** Stops reading the socket until `behind` resolves (nothing when it is undefined). */
  pauseUntil(behind: Promise<void> | undefined): void {
    if (!behind || this.paused) return;
    this.paused = true;
    this.socket.pause();
    void behind.then(() => this.resumeReading());
  }

  private resumeReading(): void {
    if (!this.paused) return;
    this.paused = false;
    this.socket.resume();
  }

  /** chunk_end: answers chunk_done once the bytes are durable under the final name. */
  async finish(frame: Frame<'chunk_end'>): Promise<void> {
    const transfer = this.transfer;
    if (this.refusedAs(frame.id)) {
      this.transfer = undefined; // answered when refused
      return;
    }
    if (!transfer?.upload || transfer.finishing) throw new PorticoError('no_active_upload', 'No active chunk upload');
    if (frame.id !== undefined && frame.id !== transfer.id) {
      throw new PorticoError('upload_id_mismatch', `chunk_end id '${frame.id}' does not match the active upload '${transfer.id}'`);
    }
    transfer.finishing = true;
    try {
      if (transfer.upload.error) return; // answered with its error (onFail)
      let done;
      try {
        done = await transfer.upload.finish();
      } catch (err) {
        // A failure the upload recorded while this waited for it (a path refused as it was opened,
        // a disk error) is answered by onFail once it is undone: answering it here too was a
        // second error frame for the same id.
        if (transfer.upload.error) return;
        throw err;
      }
      this.socket.gateway.metrics.uploadBytes.inc(done.bytes_written);
      this.socket.send({ type: 'chunk_done', id: transfer.id, payload: done });
    } finally {
      if (this.transfer === transfer) this.transfer = undefined;
    }
  }

  /** chunk_start (read): the read hook's bytes as binary frames, at the client's pace. */
  async read(connection: Placed, frame: Frame<'chunk_start'>): Promise<void> {
    this.checkNoTransfer();
    const transfer: Transfer = { id: frame.id };
    this.transfer = transfer;
    try {
      let sent = 0;
      const outcome = await this.socket.gateway.interfaces.read(connection.ctx, connection.record, frame.params ?? {}, {
        signal: this.socket.signal,
        onChunk: (chunk) => {
          sent += chunk.length;
          return this.socket.sendChunk(chunk);
        },
      });
      this.socket.gateway.metrics.readBytes.inc(sent);
      if (!outcome.ok) throw outcome.error;
      this.socket.send({ type: 'chunk_done', id: frame.id, payload: { bytes_sent: sent } });
    } finally {
      if (this.transfer === transfer) this.transfer = undefined;
    }
  }
}
