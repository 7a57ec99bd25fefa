import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { LineLevel } from '../ops/logger.js';
import { TRACEBACK_MAX_CHARS, WorkerOutput } from './worker-output.js';

/** The entries `chunks` become, in order. */
function entries(chunks: string[], { end = true } = {}): Array<[LineLevel, string]> {
  const out: Array<[LineLevel, string]> = [];
  const output = new WorkerOutput((entry, level) => out.push([level, entry]), 60_000);
  for (const chunk of chunks) output.push(chunk);
  if (end) output.end();
  return out;
}

/** What Python itself writes for `code` (run with `python3 -c`, stderr). */
function pythonStderr(code: string): string {
  try {
    execFileSync('python3', ['-c', code], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    return String((err as { stderr: Buffer }).stderr);
  }
  throw new Error('expected the script to fail');
}

const TRACEBACK = ['Traceback (most recent call last):', '  File "/p/counter.py", line 9, in add', '    raise ValueError("boom")', 'ValueError: boom'];

describe('worker output', () => {
  it('plain prints: one info entry per line', () => {
    expect(entries(['hello\nwor', 'ld\n', 'no newline at the end'])).toEqual([
      ['info', 'hello'],
      ['info', 'world'],
      ['info', 'no newline at the end'],
    ]);
  });

  it('a traceback is one error entry, with the line announcing it; the prints around it stay info', () => {
    const text = ['before', 'portico.worker: add() (call 3) raised:', ...TRACEBACK, 'after', ''].join('\n');
    expect(entries([text])).toEqual([
      ['info', 'before'],
      ['error', ['portico.worker: add() (call 3) raised:', ...TRACEBACK].join('\n')],
      ['info', 'after'],
    ]);
  });

  it('a traceback split across writes, anywhere, is still one entry', () => {
    const text = [...TRACEBACK, 'next print', ''].join('\n');
    for (let cut = 1; cut < text.length; cut += 7) {
      expect(entries([text.slice(0, cut), text.slice(cut)])).toEqual([
        ['error', TRACEBACK.join('\n')],
        ['info', 'next print'],
      ]);
    }
  });

  it('a line ending in ":" that announces nothing is an info line like any other', () => {
    expect(entries(['Results:\n', '  1, 2, 3\n'])).toEqual([
      ['info', 'Results:'],
      ['info', '  1, 2, 3'],
    ]);
  });

  it("Python's own uncaught-exception output: chained tracebacks are one entry", () => {
    const stderr = pythonStderr('print("x", flush=True)\ntry:\n    {}["k"]\nexcept KeyError as e:\n    raise ValueError("bad") from e');
    const got = entries([stderr]);
    expect(got).toHaveLength(1);
    expect(got[0]![0]).toBe('error');
    expect(got[0]![1]).toMatch(/^Traceback \(most recent call last\):\n[\s\S]*KeyError: 'k'\n\nThe above exception was the direct cause of the following exception:\n\nTraceback[\s\S]*ValueError: bad$/);
  });

  it('an exception group is one entry, ended by the next plain line', () => {
    const stderr = pythonStderr('raise ExceptionGroup("many", [ValueError("a"), KeyError("b")])');
    const got = entries([stderr + 'after\n']);
    expect(got.map(([level]) => level)).toEqual(['error', 'info']);
    expect(got[0]![1]).toMatch(/Exception Group Traceback[\s\S]*ValueError: a[\s\S]*KeyError: 'b'/);
  });

  it('a traceback whose end is not seen goes out when the stream ends, or once too long', () => {
    expect(entries([TRACEBACK.slice(0, 2).join('\n') + '\n'])).toEqual([['error', TRACEBACK.slice(0, 2).join('\n')]]);
    const frame = '  File "/p/deep.py", line 1, in f\n';
    const long = entries(['Traceback (most recent call last):\n' + frame.repeat(Math.ceil(TRACEBACK_MAX_CHARS / frame.length) + 10)], { end: false });
    expect(long.length).toBeGreaterThanOrEqual(1);
    expect(long[0]![0]).toBe('error');
    expect(long[0]![1].length).toBeLessThanOrEqual(TRACEBACK_MAX_CHARS + frame.length);
  });

  it('a held traceback goes out after a pause in the output', async () => {
    const out: Array<[LineLevel, string]> = [];
    const output = new WorkerOutput((entry, level) => out.push([level, entry]), 1);
    output.push(TRACEBACK.join('\n') + '\n');
    await expect.poll(() => out).toEqual([['error', TRACEBACK.join('\n')]]);
  });
});
