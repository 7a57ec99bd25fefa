/**
 * Who owns a live instance when several gateways serve one project (docs/operating/several-gateways.md):
 * a lease per (project, uuid) in the shared index, held by one gateway and renewed by it. Only
 * the PostgreSQL index has leases; the embedded store keeps one gateway per project (its lock).
 */

/** The gateway holding a lease, as another gateway reaches it. */
export interface LeaseHolder {
  /** The holder's gateway id (random per gateway process). */
  owner: string;
  /** Its base URL for other gateways (`--advertise-url`). */
  address: string;
  /** How long until another gateway may take the lease (ms, by the database's clock: its end, and its grace). */
  remainingMs: number;
  /** Whom the claim took the lease from: another gateway whose lease had run out (not for a free or own lease). */
  previous?: { owner: string; address: string };
}

export interface LeaseStore {
  /**
   * Takes the lease of (project, uuid) for `owner` when it is free, already its own, or ran out
   * more than `graceMs` ago (counted from the database's start when that is later: after an
   * outage, holders renew first), in one statement (two gateways racing for it get one holder),
   * and answers the holder after.
   */
  claim(project: string, uuid: string, owner: string, address: string, leaseMs: number, graceMs: number): Promise<LeaseHolder>;
  /**
   * Gives a lease `from` took back to `to`, its holder before (which still serves the instance),
   * for a lease time; false when `from` no longer holds it.
   */
  handBack(project: string, uuid: string, from: string, to: { owner: string; address: string }, leaseMs: number): Promise<boolean>;
  /** Extends every lease `owner` holds; answers the keys (`project\0uuid`) it still holds. */
  renew(owner: string, leaseMs: number): Promise<Set<string>>;
  /** Gives up the leases of these keys (`project\0uuid`), or every lease of `owner` without keys. */
  release(owner: string, keys?: readonly string[]): Promise<void>;
}

/** The key of an instance's lease. */
export const leaseKey = (project: string, uuid: string): string => `${project}\0${uuid}`;
