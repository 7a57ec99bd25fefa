/**
 * The embedded store: lowdb segment files plus a journal, under `<project>/.portico/index/`.
 *
 * A single whole-file JSON index cannot durably acknowledge a thousand creates a second at 100k
 * records (each write would re-serialize tens of megabytes). So records are spread over
 * SEGMENTS lowdb files by a hash of their uuid, and every mutation is first appended to a
 * journal with group commit (fdatasync before the caller is answered). A checkpoint writes the
 * dirty segments (atomic rename, fsync) and drops the journal they cover. Opening replays the
 * journals over the segments, so a crash at any moment leaves every acknowledged mutation.
 *
 *   index/seg-00.json … seg-63.json   lowdb: { seq, interfaces: { uuid: record } }
 *   index/journal-<n>.jsonl            mutations after the segments' seq watermarks
 *   interfaces/<uuid>/interface.json   each record beside its data, for `portico reindex`
 *
 * In memory the records live in a RecordIndex (lowdb-index.ts), whose ordered lists and value maps
 * answer the common searches without a pass over every record. Opening indexes them once, after
 * the journals are replayed into the segments, as parsed segment by segment: a pass over every
 * record follows that order, the one they lie in memory (so they are not copied again in
 * created_at order, which used to leave a second copy of every record as garbage and the gateway
 * at 300+ MB after loading 100k).
 *
 * One process at a time writes an index: the lock (files.ts, acquireLock) is a unix socket the
 * kernel frees when its holder dies, so a restart right after a crash never waits on a stale pid.
 *
 * Records written by earlier gateways are migrated as they are read (record-upgrade.ts): opening
 * upgrades each one in memory and writes the segments that held any back before it answers, with
 * the same checkpoint that folds replayed journals in. A crash halfway leaves some segments new and
 * some old, and the next open upgrades what is left: the upgrade is idempotent.
 *
 * Nothing poisons the index: a write is checked and serialized (record-json.ts) before it touches
 * memory, and one whose journal entry fails to reach the disk is taken back out of memory, so what
 * the store holds is always what a restart would load. Files are written compact (no indentation);
 * indented ones from earlier gateways read the same.
 */
import { mkdir, readdir, rm, unlink } from 'node:fs/promises';
import path from 'node:path';
import { Low } from 'lowdb';
import { DataFile } from 'lowdb/node';
import type { FindRequest, SearchResponse } from '../contract/search.js';
import { logInBackground } from '../ops/logger.js';
import { RecordIndex } from './lowdb-index.js';
import { compileQuery } from './query.js';
import { acquireLock, type LockHolder, noteFreshFolder, readRecordFiles, removeInterfaceDir, STORE_DIR, syncPath, writeNewRecordFile, writeRecordFile } from './files.js';
import { delText, Journal, putText, readJournal, type JournalEntry } from './journal.js';
import { checkPatch, isStorable, newRecordJson, recordJson } from './record-json.js';
import { upgradeRecord } from './record-upgrade.js';
import type { InterfaceRecord, RecordPatch, Store } from './store.js';

export const INDEX_DIR = 'index';
const SEGMENTS = 64;
/** Checkpoint once the journal holds this much… */
const CHECKPOINT_BYTES = 16 * 1024 * 1024;
/** …or once it has waited this long with anything in it. */
const CHECKPOINT_MS = 30_000;
const CHECK_EVERY_MS = 2_000;

interface SegmentFile {
  /** Every journal entry up to this sequence number is included. */
  seq: number;
  interfaces: Record<string, InterfaceRecord>;
}

/** The unsettled mutations of one uuid. */
interface Pending {
  /** The record as the journal holds it (undefined: none): what memory returns to when a write fails. */
  durable: InterfaceRecord | undefined;
  /** The sequence number of the latest mutation applied in memory. */
  latest: number;
  /** Mutations applied and not settled yet. */
  count: number;
  /** Settles (never rejects) when the latest one has. */
  settled: Promise<void>;
}

