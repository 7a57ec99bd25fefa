/**
 * The narrow store interface the service layer talks to. The embedded implementation is
 * lowdb (`lowdb-store.ts`); a server database can replace it for gateways that share an index.
 */
import type { FindRequest, SearchResponse } from '../contract/search.js';

/** The `kind` of every interface record, as the reference server names its records' kinds. */
export const INTERFACE_KIND = 'Interface';

/** One materialized interface: config plus identity (no lifecycle). */
export interface InterfaceRecord {
  uuid: string;
  module: string;
  /** The record's kind, as the reference names it: always `'Interface'` for an interface record (INTERFACE_KIND). */
  kind: string;
  /** The interface class name (before 2026-12 it was in `kind`: record-json.ts, upgradeRecord). */
  class_name: string;
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

/** The mutable fields of a record (config is immutable). */
export type RecordPatch = Partial<Pick<InterfaceRecord, 'label' | 'archived'>>;

export interface Store {
  /** The record, or undefined. */
  get(uuid: string): Promise<InterfaceRecord | undefined>;
  /**
   * The record once it is durable (a create of it still on its way to disk is waited for), or
   * undefined: what insert would answer for a record that exists, without one to insert.
   */
  existing(uuid: string): Promise<InterfaceRecord | undefined>;
  /**
   * Stores the record unless one with its uuid exists (then that one is returned unchanged).
   * Resolves only once the record is durable.
   */
  insert(record: InterfaceRecord): Promise<{ record: InterfaceRecord; created: boolean }>;
  /** Replaces mutable fields; last write wins. Undefined when there is no such record. */
  update(uuid: string, patch: RecordPatch): Promise<InterfaceRecord | undefined>;
  /** Removes the record and its interface directory; false when there was none. */
  delete(uuid: string): Promise<boolean>;
  /** Filters, sorts and pages the records (see contract/search.ts for the semantics). */
  search(request: FindRequest): Promise<SearchResponse>;
  close(): Promise<void>;
}
