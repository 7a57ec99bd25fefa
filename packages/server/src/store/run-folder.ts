/**
 * The run folder's format as python/portico/shared.json (`run_folder`) writes it down: the file
 * names, the time format, and reading a file (or a whole folder) by its kind. portico/run_folder.py
 * reads a folder the same way; test/run-folder.test.ts checks that both read the same.
 */
import { open, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { SHARED, RUN_FILE_KEYS, type RunFileKey } from '../config/shared.js';

/** File name of each run file, by its key in the spec. */
export const RUN_FILES: Readonly<Record<RunFileKey, string>> = Object.fromEntries(RUN_FILE_KEYS.map((key) => [key, SHARED.run_folder.files[key].name])) as Record<RunFileKey, string>;
/** The marker in an interface's folder that a successful run writes (outside the run folder). */
export const CACHED_FILE = SHARED.run_folder.cached.name;
/** What every time file of a run folder holds. */
export const RUN_TIME = new RegExp(SHARED.run_folder.time.pattern);

/** A time as a run folder holds it (a time file holds it alone, no newline): ISO-8601 UTC with microseconds and Z; the clock gives milliseconds. */
export function runTime(date: Date = new Date()): string {
  return `${date.toISOString().slice(0, -1)}000Z`;
}

/** A JSON file's content: compact, one line, newline-terminated. */
export function jsonFileText(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}

/** A file's text, trimmed; null when it cannot be read. */
export async function readText(file: string): Promise<string | null> {
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    return null;
  }
}

/** A JSON file parsed; null when it is missing or not JSON. */
export async function readJson<T>(file: string): Promise<T | null> {
  const text = await readText(file);
  if (text === null) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}

/** The lines of JSON-lines text, parsed (a line that does not parse is left out). */
function parseJsonLines(text: string): unknown[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as unknown];
      } catch {
        return [];
      }
    });
}

/** The whole lines of a JSON-lines file, parsed (a last line not yet ended is left out). */
async function readJsonLines(file: string): Promise<unknown[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return [];
  }
  return parseJsonLines(text.slice(0, Math.max(text.lastIndexOf('\n'), 0)));
}

/** One run file read by its kind (undefined for text files, which a reader does not take whole). */
export async function readRunFile(dir: string, key: RunFileKey): Promise<unknown> {
  const file = path.join(dir, RUN_FILES[key]);
  switch (SHARED.run_folder.files[key].kind) {
    case 'json':
      return readJson(file);
    case 'time':
      return readText(file);
    case 'jsonl':
      return readJsonLines(file);
    case 'marker':
      return stat(file).then(() => true, () => false);
    case 'text':
      return undefined;
  }
}

/**
 * Every file of a run folder a reader takes, by its key in the spec: JSON files parsed (null when
 * missing or unreadable), times as their text (null when missing), markers as booleans, JSON lines
 * as a list; text files (output.log, job.sh) are not read.
 */
export async function readRunFolder(dir: string): Promise<Record<string, unknown>> {
  const keys = RUN_FILE_KEYS.filter((key) => SHARED.run_folder.files[key].kind !== 'text');
  const values = await Promise.all(keys.map((key) => readRunFile(dir, key)));
  return Object.fromEntries(keys.map((key, i) => [key, values[i]]));
}

export interface OutputQuery {
  offset?: number | undefined;
  tail?: number | undefined;
  limit: number;
}

export interface OutputWindow {
  output: string;
  offset: number;
  size: number;
  limit: number;
}

/**
 * A bounded window of a run's output.log, never the whole file: `offset` reads forward from a
 * byte, `tail` reads the last bytes, neither reads the last `limit` bytes. Only the window is read.
 */
export async function readOutputWindow(dir: string, query: OutputQuery): Promise<OutputWindow> {
  let handle;
  try {
    handle = await open(path.join(dir, RUN_FILES.output), 'r');
  } catch {
    return { output: '', offset: 0, size: 0, limit: query.limit };
  }
  try {
    const size = (await handle.stat()).size;
    const start =
      query.offset !== undefined ? Math.min(query.offset, size) : Math.max(0, size - Math.min(query.tail ?? query.limit, query.limit));
    const length = Math.min(query.limit, size - start);
    const buffer = Buffer.alloc(length);
    const { bytesRead } = length ? await handle.read(buffer, 0, length, start) : { bytesRead: 0 };
    return { output: buffer.toString('utf8', 0, bytesRead), offset: start, size, limit: query.limit };
  } finally {
    await handle.close();
  }
}

/** New lines of a run's events.jsonl from a byte offset (a bounded read; only whole lines) and the offset after them. */
export async function readEventsFrom(dir: string, offset: number): Promise<{ events: unknown[]; next: number }> {
  let handle;
  try {
    handle = await open(path.join(dir, RUN_FILES.events), 'r');
  } catch {
    return { events: [], next: offset };
  }
  try {
    const size = (await handle.stat()).size;
    let length = Math.min(size - offset, 256 * 1024);
    if (length <= 0) return { events: [], next: offset };
    let buffer: Buffer;
    let end: number;
    // A line longer than the window (an emitted figure, docs/writing/rich-results.md) is read whole: the window grows to it.
    for (;;) {
      buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, offset);
      end = buffer.lastIndexOf(0x0a, bytesRead - 1);
      if (end >= 0 || length >= size - offset) break;
      length = Math.min(size - offset, length * 4);
    }
    if (end < 0) return { events: [], next: offset };
    return { events: parseJsonLines(buffer.toString('utf8', 0, end)), next: offset + end + 1 };
  } finally {
    await handle.close();
  }
}