/** FNV-1a: a stable, cheap spread of uuids over the segments. */
function segmentOf(uuid: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < uuid.length; i++) {
    hash ^= uuid.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % SEGMENTS;
}

function segmentFile(dir: string, i: number): string {
  return path.join(dir, `seg-${String(i).padStart(2, '0')}.json`);
}

/**
 * Reads the segments one after the other: read at once, all their JSON text (about 750 bytes a
 * record) was alive together with the records parsed from it, and the heap grew by that much.
 */
async function openSegments(dir: string): Promise<Array<Low<SegmentFile>>> {
  const segments: Array<Low<SegmentFile>> = [];
  for (let i = 0; i < SEGMENTS; i++) {
    // Not JSONFilePreset: it silently swaps in an in-memory adapter when NODE_ENV=test. Not
    // JSONFile: it indents, which made a deeply nested record take its depth squared in bytes.
    const file = new DataFile<SegmentFile>(segmentFile(dir, i), { parse: JSON.parse, stringify: (data) => JSON.stringify(data) });
    const db = new Low<SegmentFile>(file, { seq: 0, interfaces: {} });
    await db.read();
    db.data ??= { seq: 0, interfaces: {} };
    segments.push(db);
  }
  return segments;
}

async function journalFiles(dir: string): Promise<Array<{ file: string; n: number }>> {
  return (await readdir(dir))
    .map((name) => ({ name, m: /^journal-(\d+)\.jsonl$/.exec(name) }))
    .filter((e) => e.m)
    .map((e) => ({ file: path.join(dir, e.name), n: Number(e.m![1]) }))
    .sort((a, b) => a.n - b.n);
}

export class LowdbStore implements Store {
  private readonly records = new RecordIndex();
  private readonly dirty = new Set<number>();
  /** uuid → its mutations on their way to disk (until they settle). */
  private readonly pending = new Map<string, Pending>();
  private seq = 0;
  private journalNumber = 0;
  private journal!: Journal;
  private journalOpenedAt = Date.now();
  private checkpointing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  private constructor(
    readonly project: string,
    readonly dir: string,
    private readonly segments: Array<Low<SegmentFile>>,
    private readonly unlock: () => Promise<void>,
  ) {}

  /** Opens (or creates) a project's index: takes its lock, loads segments, replays journals. */
  static async open(project: string, holder?: LockHolder): Promise<LowdbStore> {
    const dir = path.join(project, STORE_DIR, INDEX_DIR);
    await mkdir(dir, { recursive: true });
    const unlock = await acquireLock(dir, holder);
    try {
      const store = new LowdbStore(project, dir, await openSegments(dir), unlock);
      await store.load();
      return store;
    } catch (err) {
      await unlock();
      throw err;
    }
  }

  /**
   * Rebuilds a project's index from its interface directories (each carries interface.json),
   * keeping created_by, label and archived. A record file that holds no record the store can
   * write back is left out. Returns how many records it indexed.
   */
  static async reindex(project: string): Promise<number> {
    const dir = path.join(project, STORE_DIR, INDEX_DIR);
    await mkdir(dir, { recursive: true });
    const unlock = await acquireLock(dir);
    try {
      const found = (await readRecordFiles(project)).filter(isStorable);
      for (const { file } of await journalFiles(dir)) await unlink(file);
      const segments = await openSegments(dir);
      for (const seg of segments) seg.data = { seq: 0, interfaces: {} };
      for (const record of found) segments[segmentOf(record.uuid)]!.data.interfaces[record.uuid] = record;
      for (let i = 0; i < SEGMENTS; i++) {
        await segments[i]!.write();
        await syncPath(segmentFile(dir, i));
      }
      await syncPath(dir);
      return found.length;
    } finally {
      await unlock();
    }
  }

