/**
 * One live instance, wherever a request lands (docs/operating/several-gateways.md). With a PostgreSQL
 * index several gateways serve one project, and each live instance has one owner: the gateway
 * that took its lease (store/leases.ts). The others forward to it. This service answers where
 * an instance lives (`locate`), keeps the leases this gateway holds renewed, gives up those no
 * longer in use, and says which ones it lost. With the embedded store (one gateway per project)
 * everything is local and nothing is written.
 *
 * - A lease is taken on the first request that needs the instance (one statement) and renewed
 *   for all held leases at once every third of the lease time; a gateway holding none writes
 *   nothing.
 * - Another gateway's lease is remembered until it ends by the database's clock, so forwarding
 *   costs no statement per request.
 * - An owner found unreachable (`unreachable`) is waited out: its lease ends within the lease
 *   time, and the next gateway asked takes it and makes the instance again from its record.
 * - A lease taken over from another gateway is not kept before that gateway was asked: one cut
 *   off from the database alone cannot renew, and still serves its instance. It answers the
 *   question (`serving`, PEER_INSTANCES_PATH) and keeps its instance, the lease handed back to
 *   it; one that answers no, or nothing within PROBE_MS, loses it.
 * - The database lost: instances held stay held (calls to them go on); a new one cannot be
 *   claimed and answers `store_unavailable`, as a create does.
 * - A gateway that did not even try to renew for a lease time (its process was stopped, its
 *   event loop blocked) may have lost its leases meanwhile: it asks the database again before it
 *   serves a held instance, so a copy another gateway has made since is never served here too.
 */
import { randomUUID } from 'node:crypto';
import { PorticoError } from '../errors.js';
import type { LogLine } from '../ops/logger.js';
import { leaseKey, type LeaseHolder, type LeaseStore } from '../store/leases.js';
import type { RequestContext } from './context.js';

/** Where a live instance lives: here, or at another gateway (its base URL). */
export type Owner = { local: true } | { local: false; address: string; owner: string };

const LOCAL: Owner = { local: true };
/** A remembered lease of another gateway is trusted until this long before it ends (ms). */
const CLOCK_MARGIN_MS = 250;
/** What is known of another gateway's lease is forgotten this long (at least) after it ended. */
const FORGET_AFTER_MS = 60_000;
/** How long a gateway whose lease ran out has to say that it still serves the instance (ms, at most a third of the lease). */
const PROBE_MS = 1_000;
/** Where a gateway asks another whether it still serves an instance: `GET {PEER_INSTANCES_PATH}/{uuid}?project=…` (gateways only). */
export const PEER_INSTANCES_PATH = '/v1/peers/instances';

export interface OwnershipOptions {
  leases: LeaseStore | undefined;
  leaseMs: number;
  /** What a forward presents to the owner (the peer secret, else the api token). */
  secret: string | undefined;
  /** Whether an instance is in use here: live in a worker, or a client attached to it. */
  inUse: (project: string, uuid: string) => boolean;
  /** This gateway held the lease of an instance and another gateway has it now (this one could not renew in time). */
  onLost: (project: string, uuid: string) => void;
  log: LogLine;
}

export class InstanceOwnership {
  /** This gateway process, as the leases name it. */
  readonly id = randomUUID();
  private address = '';
  /** Leases held here: key → when taken (performance.now()). */
  private readonly held = new Map<string, number>();
  /** Other gateways' leases: key → holder, trusted until `until` (performance.now()). */
  private readonly known = new Map<string, { owner: string; address: string; until: number }>();
  /** Owners (gateway ids) a forward could not reach → until when they count as gone. */
  private readonly gone = new Map<string, number>();
  private readonly timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  /** The last renewal failed because the database is away: held leases stay held (and count as fresh) until one succeeds. */
  private renewFailing = false;
  /** When each held lease's instance was last asked for here (performance.now()): one in use is not given back. */
  private readonly used = new Map<string, number>();
  /**
   * When the leases held here were last vouched for (performance.now()): the start of the last
   * renewal that answered. A lease neither taken nor vouched for within a lease time is asked for
   * again (this gateway may have been frozen meanwhile), unless the database is away.
   */
  private vouched = performance.now();
  private readonly leases: LeaseStore | undefined;
  /** How long a lease lasts unless renewed (ms, `--instance-lease`). */
  readonly leaseMs: number;
  /**
   * How long a lease that ran out stays its holder's before another gateway may take it (ms): one
   * renewal period and a margin, counted from its end or from the database's start, whichever is
   * later. After an outage every lease has run out; their holders renew within this time.
   */
  private readonly graceMs: number;

