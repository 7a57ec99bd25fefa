import { describe, expect, it } from 'vitest';
import { Authenticator, bearerFromHeader, bearerFromSubprotocol, safeEqual } from './credentials.js';

describe('credentials', () => {
  it('safeEqual compares exactly, whatever the lengths', () => {
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
    expect(safeEqual('', 'x')).toBe(false);
  });

  it('reads bearer tokens from the header and the subprotocol offer', () => {
    expect(bearerFromHeader('Bearer t0k')).toBe('t0k');
    expect(bearerFromHeader('bearer   t0k ')).toBe('t0k');
    expect(bearerFromHeader('Basic t0k')).toBeUndefined();
    expect(bearerFromHeader('Bearer a b')).toBeUndefined();
    expect(bearerFromHeader(undefined)).toBeUndefined();
    expect(bearerFromSubprotocol('bearer, t0k')).toBe('t0k');
    expect(bearerFromSubprotocol('json, bearer,t0k')).toBe('t0k');
    expect(bearerFromSubprotocol('bearer')).toBeUndefined();
    expect(bearerFromSubprotocol('json')).toBeUndefined();
  });

  it('admits everyone without a token, and only the token with one', async () => {
    expect(await new Authenticator().authenticate(undefined)).toEqual({ kind: 'anonymous' });
    const auth = new Authenticator({ apiToken: 'tok' });
    expect(await auth.authenticate('tok')).toEqual({ kind: 'api_token' });
    await expect(auth.authenticate(undefined)).rejects.toThrow(/Missing/);
    await expect(auth.authenticate('nope')).rejects.toThrow(/Invalid/);
  });

  it('only the api token mints; session tokens it mints are admitted with their user and expiry', async () => {
    const auth = new Authenticator({ apiToken: 'tok' });
    const minted = auth.mint({ kind: 'api_token' }, { ttlSeconds: 60, user: 'ada' });
    const principal = await auth.authenticate(minted.token);
    expect(principal).toEqual({ kind: 'session', subject: 'ada', expiresAt: minted.expiresAt });
    expect(() => auth.mint(principal)).toThrow(expect.objectContaining({ code: 'mint_refused' }));
    expect(() => auth.mint({ kind: 'oidc', subject: 'x' })).toThrow(expect.objectContaining({ code: 'mint_refused' }));
    expect(() => new Authenticator().mint({ kind: 'anonymous' })).toThrow(expect.objectContaining({ code: 'no_api_token' }));
  });

  it('an OIDC issuer needs an audience and https (plain http on loopback only)', () => {
    expect(() => new Authenticator({ oidcIssuer: 'https://id.example' })).toThrow(/oidc-audience/);
    expect(() => new Authenticator({ oidcIssuer: 'http://id.example', oidcAudience: 'a' })).toThrow(/https/);
    expect(new Authenticator({ oidcIssuer: 'http://127.0.0.1:9', oidcAudience: 'a' }).required).toBe(true);
  });
});