  private async load(): Promise<void> {
    this.segments.forEach((seg, i) => {
      this.seq = Math.max(this.seq, seg.data.seq);
      let upgraded = false;
      for (const record of Object.values(seg.data.interfaces)) upgraded = upgradeRecord(record) || upgraded;
      if (upgraded) this.dirty.add(i);
    });
    const journals = await journalFiles(this.dir);
    for (const { file, n } of journals) {
      this.journalNumber = Math.max(this.journalNumber, n);
      for (const entry of await readJournal(file)) {
        const uuid = entry.put?.uuid ?? entry.del;
        if (uuid === undefined) continue;
        const i = segmentOf(uuid);
        this.seq = Math.max(this.seq, entry.s);
        if (entry.s <= this.segments[i]!.data.seq) continue; // already in the segment
        // Into the segment only: the records are indexed once, all together, below.
        const { interfaces } = this.segments[i]!.data;
        if (entry.put) {
          interfaces[uuid] = entry.put as unknown as InterfaceRecord;
          upgradeRecord(interfaces[uuid]);
        } else delete interfaces[uuid];
        this.dirty.add(i);
      }
    }
    this.records.load(this.segments.flatMap((seg) => Object.values(seg.data.interfaces)));
    this.journal = await Journal.open(path.join(this.dir, `journal-${++this.journalNumber}.jsonl`));
    this.journalOpenedAt = Date.now();
    // Fold what was replayed (and what was upgraded) into the segments now, so the old journals can go.
    if (journals.length || this.dirty.size) await this.checkpoint(journals.map((j) => j.file));
    // Only now: loading a large index takes seconds, and there is no journal to check before.
    this.timer = setInterval(() => {
      const due = this.journal.bytes >= CHECKPOINT_BYTES || (this.journal.bytes > 0 && Date.now() - this.journalOpenedAt >= CHECKPOINT_MS);
      if (due) void this.checkpoint().catch((err) => logInBackground(`store checkpoint failed (${this.dir}): ${(err as Error)?.stack ?? err}`, 'error'));
    }, CHECK_EVERY_MS);
    this.timer.unref();
  }

  async get(uuid: string): Promise<InterfaceRecord | undefined> {
    return this.records.get(uuid);
  }

  async existing(uuid: string): Promise<InterfaceRecord | undefined> {
    for (let existing = this.records.get(uuid); existing; existing = this.records.get(uuid)) {
      const pending = this.pending.get(uuid);
      if (!pending) return existing;
      // It may still be on its way to disk: acknowledge only once it is there. If that write
      // failed (or another changed it meanwhile), look again.
      await pending.settled;
      if (this.records.get(uuid) === existing) return existing;
    }
    return undefined;
  }

  async insert(record: InterfaceRecord): Promise<{ record: InterfaceRecord; created: boolean }> {
    const text = newRecordJson(record);
    const existing = await this.existing(record.uuid);
    if (existing) return { record: existing, created: false };
    if (await this.mutate(record.uuid, record, text, true)) noteFreshFolder(record);
    return { record, created: true };
  }

  async update(uuid: string, patch: RecordPatch): Promise<InterfaceRecord | undefined> {
    checkPatch(patch, uuid);
    const current = this.records.get(uuid);
    if (!current) return undefined;
    const next: InterfaceRecord = { ...current, ...patch };
    await this.mutate(uuid, next, recordJson(next));
    return next;
  }

  async delete(uuid: string): Promise<boolean> {
    if (!this.records.get(uuid)) return false;
    await this.mutate(uuid, undefined);
    return true;
  }

  async search(request: FindRequest): Promise<SearchResponse> {
    return this.records.search(compileQuery(request));
  }

  get size(): number {
    return this.records.size;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    await Promise.all([...this.pending.values()].map((pending) => pending.settled));
    await this.checkpoint();
    await this.journal.close();
    await this.unlock();
  }