  constructor(private readonly options: OwnershipOptions) {
    this.leases = options.leases;
    this.leaseMs = options.leaseMs;
    this.graceMs = options.leaseMs / 3 + CLOCK_MARGIN_MS;
    if (this.leases) {
      this.timer = setInterval(() => {
        void this.renewSoon();
        this.forgetOld();
      }, this.leaseMs / 3);
      this.timer.unref();
    }
  }

  /** Whether several gateways may serve a project (an index with leases). */
  get shared(): boolean {
    return this.leases !== undefined;
  }

  /** Where other gateways reach this one (set once the server listens). */
  setAddress(url: string): void {
    this.address = url;
  }

  /** True unless another gateway may own the instance: this gateway holds its lease (vouched for lately), or leases do not exist here. */
  holds(project: string, uuid: string): boolean {
    if (!this.leases) return true;
    const since = this.held.get(leaseKey(project, uuid));
    return since !== undefined && (this.renewFailing || this.fresh(since));
  }

  /**
   * Whether this gateway serves the live instance of `uuid` under a lease it holds (renewed
   * lately, or not renewable since the database is away for it): another gateway that found the
   * lease ended asks this before it takes it over.
   */
  serving(project: string, uuid: string): boolean {
    return this.shared && this.holds(project, uuid) && this.options.inUse(project, uuid);
  }

  /** Whether a lease this gateway took at `since` is surely still its own. */
  private fresh(since: number): boolean {
    return performance.now() < Math.max(since, this.vouched) + this.leaseMs - CLOCK_MARGIN_MS;
  }

