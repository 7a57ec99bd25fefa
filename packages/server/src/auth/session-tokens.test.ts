import { describe, expect, it } from 'vitest';
import { LIMITS } from '../config/constants.js';
import { SessionTokens } from './session-tokens.js';

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

describe('session tokens', () => {
  it('round-trip their user and expiry, in the pst1 format', () => {
    const tokens = new SessionTokens(() => 1_000_000_000_000);
    const minted = tokens.mint({ ttlSeconds: 60, subject: 'ada' });
    expect(minted.token).toMatch(/^pst1\.[\w-]+\.[\w-]{43}$/);
    expect(minted.expiresAt).toBe(1_000_000_060_000);
    expect(tokens.verify(minted.token)).toEqual({ subject: 'ada', expiresAt: minted.expiresAt });
    expect(tokens.mint().expiresAt).toBe(1_000_000_000_000 + LIMITS.sessionTokenTtlDefaultS * 1000);
  });

  it('expire at exp, not a millisecond later', () => {
    let now = 1_000_000_000_000;
    const tokens = new SessionTokens(() => now);
    const { token } = tokens.mint({ ttlSeconds: 5 });
    now += 4_999;
    expect(tokens.verify(token).expiresAt).toBe(1_000_000_005_000);
    now += 1;
    expect(() => tokens.verify(token)).toThrow(/expired/);
  });

  it('refuse tampering: payload, signature, another spelling of the signature, another process’s key', () => {
    const tokens = new SessionTokens();
    const { token } = tokens.mint({ subject: 'ada' });
    const [prefix, payload, sig] = token.split('.') as [string, string, string];
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), sub: 'root' })).toString('base64url');
    const flip = (s: string, at: number) => s.slice(0, at) + (s[at] === 'A' ? 'B' : 'A') + s.slice(at + 1);
    for (const bad of [
      `${prefix}.${forged}.${sig}`,
      `${prefix}.${payload}.${flip(sig, 0)}`,
      // The last of 43 characters carries 2 unused bits: the next letter decodes to the same bytes.
      `${prefix}.${payload}.${sig.slice(0, 42)}${B64URL[B64URL.indexOf(sig[42]!) + 1]}`,
      `${prefix}.${payload}.${sig}A`,
      `${prefix}.${payload}`,
      'pst1.',
      new SessionTokens().mint().token,
    ]) {
      expect(() => tokens.verify(bad), bad).toThrow(/Invalid session token/);
    }
  });

  it('lifetimes are whole seconds from 1 to the maximum', () => {
    const tokens = new SessionTokens();
    for (const ttlSeconds of [0, -1, 1.5, LIMITS.sessionTokenTtlMaxS + 1]) expect(() => tokens.mint({ ttlSeconds })).toThrow(/ttl_seconds/);
    expect(tokens.mint({ ttlSeconds: LIMITS.sessionTokenTtlMaxS }).ttlSeconds).toBe(3600);
  });
});
