/**
 * `portico index copy`: moves an index between stores (embedded ⇄ PostgreSQL) through the Store
 * interface alone. Records travel whole (uuid, config, created_by, created_at, label, archived),
 * page by page in uuid order. Idempotent and resumable: a record already in the target is left
 * as it is except for its label and archived flag, which take the source's, so running the copy
 * again after an interruption finishes the job and changes nothing that was already copied.
 */
import type { Store } from './store.js';

/** Records per page read from the source (the search's largest page). */
const PAGE = 1000;

export interface CopyProgress {
  /** Records read from the source so far. */
  read: number;
  /** Of those, new in the target. */
  created: number;
  /** Of those, already there but with another label or archived flag (now the source's). */
  updated: number;
}

export async function copyIndex(from: Store, to: Store, onPage: (progress: CopyProgress) => void = () => {}): Promise<CopyProgress> {
  const progress: CopyProgress = { read: 0, created: 0, updated: 0 };
  let cursor: string | null = null;
  do {
    const page = await from.search({ include_archived: true, sort: [{ by: 'uuid', direction: 'asc' }], limit: PAGE, cursor });
    await Promise.all(
      page.items.map(async (record) => {
        const { record: there, created } = await to.insert(record);
        if (created) progress.created++;
        else if (there.label !== record.label || there.archived !== record.archived) {
          await to.update(record.uuid, { label: record.label, archived: record.archived });
          progress.updated++;
        }
      }),
    );
    progress.read += page.items.length;
    onPage({ ...progress });
    cursor = page.next_cursor;
  } while (cursor);
  return progress;
}
