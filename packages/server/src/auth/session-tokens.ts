/**
 * Session tokens: short-lived credentials the api token holder hands to widgets and pages, so
 * the api token itself never reaches a browser.
 *
 * Format: `pst1.<base64url payload>.<base64url signature>`, the payload the JSON claims
 * `{sub?, iat, exp, jti}` (seconds), the signature HMAC-SHA256 over `pst1.<payload>`. It is not a
 * JWT on purpose: the prefix routes it without parsing, and no JWT verifier (the OIDC one
 * included) could ever take it for one of its own tokens.
 *
 * Key: 32 random bytes per gateway process. A restart therefore invalidates every session token
 * (clients mint again). A key derived from the api token would survive restarts, but then each
 * session token handed to a page would let anyone try guesses of the api token offline. Several
 * gateways behind one proxy (a shared index) must accept each other's tokens, so there the key
 * comes from the secret they share (the peer secret, else the api token) through scrypt, which
 * makes each offline guess cost tens of milliseconds and 32 MiB (`sharedKey`).
 */
import { createHmac, randomBytes, randomUUID, scryptSync, timingSafeEqual } from 'node:crypto';
import { LIMITS } from '../config/constants.js';
import { PorticoError } from '../errors.js';

export const SESSION_TOKEN_PREFIX = 'pst1.';

interface Claims {
  /** The user the token attributes requests to (created_by); absent: X-Service-User applies. */
  sub?: string;
  iat: number;
  exp: number;
  jti: string;
}

export interface MintedToken {
  token: string;
  /** Expiry, ms since the epoch. */
  expiresAt: number;
  ttlSeconds: number;
  subject?: string;
}

export interface VerifiedToken {
  subject?: string;
  /** Expiry, ms since the epoch. */
  expiresAt: number;
}

/** The key every gateway sharing `secret` derives alike (slowly: see the key above). */
export function sharedKey(secret: string): Buffer {
  return scryptSync(secret, 'portico session tokens v1', 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 });
}

export class SessionTokens {
  constructor(
    private readonly now: () => number = Date.now,
    private readonly key: Buffer = randomBytes(32),
  ) {}

  /**
   * A new token valid for `ttlSeconds` (default LIMITS.sessionTokenTtlDefaultS, at most
   * LIMITS.sessionTokenTtlMaxS). Callers decide who may mint (Authenticator.mint).
   */
  mint({ ttlSeconds = LIMITS.sessionTokenTtlDefaultS, subject }: { ttlSeconds?: number; subject?: string | undefined } = {}): MintedToken {
    if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > LIMITS.sessionTokenTtlMaxS) {
      throw new PorticoError('invalid_argument', `ttl_seconds must be an integer from 1 to ${LIMITS.sessionTokenTtlMaxS}`);
    }
    const iat = Math.floor(this.now() / 1000);
    const claims: Claims = { ...(subject ? { sub: subject } : {}), iat, exp: iat + ttlSeconds, jti: randomUUID() };
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
    const signed = `${SESSION_TOKEN_PREFIX}${payload}`;
    return {
      token: `${signed}.${this.sign(signed).toString('base64url')}`,
      expiresAt: claims.exp * 1000,
      ttlSeconds,
      ...(subject ? { subject } : {}),
    };
  }

  /** The claims of a token this process minted, or `unauthorized` (tampered, foreign, expired). */
  verify(token: string): VerifiedToken {
    const invalid = () => new PorticoError('unauthorized', 'Invalid session token');
    const dot = token.lastIndexOf('.');
    if (!token.startsWith(SESSION_TOKEN_PREFIX) || dot <= SESSION_TOKEN_PREFIX.length) throw invalid();
    const signed = token.slice(0, dot);
    // Compared as text: base64url decoding is lenient, so comparing decoded bytes would admit
    // other spellings of the same signature. Equal lengths first (timingSafeEqual needs them);
    // the length of an HMAC is no secret.
    const given = Buffer.from(token.slice(dot + 1), 'utf8');
    const expected = Buffer.from(this.sign(signed).toString('base64url'), 'utf8');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid();

    let claims: Partial<Claims>;
    try {
      claims = JSON.parse(Buffer.from(signed.slice(SESSION_TOKEN_PREFIX.length), 'base64url').toString('utf8'));
    } catch {
      throw invalid();
    }
    if (typeof claims.exp !== 'number') throw invalid();
    const expiresAt = claims.exp * 1000;
    if (this.now() >= expiresAt) throw new PorticoError('unauthorized', 'Session token expired');
    return { expiresAt, ...(typeof claims.sub === 'string' && claims.sub ? { subject: claims.sub } : {}) };
  }

  private sign(data: string): Buffer {
    return createHmac('sha256', this.key).update(data, 'utf8').digest();
  }
}