  /**
   * Where the live instance of `uuid` lives, taking its lease when nobody holds it (or, with
   * `claim: false`, answering local then: nobody has it live). A request `forwarded` by another
   * gateway is never forwarded again: `instance_moved` when a third gateway owns it now.
   */
  async locate(ctx: RequestContext, uuid: string, { claim = true }: { claim?: boolean } = {}): Promise<Owner> {
    const leases = this.leases;
    if (!leases) return LOCAL;
    const project = ctx.project.dir;
    const key = leaseKey(project, uuid);
    const since = this.held.get(key);
    if (since !== undefined && (this.renewFailing || this.fresh(since))) {
      this.used.set(key, performance.now());
      return LOCAL;
    }
    const known = this.known.get(key);
    if (known && !ctx.forwarded && performance.now() < known.until && !this.isGone(known.owner)) return { local: false, address: known.address, owner: known.owner };
    const deadline = performance.now() + this.leaseMs + this.graceMs + CLOCK_MARGIN_MS;
    for (;;) {
      const started = performance.now();
      let holder: LeaseHolder;
      try {
        holder = await this.claim(ctx, project, uuid);
      } catch (err) {
        const away = (err as PorticoError).code === 'store_unavailable';
        // Held, and the database away: it stays held (calls to live instances go on).
        if (away && since !== undefined && this.held.has(key)) return LOCAL;
        // Another's, and the database away: nobody can take a lease now, so its owner is still the one known.
        if (away && known && !ctx.forwarded && !this.isGone(known.owner)) return { local: false, address: known.address, owner: known.owner };
        throw err;
      }
      if (holder.owner === this.id) {
        this.known.delete(key);
        if (!claim && since === undefined) {
          // Taken only to learn that nobody held it: given back at once.
          await leases.release(this.id, [key]).catch(() => undefined);
          return LOCAL;
        }
        this.held.set(key, performance.now());
        this.used.set(key, performance.now());
        return LOCAL;
      }
      if (this.drop(key)) this.lost(project, uuid);
      if (ctx.forwarded) {
        throw new PorticoError('instance_moved', `Another gateway owns the live instance of '${uuid}' now; retry`);
      }
      if (!this.isGone(holder.owner)) {
        this.known.set(key, { owner: holder.owner, address: holder.address, until: started + holder.remainingMs - CLOCK_MARGIN_MS });
        return { local: false, address: holder.address, owner: holder.owner };
      }
      // Its owner is gone: its lease runs out within the lease time (and a grace), then this gateway takes it.
      const wait = Math.min(holder.remainingMs + 20, deadline - performance.now());
      if (wait <= 0) {
        throw new PorticoError('owner_unreachable', `The gateway that owns the live instance of '${uuid}' cannot be reached from this one, and it still renews its lease; retry shortly`, {
          internal: `owner of ${uuid} at ${holder.address} unreachable from ${this.address} while it renews its lease`,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  /**
   * Whether `owner` still holds the lease of `uuid`, asked of the database: a forward that waits
   * on its owner asks once per lease time, since an owner that stopped renewing (frozen, cut off
   * without a reset) may keep its connection open and answer nothing. A lease that ran out is
   * taken here (the instance is made again here on its next use). The database away: held.
   */
  async stillOwns(ctx: RequestContext, uuid: string, owner: string): Promise<boolean> {
    const project = ctx.project.dir;
    const key = leaseKey(project, uuid);
    let holder: LeaseHolder;
    try {
      holder = await this.claim(ctx, project, uuid);
    } catch {
      return true;
    }
    if (holder.owner === owner) return true;
    this.known.delete(key);
    if (holder.owner === this.id) this.held.set(key, performance.now());
    return false;
  }

  /**
   * Claims the lease of `uuid` (see LeaseStore.claim). One taken over from another gateway that
   * is not known to be gone goes back to it when it says it still serves the instance: it could
   * not renew only because the database is away for it alone.
   */
  private async claim(ctx: RequestContext, project: string, uuid: string): Promise<LeaseHolder> {
    const leases = this.leases!;
    const holder = await leases.claim(project, uuid, this.id, this.address, this.leaseMs, this.graceMs);
    const previous = holder.previous;
    if (holder.owner !== this.id || !previous || this.isGone(previous.owner)) return holder;
    const asked = { headers: this.forwardHeaders(ctx), params: this.forwardParams(ctx), timeoutMs: Math.min(PROBE_MS, this.leaseMs / 3) };
    if (!(await stillServes(previous.address, uuid, asked))) return holder;
    try {
      // Not this gateway's any more (released meanwhile): whoever has it now is the answer.
      if (!(await leases.handBack(project, uuid, this.id, previous, this.leaseMs))) return await leases.claim(project, uuid, this.id, this.address, this.leaseMs, this.graceMs);
    } catch {
      return holder;
    }
    this.options.log(`instance ${uuid}: its lease ran out, but its owner at ${previous.address} still serves it (it cannot reach the index): handed back`, 'warn');
    return { owner: previous.owner, address: previous.address, remainingMs: this.leaseMs };
  }

  /**
   * A forward to the gateway `owner` (its id) could not reach it (refused, reset, closed unasked):
   * its instances are taken over once their leases end. By id, not address: a gateway started
   * again at the same address is another owner, reached at once.
   */
  unreachable(owner: string): void {
    // Gone for longer than `locate` waits (a lease time, its grace and a margin): an owner that
    // still renews after that wait is answered `owner_unreachable`, not tried again.
    this.gone.set(owner, performance.now() + this.leaseMs + this.graceMs + 2 * CLOCK_MARGIN_MS);
    for (const [key, known] of this.known) if (known.owner === owner) this.known.delete(key);
  }

  /** What this gateway remembered of the owner of `uuid` is out of date (the owner said it moved on). */
  forget(ctx: RequestContext, uuid: string): void {
    this.known.delete(leaseKey(ctx.project.dir, uuid));
  }

  private isGone(owner: string): boolean {
    const until = this.gone.get(owner);
    if (until === undefined) return false;
    if (performance.now() < until) return true;
    this.gone.delete(owner);
    return false;
  }

  /** Forgets a held lease; whether it was held. */
  private drop(key: string): boolean {
    this.used.delete(key);
    return this.held.delete(key);
  }

  /**
   * What a forward to an owner carries: who forwards, for whom (percent-encoded: a header holds
   * Latin-1 only, a user name anything), with the peer secret; the project and interpreter go as
   * query parameters (a path may hold anything too).
   */
  forwardHeaders(ctx: RequestContext): Record<string, string> {
    const secret = this.options.secret;
    return {
      ...(secret ? { authorization: `Bearer ${secret}` } : {}),
      'x-portico-peer': this.id,
      'x-portico-peer-user': encodeURIComponent(ctx.user),
    };
  }

  /** The query parameters of a forward: the request's project and interpreter. */
  forwardParams(ctx: RequestContext): Record<string, string> {
    return { project: ctx.project.dir, python: ctx.python };
  }

  /**
   * Drops what is remembered of other gateways' leases that ended long ago (and of owners found
   * gone), so that a gateway forwarding to many instances over days keeps no entry per instance
   * ever used. Kept a while past their end: with the database away, the last known owner is still
   * where calls go.
   */
  private forgetOld(): void {
    const now = performance.now();
    const keep = Math.max(10 * this.leaseMs, FORGET_AFTER_MS);
    for (const [key, known] of this.known) if (now - known.until > keep) this.known.delete(key);
    for (const [address, until] of this.gone) if (now > until) this.gone.delete(address);
  }

  private renewSoon(): Promise<void> {
    this.renewing ??= this.renew().finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  /** Gives up leases no longer in use, renews the rest in one statement, and reports those another gateway took. */
  private async renew(): Promise<void> {
    const leases = this.leases!;
    if (this.held.size === 0) return;
    const began = performance.now();
    const unused: string[] = [];
    for (const [key, since] of this.held) {
      // A lease taken just now may not have its instance yet: kept for a lease time at least.
      const [project, uuid] = key.split('\0') as [string, string];
      if (began - Math.max(since, this.used.get(key) ?? 0) > this.leaseMs && !this.options.inUse(project, uuid)) unused.push(key);
    }
    try {
      if (unused.length) {
        for (const key of unused) this.drop(key);
        await leases.release(this.id, unused);
      }
      const still = await leases.renew(this.id, this.leaseMs);
      if (this.renewFailing) this.options.log('instance leases renewed again: the index database is back', 'info');
      this.renewFailing = false;
      this.vouched = Math.max(this.vouched, began);
      for (const [key, since] of this.held) {
        if (still.has(key) || since >= began) continue;
        this.drop(key);
        const [project, uuid] = key.split('\0') as [string, string];
        this.lost(project, uuid);
      }
    } catch (err) {
      // Held leases stay held: calls to live instances go on while the database is away.
      if (!this.renewFailing) this.options.log(`instance leases could not be renewed: ${(err as Error).message}`, 'warn');
      this.renewFailing = true;
    }
  }

  /** A lease this gateway held is another's now: its copy of the instance goes. */
  private lost(project: string, uuid: string): void {
    this.options.log(`lost the lease of instance ${uuid} to another gateway (it could not be renewed in time)`, 'warn');
    this.options.onLost(project, uuid);
  }

  /** Gives up every lease (the gateway stops): other gateways take its instances at once. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.renewing?.catch(() => undefined);
    if (!this.leases || this.held.size === 0) return;
    this.held.clear();
    this.used.clear();
    await this.leases.release(this.id).catch((err: unknown) => this.options.log(`instance leases not given back: ${(err as Error).message}`, 'warn'));
  }
}

/** Whether the gateway at `address` says it still serves the live instance of `uuid` (no answer within `timeoutMs`: no). */
async function stillServes(address: string, uuid: string, asked: { headers: Record<string, string>; params: Record<string, string>; timeoutMs: number }): Promise<boolean> {
  try {
    const url = new URL(`${PEER_INSTANCES_PATH}/${encodeURIComponent(uuid)}`, address);
    for (const [name, value] of Object.entries(asked.params)) url.searchParams.set(name, value);
    const answer = await fetch(url, { headers: asked.headers, signal: AbortSignal.timeout(asked.timeoutMs) });
    return answer.ok && ((await answer.json()) as { serving?: unknown }).serving === true;
  } catch {
    return false;
  }
}

/** The owner refused this gateway as a peer: the gateways' peer secrets differ (or none is set). */
export function peerRefused(status: number): PorticoError {
  return new PorticoError('owner_unreachable', 'The gateway that owns this live instance refused this one: the gateways must share one --peer-secret (or api token)', {
    internal: `the owner answered ${status} to a forward: give every gateway the same --peer-secret`,
  });
}
