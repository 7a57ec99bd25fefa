/**
 * An append-only journal with group commit: mutations that arrive while a flush is on its way to
 * disk are written and fdatasync'd together in the next one. A mutation is acknowledged only when
 * the flush carrying it has reached the disk. A crash can only tear the last line, which replay
 * ignores (it was never acknowledged).
 */
import { open, readFile, type FileHandle } from 'node:fs/promises';

export interface JournalEntry {
  /** Sequence number, increasing across journal files. */
  s: number;
  /** A whole record to store under `put.uuid`. */
  put?: { uuid: string } & Record<string, unknown>;
  /** A uuid to remove. */
  del?: string;
}

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
}

export class Journal {
  private queued: string[] = [];
  private waiters: Waiter[] = [];
  private flushing: Promise<void> | undefined;
  /** Bytes appended so far (drives checkpoints). */
  bytes = 0;

  private constructor(
    readonly file: string,
    private readonly handle: FileHandle,
  ) {}

  static async open(file: string): Promise<Journal> {
    const handle = await open(file, 'a');
    const journal = new Journal(file, handle);
    journal.bytes = (await handle.stat()).size;
    return journal;
  }

  /** Appends an entry; resolves once it is durable. */
  append(entry: JournalEntry): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queued.push(`${JSON.stringify(entry)}\n`);
      this.waiters.push({ resolve, reject });
      this.flushing ??= this.flush();
    });
  }

  /** Resolves when everything appended so far is durable. */
  async settled(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  async close(): Promise<void> {
    await this.settled();
    await this.handle.close();
  }

  private async flush(): Promise<void> {
    while (this.queued.length) {
      const data = this.queued.join('');
      const waiters = this.waiters;
      this.queued = [];
      this.waiters = [];
      try {
        await this.handle.write(data);
        await this.handle.datasync();
        this.bytes += Buffer.byteLength(data);
        for (const w of waiters) w.resolve();
      } catch (err) {
        for (const w of waiters) w.reject(err as Error);
      }
    }
    this.flushing = undefined;
  }
}

/** Reads a journal file's entries, stopping at a torn (unacknowledged) last line. */
export async function readJournal(file: string): Promise<JournalEntry[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const entries: JournalEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    try {
      entries.push(JSON.parse(line) as JournalEntry);
    } catch {
      break; // a crash mid-append: nothing after it was acknowledged
    }
  }
  return entries;
}
