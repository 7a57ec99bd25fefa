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

  it('admits everyone without a token, and only the token with one', () => {
    expect(new Authenticator(undefined).authenticate(undefined)).toEqual({ kind: 'anonymous' });
    const auth = new Authenticator('tok');
    expect(auth.authenticate('tok')).toEqual({ kind: 'api_token' });
    expect(() => auth.authenticate(undefined)).toThrow(/Missing/);
    expect(() => auth.authenticate('nope')).toThrow(/Invalid/);
  });
});
