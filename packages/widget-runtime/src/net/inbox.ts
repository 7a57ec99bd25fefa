/**
 * Incoming frames as the session routes them: a text frame parsed (frames this runtime does not
 * know are dropped), with its buffers when it announced `binary_buffers: n` (the n binary frames
 * that follow it at once). A text frame that comes before they all did is reported and the
 * frame that announced them dropped.
 */
import type { ServerFrame } from '@portico/protocol';
import { WidgetRuntimeError } from '../errors.js';
import { parseServerFrame } from '../protocol.js';

/** A widget frame and the buffers of it received so far. */
interface Awaiting {
  frame: ServerFrame;
  count: number;
  views: DataView[];
}

export class Inbox {
  readonly #deliver: (frame: ServerFrame, views: DataView[]) => void;
  readonly #report: (error: WidgetRuntimeError) => void;
  /** A widget frame whose buffers (the binary frames right after it) are still coming. */
  #awaiting: Awaiting | undefined;

  constructor(deliver: (frame: ServerFrame, views: DataView[]) => void, report: (error: WidgetRuntimeError) => void) {
    this.#deliver = deliver;
    this.#report = report;
  }

  text(text: string): void {
    if (this.#awaiting) {
      const { frame, count, views } = this.#awaiting;
      this.#awaiting = undefined;
      this.#report(new WidgetRuntimeError('invalid_frame', `A ${frame.type} frame announced ${count} buffers but the next frame came after ${views.length}`));
    }
    const frame = parseServerFrame(text);
    if (!frame) return;
    const count = 'binary_buffers' in frame ? frame.binary_buffers : undefined;
    if (typeof count === 'number' && count > 0) {
      this.#awaiting = { frame, count, views: [] };
      return;
    }
    this.#deliver(frame, []);
  }

  /** Takes a binary frame if it is a buffer of the frame awaiting them; false when it is not. */
  buffer(data: unknown): boolean {
    const awaiting = this.#awaiting;
    if (!awaiting || !(data instanceof ArrayBuffer)) return false;
    awaiting.views.push(new DataView(data));
    if (awaiting.views.length < awaiting.count) return true;
    this.#awaiting = undefined;
    this.#deliver(awaiting.frame, awaiting.views);
    return true;
  }

  /** The socket went: buffers still awaited will not come. */
  reset(): void {
    this.#awaiting = undefined;
  }
}
