/**
 * The run the sidebar follows live: its ExecutionInfo, the tail of its output, its figures and
 * its progress, fed by the gateway's /v1/executions/ws (gateway/follow.ts).
 */
import type { ExecutionInfo, RunEvent } from '@portico/protocol';
import { followExecution, type FollowState } from '../gateway/follow.js';
import type { GatewaySettings } from '../settings.js';

/** Characters of a followed run's output kept on screen (older text is dropped from the top). */
export const OUTPUT_TAIL_CHARS = 64 * 1024;
/** Figures of a followed run kept on screen (the newest). */
export const FIGURES_KEPT = 20;

export interface FollowedRun {
  uuid: string;
  info: ExecutionInfo | null;
  /** The last OUTPUT_TAIL_CHARS characters received. */
  output: string;
  /** True when older output was dropped from `output`. */
  truncated: boolean;
  state: FollowState;
  error: string | null;
  /** The events with a MIME bundle (figures, images, tables) the run emitted, the last FIGURES_KEPT. */
  figures: RunEvent[];
  /** The last progress event (`{progress: 0..1, message?}`), if any. */
  progress: { value: number; message: string | null } | null;
}

/** A progress event's payload (docs/writing/rich-results.md: `{progress: 0..1, message?}`), else null. */
export function progressOf(payload: unknown): FollowedRun['progress'] {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return null;
  const { progress, message } = payload as { progress?: unknown; message?: unknown };
  if (typeof progress !== 'number' || !(progress >= 0 && progress <= 1)) return null;
  return { value: progress, message: typeof message === 'string' ? message : null };
}

/** A run about to be followed: nothing received yet. */
export function newFollowedRun(uuid: string, info: ExecutionInfo | null): FollowedRun {
  return { uuid, info, output: '', truncated: false, state: 'connecting', error: null, figures: [], progress: null };
}

export interface FollowHooks {
  /** A new ExecutionInfo of the run (already in `run.info`), before `changed`. */
  info(info: ExecutionInfo): void;
  /** `run` changed: redraw it. */
  changed(): void;
}

/** Follows `run` live into its fields until `signal` aborts. */
export function followRun(settings: GatewaySettings, run: FollowedRun, hooks: FollowHooks, signal: AbortSignal): void {
  const { gatewayUrl, token, project } = settings;
  followExecution(
    { url: gatewayUrl, token, project },
    run.uuid,
    {
      info: (info) => {
        run.info = info;
        hooks.info(info);
        hooks.changed();
      },
      output: ({ output }) => {
        const text = run.output + output;
        run.truncated ||= text.length > OUTPUT_TAIL_CHARS;
        run.output = text.length > OUTPUT_TAIL_CHARS ? text.slice(text.length - OUTPUT_TAIL_CHARS) : text;
        hooks.changed();
      },
      event: (event) => {
        const progress = progressOf(event.payload);
        if (progress) run.progress = progress;
        if (event.display) run.figures = [...run.figures, event].slice(-FIGURES_KEPT);
        if (progress || event.display) hooks.changed();
      },
      state: (state, error) => {
        run.state = state;
        run.error = error ? `${error.code}: ${error.message}` : null;
        hooks.changed();
      },
    },
    signal,
  );
}
