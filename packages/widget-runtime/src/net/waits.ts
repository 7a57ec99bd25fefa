/**
 * The requests of a session that wait for a worker whose Slurm job is pending (`--workers slurm`):
 * a `waiting` frame names its request's id; the first other frame with that id (its answer, or a
 * stream's first item) means the wait is over. The page hears `waiting` on each notice, and
 * `waited` once no request waits any more, so a notice it shows can go when the wait does.
 */
import type { FrameId, ServerFrame, WaitNotice } from '@portico/protocol';

export class Waits {
  readonly #waiting = new Set<FrameId>();

  constructor(
    private readonly onWaiting: (notice: WaitNotice) => void,
    private readonly onWaited: () => void,
  ) {}

  /** Looks at a frame as it arrives: true when it was a `waiting` notice (nothing else to do with it). */
  take(frame: ServerFrame): boolean {
    if (frame.type === 'waiting') {
      if (frame.id !== undefined && frame.id !== null) this.#waiting.add(frame.id);
      this.onWaiting(frame.payload);
      return true;
    }
    const id = (frame as { id?: FrameId | null }).id;
    if (id !== undefined && id !== null && this.#waiting.delete(id) && this.#waiting.size === 0) this.onWaited();
    return false;
  }
}
