/**
 * The narrow store interface the service layer talks to. The embedded implementation is
 * lowdb (`lowdb-store.ts`); a server database can replace it for gateways that share an index.
 */

/** One materialized interface: config plus identity (no lifecycle). */
export interface InterfaceRecord {
  uuid: string;
  module: string;
  /** The interface class name. */
  kind: string;
  /** The resolved config; immutable. */
  config: Record<string, unknown>;
  /** What context interfaces folded into the identity. */
  predicate: Record<string, unknown>;
  /** The normalized version list the record was created from. */
  version: unknown[];
  /** Mutable label; last write wins. */
  label: string | null;
  /** Client metadata stored with the interface. */
  meta: Record<string, unknown>;
  created_by: string;
  /** ISO-8601 UTC. */
  created_at: string;
  archived: boolean;
}

export interface ListOptions {
  limit: number;
  offset?: number;
  includeArchived?: boolean;
}

export interface Store {
  /** The record, or undefined. */
  get(uuid: string): Promise<InterfaceRecord | undefined>;
  /**
   * Stores the record unless one with its uuid exists (then that one is returned unchanged).
   * Resolves only once the record is durable.
   */
  insert(record: InterfaceRecord): Promise<{ record: InterfaceRecord; created: boolean }>;
  /** Newest first. */
  list(options: ListOptions): Promise<InterfaceRecord[]>;
  /** Removes the record; false when there was none. */
  delete(uuid: string): Promise<boolean>;
  close(): Promise<void>;
}
