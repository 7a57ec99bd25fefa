/**
 * What a worker writes on stdout and stderr, as log entries. Both carry what user code prints, one
 * info entry per line; a Python traceback is one entry at error level, from its
 * `Traceback (most recent call last):` line through its exception line, with the line announcing it
 * when that line ends in `:` and came right before (the worker's own `add() (call 3) raised:`), and
 * with the tracebacks chained to it ("During handling of the above exception, …", "The above
 * exception was the direct cause of …"). An exception group's traceback (indented throughout) ends
 * at the first line that is not indented.
 *
 * A traceback normally arrives in one write; when its end is not seen, it goes out anyway after
 * `idleMs` without output, or once it has grown to TRACEBACK_MAX_CHARS.
 */
import type { Readable } from 'node:stream';
import type { LineLevel } from '../ops/logger.js';

const TRACEBACK = /^(\s*\+ )?(Exception Group )?Traceback \(most recent call last\):$/;
const CHAINED = new Set(['During handling of the above exception, another exception occurred:', 'The above exception was the direct cause of the following exception:']);
/** A traceback longer than this goes out as it is, and what follows is read as plain lines again. */
export const TRACEBACK_MAX_CHARS = 256 * 1024;
const IDLE_MS = 100;

type Write = (entry: string, level: LineLevel) => void;

/** Splits a stream's text into entries (see the file header); `push` text as it comes, `end` at EOF. */
export class WorkerOutput {
  private partial = '';
  /** A line ending in ':' that may announce a traceback. */
  private header: string | undefined;
  /** The traceback being read, or undefined. */
  private block: string[] | undefined;
  private blockChars = 0;
  /** An exception group: indented throughout, it has no exception line of its own. */
  private group = false;
  /** Its exception line is in: what follows may chain another traceback to it. */
  private ended = false;
  /** Lines after the exception line that may open a chained traceback. */
  private tail: string[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly write: Write,
    private readonly idleMs = IDLE_MS,
  ) {}

  push(text: string): void {
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) this.line(line);
    this.armTimer();
  }

  /** The stream ended: what is held goes out. */
  end(): void {
    if (this.partial) this.line(this.partial);
    this.partial = '';
    this.flush();
  }

  private line(line: string): void {
    if (this.block === undefined) {
      if (TRACEBACK.test(line)) return this.open(line);
      if (this.header !== undefined) this.emitHeader();
      if (line.endsWith(':') && line.trim() !== ':') this.header = line;
      else this.write(line, 'info');
      return;
    }
    if (this.ended) {
      // At most the blank line, the chaining sentence and the blank line before the next traceback.
      if ((line === '' || CHAINED.has(line)) && this.tail.length < 3) {
        this.tail.push(line);
        return;
      }
      if (TRACEBACK.test(line) && this.tail.some((held) => CHAINED.has(held))) {
        this.add(...this.tail, line);
        this.tail = [];
        this.ended = false;
        return;
      }
      const after = this.tail;
      this.tail = [];
      this.emitBlock();
      for (const held of after) this.line(held);
      return this.line(line);
    }
    if (/^\s/.test(line)) return this.add(line);
    if (this.group || line === '') {
      this.emitBlock();
      return this.line(line);
    }
    this.add(line); // the exception line
    this.ended = true;
  }

  private open(line: string): void {
    const header = this.header;
    this.header = undefined;
    this.block = [];
    this.blockChars = 0;
    this.group = /^\s/.test(line);
    this.ended = false;
    if (header !== undefined) this.add(header);
    this.add(line);
  }

  private add(...lines: string[]): void {
    for (const line of lines) {
      this.block!.push(line);
      this.blockChars += line.length + 1;
    }
    if (this.blockChars > TRACEBACK_MAX_CHARS) this.emitBlock();
  }

  private emitHeader(): void {
    const header = this.header!;
    this.header = undefined;
    this.write(header, 'info');
  }

  private emitBlock(): void {
    const block = this.block!;
    this.block = undefined;
    this.ended = this.group = false;
    this.write(block.join('\n'), 'error');
  }

  /** Everything held goes out now. */
  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.header !== undefined) this.emitHeader();
    if (this.block !== undefined) {
      const after = this.tail;
      this.tail = [];
      this.emitBlock();
      for (const held of after) this.write(held, 'info');
    }
  }

  private armTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.header === undefined && this.block === undefined) return;
    this.timer = setTimeout(() => this.flush(), this.idleMs);
    this.timer.unref();
  }
}

/** Writes what `stream` carries as entries (see WorkerOutput). */
export function forwardOutput(stream: Readable, write: Write): void {
  const output = new WorkerOutput(write);
  stream.setEncoding('utf8');
  stream.on('data', (text: string) => output.push(text));
  stream.on('end', () => output.end());
}