  /**
   * Puts `record` (its JSON `text` checked and serialized by the caller) or, without one, deletes
   * the uuid. Applied in memory at once (so reads see it and concurrent writers order by arrival:
   * last write wins), it resolves when it is durable: journal entry fdatasync'd, then the record
   * file beside the interface's data written (or, for a delete, the directory removed: only once
   * the delete is durable, so a failed one keeps the data; one after the other for one uuid, so
   * the last write's file stays). When the journal entry fails, memory returns to what the journal
   * holds, unless a later mutation of the uuid was applied meanwhile: that one carries the whole
   * record and takes back the same way if it fails too. `created`: the put makes the record (its
   * record file is then a new one, files.ts writeNewRecordFile); it resolves with whether that
   * made the record's folder (true) or found it or could not tell (false).
   */
  private async mutate(uuid: string, record: InterfaceRecord | undefined, text?: string, created = false): Promise<boolean> {
    const s = ++this.seq;
    const own = this.pending.get(uuid) ?? { durable: this.records.get(uuid), latest: s, count: 0, settled: Promise.resolve() };
    this.pending.set(uuid, own);
    own.latest = s;
    own.count++;
    this.apply(record ? { s, put: record as JournalEntry['put'] & InterfaceRecord } : { s, del: uuid });
    // Journal flushes settle in sequence order, so `durable` follows the disk.
    const journaled = this.journal.append(record ? putText(s, text!) : delText(s, uuid)).then(
      () => {
        own.durable = record;
      },
      (err: unknown) => {
        if (own.latest === s) this.apply(own.durable ? { s: 0, put: own.durable as JournalEntry['put'] & InterfaceRecord } : { s: 0, del: uuid });
        throw err;
      },
    );
    const previous = own.settled;
    const done = journaled.then(async () => {
      await previous;
      if (!record) return removeInterfaceDir(this.project, uuid).then(() => false);
      return created ? writeNewRecordFile(this.project, uuid, text!) : writeRecordFile(this.project, uuid, text!).then(() => false);
    });
    own.settled = done.then(
      () => this.settle(uuid, own),
      () => this.settle(uuid, own),
    );
    return done;
  }

  private settle(uuid: string, pending: Pending): void {
    if (--pending.count === 0 && this.pending.get(uuid) === pending) this.pending.delete(uuid);
  }

  private apply(entry: JournalEntry): void {
    if (entry.put) {
      const record = entry.put as unknown as InterfaceRecord;
      const i = segmentOf(record.uuid);
      this.records.put(record);
      this.segments[i]!.data.interfaces[record.uuid] = record;
      this.dirty.add(i);
    } else if (entry.del !== undefined) {
      const i = segmentOf(entry.del);
      this.records.delete(entry.del);
      delete this.segments[i]!.data.interfaces[entry.del];
      this.dirty.add(i);
    }
  }

  /**
   * Writes the dirty segments durably, then deletes the journals they cover. New mutations go
   * to a fresh journal meanwhile; a crash halfway leaves journals that replay idempotently.
   */
  private checkpoint(extraJournals: string[] = []): Promise<void> {
    this.checkpointing ??= (async () => {
      try {
        const old = this.journal;
        if ((old.bytes > 0 || old.isBroken) && !this.closed) {
          this.journal = await Journal.open(path.join(this.dir, `journal-${++this.journalNumber}.jsonl`));
          this.journalOpenedAt = Date.now();
        }
        await old.settled();
        const dirty = [...this.dirty];
        this.dirty.clear();
        for (const i of dirty) {
          const seg = this.segments[i]!;
          seg.data.seq = this.seq;
          await seg.write();
          await syncPath(segmentFile(this.dir, i));
        }
        if (dirty.length) await syncPath(this.dir);
        const covered = [...extraJournals];
        if (old !== this.journal) {
          await old.close();
          covered.push(old.file);
        } else if (this.closed && old.bytes > 0) {
          covered.push(old.file); // closing: everything is in the segments now
        }
        for (const file of covered) await rm(file, { force: true });
      } finally {
        this.checkpointing = undefined;
      }
    })();
    return this.checkpointing;
  }
}
