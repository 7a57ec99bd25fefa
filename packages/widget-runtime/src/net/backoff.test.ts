import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../limits.js';
import { backoffDelay } from './backoff.js';

describe('backoffDelay', () => {
  const limits = { reconnectBaseMs: 500, reconnectMaxMs: 30_000, reconnectJitter: 0.5 };

  it('doubles from the base and stops at the cap', () => {
    const delays = [0, 1, 2, 3, 6, 7, 50].map((attempt) => backoffDelay(attempt, limits, () => 0));
    expect(delays).toEqual([500, 1000, 2000, 4000, 30_000, 30_000, 30_000]);
  });

  it('jitter takes at most the jitter fraction off', () => {
    expect(backoffDelay(2, limits, () => 0.999_999)).toBe(1000);
    expect(backoffDelay(2, limits, () => 0.5)).toBe(1500);
    expect(backoffDelay(2, { ...limits, reconnectJitter: 0 }, () => 0.9)).toBe(2000);
  });

  it('stays within [cap × (1 − jitter), cap] for random draws', () => {
    for (let i = 0; i < 200; i++) {
      const delay = backoffDelay(i % 12, DEFAULT_LIMITS);
      expect(delay).toBeGreaterThanOrEqual(DEFAULT_LIMITS.reconnectBaseMs * 0.5);
      expect(delay).toBeLessThanOrEqual(DEFAULT_LIMITS.reconnectMaxMs);
    }
  });
});
