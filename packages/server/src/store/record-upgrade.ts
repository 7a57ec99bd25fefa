/**
 * The one migration of the embedded store's records: what a record written by an earlier gateway
 * means now. Records carry no version; each change here is recognized by its shape and is
 * idempotent, so a record read twice (a migration cut off by a crash and run again) comes out the
 * same, and nothing needs a marker of how far a migration got.
 */
import { INTERFACE_KIND, type InterfaceRecord } from './store.js';

/**
 * A record as this gateway reads it, from whatever gateway wrote it: before `class_name` existed,
 * `kind` held the interface class name, so a record without `class_name` takes it from `kind` and
 * becomes kind 'Interface' (the reference's meaning). Changes the object in place (a record read
 * from a file or a journal is nobody else's yet) and says whether it did; a current record is
 * left alone, so reading a record twice is the same as once. Every place the embedded store reads
 * records from (segments, journals, record files) passes them through here; the store writes the
 * segments it changed back at once (lowdb-store.ts, load), and a record file on the record's next write.
 *
 * @example upgradeRecord({ uuid: 'a', kind: 'Counter', … }) // true; now kind 'Interface', class_name 'Counter'
 */
export function upgradeRecord(record: InterfaceRecord): boolean {
  if (record === null || typeof record !== 'object' || typeof record.class_name === 'string') return false;
  // Not a record this reads (reindex leaves such files out): left as it is.
  if (typeof record.kind !== 'string') return false;
  record.class_name = record.kind;
  record.kind = INTERFACE_KIND;
  return true;
}
