/**
 * Reconnect delays: exponential from `reconnectBaseMs`, capped at `reconnectMaxMs`, with the
 * top `reconnectJitter` fraction randomized so that many pages dropped by one gateway restart do
 * not all come back in the same millisecond.
 */
import type { Limits } from '../limits.js';

export type BackoffLimits = Pick<Limits, 'reconnectBaseMs' | 'reconnectMaxMs' | 'reconnectJitter'>;

/** Delay before reconnect attempt `attempt` (0 = the first after a drop). */
export function backoffDelay(attempt: number, limits: BackoffLimits, random: () => number = Math.random): number {
  const ceiling = Math.min(limits.reconnectMaxMs, limits.reconnectBaseMs * 2 ** Math.min(attempt, 30));
  const jitter = Math.min(1, Math.max(0, limits.reconnectJitter));
  return Math.round(ceiling * (1 - jitter * random()));
}
