/**
 * The two homes of an index, behind one way of opening a project's store: the embedded store
 * (one per project, guarded by the project's index lock) or PostgreSQL (one pool for every
 * project, no lock: the database orders the writers of several gateways).
 */
import type { LockHolder } from './files.js';
import { LowdbStore } from './lowdb-store.js';
import { isPostgresUrl, PostgresIndex } from './postgres/postgres-store.js';
import type { LeaseStore } from './leases.js';
import { PostgresLeases } from './postgres/leases.js';
import type { Store } from './store.js';

export interface IndexBackend {
  /** Opens a project's store. */
  open(project: string, holder?: LockHolder): Promise<Store>;
  /** Releases what the backend shares between projects (after every store closed). */
  close(): Promise<void>;
  /** Instance leases, for an index several gateways share; none for the embedded store (one gateway per project). */
  leases?: LeaseStore;
  /**
   * Whether the index can be reached now: undefined when it can, else what is wrong, for health
   * and metrics. The embedded store is a file of an open project: always reachable.
   */
  probe(): Promise<string | undefined>;
}

/** The backend for a `--store` value: a postgres:// URL, or undefined for the embedded store. */
export function indexBackend(store: string | undefined, log?: (line: string) => void): IndexBackend {
  if (!isPostgresUrl(store)) return { open: (project, holder) => LowdbStore.open(project, holder), close: async () => {}, probe: async () => undefined };
  const index = PostgresIndex.connect(store, log);
  return { open: (project) => index.open(project), close: () => index.close(), leases: new PostgresLeases(index), probe: () => index.probe() };
}
