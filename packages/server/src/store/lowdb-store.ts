/**
 * The embedded store: one lowdb JSON file per project at `<project>/.portico/index.json`.
 * lowdb's writer goes through a temp file and a rename (a crash leaves the previous or the next
 * file, never a torn one) and coalesces writes that overlap; a mutation is acknowledged only
 * when the write that carries it has finished.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Low } from 'lowdb';
import { JSONFile } from 'lowdb/node';
import type { InterfaceRecord, ListOptions, Store } from './store.js';

interface IndexFile {
  version: 1;
  interfaces: Record<string, InterfaceRecord>;
}

export const STORE_DIR = '.portico';

export class LowdbStore implements Store {
  /** The write carrying the latest mutation; a record is acknowledged once it has settled. */
  private lastWrite: Promise<void> = Promise.resolve();

  private constructor(
    private readonly db: Low<IndexFile>,
    readonly file: string,
  ) {}

  /** Opens (or creates) the index of a project. */
  static async open(project: string): Promise<LowdbStore> {
    const dir = path.join(project, STORE_DIR);
    await mkdir(dir, { recursive: true });
    const file = path.join(dir, 'index.json');
    // Not JSONFilePreset: it silently swaps in an in-memory adapter when NODE_ENV=test.
    const db = new Low<IndexFile>(new JSONFile(file), { version: 1, interfaces: {} });
    await db.read();
    db.data ??= { version: 1, interfaces: {} };
    db.data.interfaces ??= {};
    return new LowdbStore(db, file);
  }

  async get(uuid: string): Promise<InterfaceRecord | undefined> {
    return Object.hasOwn(this.db.data.interfaces, uuid) ? this.db.data.interfaces[uuid] : undefined;
  }

  async insert(record: InterfaceRecord): Promise<{ record: InterfaceRecord; created: boolean }> {
    const existing = await this.get(record.uuid);
    if (existing) {
      // It may still be on its way to disk: acknowledge only once that write is done.
      await this.lastWrite;
      return { record: existing, created: false };
    }
    this.db.data.interfaces[record.uuid] = record;
    await this.write();
    return { record, created: true };
  }

  async list({ limit, offset = 0, includeArchived = false }: ListOptions): Promise<InterfaceRecord[]> {
    const records = Object.values(this.db.data.interfaces).filter((r) => includeArchived || !r.archived);
    records.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : a.uuid < b.uuid ? -1 : 1));
    return records.slice(offset, offset + limit);
  }

  async delete(uuid: string): Promise<boolean> {
    if (!Object.hasOwn(this.db.data.interfaces, uuid)) return false;
    delete this.db.data.interfaces[uuid];
    await this.write();
    return true;
  }

  async close(): Promise<void> {
    await this.lastWrite;
  }

  /** Writes the file (lowdb coalesces overlapping writes) and remembers the write. */
  private write(): Promise<void> {
    const write = this.db.write();
    this.lastWrite = write.catch(() => undefined);
    return write;
  }
}
