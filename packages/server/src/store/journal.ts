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

/** The journal text of a put: the record as its JSON text (record-json.ts), so a write serializes it once. */
export const putText = (s: number, recordText: string): string => `{"s":${s},"put":${recordText}}`;

/** The journal text of a delete. */
export const delText = (s: number, uuid: string): string => JSON.stringify({ s, del: uuid });

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
}

export class Journal {
  private queued: string[] = [];
  private waiters: Waiter[] = [];
  private flushing: Promise<void> | undefined;
  /** Bytes appended so far (drives checkpoints); the file holds exactly these unless a flush fails. */
  bytes = 0;
  /** Set when a failed flush could not be cut back off the file: nothing more is appended to it. */
  private broken: Error | undefined;

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

  /** Whether a failed flush left this journal unusable (a checkpoint then starts a new one). */
  get isBroken(): boolean {
    return this.broken !== undefined;
  }

  /** Appends an entry, given as its JSON text (putText, delText); resolves once it is durable. */
  append(text: string): Promise<void> {
    if (this.broken) return Promise.reject(new Error(`The index journal ${this.file} cannot be written since an earlier failure: ${this.broken.message}`));
    return new Promise((resolve, reject) => {
      this.queued.push(`${text}\n`);
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
        // None of this flush is acknowledged. What reached the file is cut off: replay stops at
        // the first line it cannot read, so a torn line left here would hide every entry that
        // later flushes acknowledge.
        await this.handle.truncate(this.bytes).catch((cut: Error) => (this.broken = cut));
        for (const w of waiters) w.reject(err as Error);
        if (this.broken) {
          for (const w of this.waiters) w.reject(this.broken);
          this.queued = [];
          this.waiters = [];
        }
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
