/**
 * The widget half of a session: the model, the `widget_get` whose `widget_state` resyncs it (after
 * the handshake, a reconnect or `instance_restarted`), and the widget frames the gateway pushes
 * (`widget_change`, `widget_msg`), with their buffers back in place. The server is the source of
 * truth: the state read replaces the model's, but changes pushed while it was being read are newer
 * than the snapshot and win.
 */
import type { FrameId, JsonObject, ServerFrame } from '@portico/protocol';
import { decodeBuffers } from '../base64.js';
import { WidgetRuntimeError } from '../errors.js';
import { putBuffers } from '../model/buffers.js';
import { WidgetModel, type ModelOutbox, type WidgetManager } from '../model/model.js';

export interface WidgetSyncDeps {
  outbox: ModelOutbox;
  widgetManager: WidgetManager;
  offlineQueueMessages: number;
  /** Sends a frame with a fresh id on the open socket; undefined when there is none. */
  send(frame: { type: string }): FrameId | undefined;
  report(error: WidgetRuntimeError): void;
}

type WidgetFrame = Extract<ServerFrame, { type: 'widget_state' | 'widget_change' | 'widget_msg' }>;

export class WidgetSync {
  readonly #deps: WidgetSyncDeps;
  #model: WidgetModel | undefined;
  #getId: FrameId | undefined;
  /**
   * Changes pushed while our `widget_get` is answered: the worker may take its snapshot before a
   * concurrent call changes the state and pushes it, so the snapshot can arrive after (and be
   * older than) the push. Those keys keep the pushed value.
   */
  #pushedDuringGet: JsonObject | undefined;

  constructor(deps: WidgetSyncDeps) {
    this.#deps = deps;
  }

  /** The model (once connected). */
  get model(): WidgetModel | undefined {
    return this.#model;
  }

  /** Connected to `uuid`: makes the model (the first time) and reads the state. */
  connected(uuid: string): void {
    this.#model ??= new WidgetModel(uuid, { outbox: this.#deps.outbox, widgetManager: this.#deps.widgetManager, offlineQueueMessages: this.#deps.offlineQueueMessages });
    this.read();
  }

  /** Asks for the widget's full state (`widget_get`); its `widget_state` resyncs the model. */
  read(): void {
    this.#pushedDuringGet = {};
    this.#getId = this.#deps.send({ type: 'widget_get' });
  }

  /** Whether `id` is the id of the read in flight. */
  isRead(id: FrameId): boolean {
    return id === this.#getId;
  }

  /**
   * The instance died with its worker: its state is read again as after a reconnect (during a
   * handshake, the read replaces the one in flight, which the death may have cut short).
   */
  restarted(open: boolean): void {
    if (this.#model && (open || this.#getId !== undefined)) this.read();
  }

  /**
   * The full state answering our `widget_get` into the model: keys that differ change (with their
   * events), keys with a local write keep it, and changes pushed while the read was answered win.
   */
  apply(state: JsonObject): void {
    this.#model?.resync({ ...state, ...this.#pushedDuringGet });
    this.#pushedDuringGet = undefined;
  }

  /** A widget frame; returns the state when it is the answer to our read (for the session to apply). */
  receive(frame: WidgetFrame, views: DataView[]): JsonObject | undefined {
    switch (frame.type) {
      case 'widget_state': {
        const state = this.#withBuffers(frame, frame.payload.state, views);
        return state && frame.id !== undefined && frame.id === this.#getId ? state : undefined;
      }
      case 'widget_change': {
        const changes = this.#withBuffers(frame, frame.payload.changes, views);
        if (!changes) return undefined;
        if (this.#pushedDuringGet) Object.assign(this.#pushedDuringGet, changes);
        this.#model?.applyChanges(changes, frame.id);
        return undefined;
      }
      case 'widget_msg': {
        const buffers = this.#buffersOf(frame, views);
        if (buffers) this.#model?.receiveMessage(frame.payload.content, buffers);
        return undefined;
      }
    }
  }

  /** The socket went: the read in flight is gone, unacknowledged sets go back to the model's queue. */
  disconnected(): void {
    this.#getId = this.#pushedDuringGet = undefined;
    this.#model?.disconnected();
  }

  /** A frame's buffers: the binary frames that followed it, else its base64 ones; undefined (reported) when malformed. */
  #buffersOf(frame: WidgetFrame, views: DataView[]): DataView[] | undefined {
    if (views.length > 0) return views;
    try {
      return decodeBuffers(frame.payload.buffers);
    } catch (error) {
      this.#deps.report(new WidgetRuntimeError('invalid_frame', `A ${frame.type} frame carried buffers that are not base64`, { cause: error }));
      return undefined;
    }
  }

  /** State or changes with their binary values back in place (DataViews at `buffer_paths`). */
  #withBuffers(frame: Exclude<WidgetFrame, { type: 'widget_msg' }>, values: JsonObject, views: DataView[]): JsonObject | undefined {
    const buffers = this.#buffersOf(frame, views);
    if (!buffers) return undefined;
    try {
      return putBuffers(values, frame.payload.buffer_paths, buffers);
    } catch (error) {
      this.#deps.report(new WidgetRuntimeError('invalid_frame', `A ${frame.type} frame's buffer_paths do not fit its buffers: ${(error as Error).message}`, { cause: error }));
      return undefined;
    }
  }
}
