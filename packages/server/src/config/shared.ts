/**
 * What the gateway and the Python package both need, written once: `python/portico/shared.json`
 * (read by Python through `portico/shared.py`). The bounds both sides enforce (`limits`, which
 * constants.ts puts into LIMITS) and the run-folder format (`run_folder`: its file names, what
 * each holds, its time format). Read once at start; a spec that lacks a name the gateway uses
 * stops the start with the name, so the two sides cannot drift apart silently.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** The spec file, in the Python package the gateway ships (src/config and dist/config alike sit two levels below it). */
export const SHARED_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../python/portico/shared.json');

/** The files of a run folder, by their key in the spec. */
export const RUN_FILE_KEYS = ['execution', 'process', 'started_at', 'heartbeat_at', 'manifest', 'events', 'status', 'finished_at', 'cancelled', 'job', 'job_script', 'output'] as const;
export type RunFileKey = (typeof RUN_FILE_KEYS)[number];

/** How a reader takes a run file: JSON parsed, a time as its text, JSON lines, a marker's presence, or text it does not read. */
export const RUN_FILE_KINDS = ['json', 'time', 'jsonl', 'marker', 'text'] as const;
export type RunFileKind = (typeof RUN_FILE_KINDS)[number];

const limit = z.object({ value: z.number().int().positive(), about: z.string() });
const runFile = z.object({ name: z.string().regex(/^[A-Za-z0-9_.-]+$/), kind: z.enum(RUN_FILE_KINDS), writer: z.string(), holds: z.string() });

const SharedSpec = z.object({
  limits: z.object({
    stream_window: limit,
    read_block_bytes: limit,
    display_max_bytes: limit,
    output_window_max_bytes: limit,
    run_heartbeat_seconds: limit,
    call_output_rate_bytes: limit,
    call_output_frame_bytes: limit,
  }),
  run_folder: z.object({
    time: z.object({ example: z.string(), pattern: z.string() }),
    files: z.strictObject(Object.fromEntries(RUN_FILE_KEYS.map((key) => [key, runFile])) as Record<RunFileKey, typeof runFile>),
    cached: z.object({ name: z.string() }),
  }),
});
export type SharedSpec = z.infer<typeof SharedSpec>;

function load(): SharedSpec {
  const parsed = SharedSpec.safeParse(JSON.parse(readFileSync(SHARED_FILE, 'utf8')));
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(top)'}: ${issue.message}`).join('; ');
    throw new Error(`${SHARED_FILE} is not the spec this gateway reads: ${issues}`);
  }
  return parsed.data;
}

export const SHARED: SharedSpec = load();
