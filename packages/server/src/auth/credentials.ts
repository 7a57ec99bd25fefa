/**
 * Who is calling. Reads a bearer credential from `Authorization` or, for WebSocket upgrades,
 * from `Sec-WebSocket-Protocol: bearer, <token>`, and checks it against the api token in
 * constant time. Session tokens and OIDC plug in here (issue 8) without touching transports.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { PorticoError } from '../errors.js';

export const BEARER_SUBPROTOCOL = 'bearer';

/** Who a request was admitted as. */
export interface Principal {
  kind: 'anonymous' | 'api_token';
  /** A verified identity, when the credential carries one; it overrides X-Service-User. */
  subject?: string;
}

/**
 * Compares two secrets in time independent of where they differ. Both are hashed first so that
 * neither the length nor the content of the expected secret leaks through timing.
 */
export function safeEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive). */
export function bearerFromHeader(value: string | undefined): string | undefined {
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(value ?? '');
  return match?.[1];
}

/** The token of a `Sec-WebSocket-Protocol: bearer, <token>` offer. */
export function bearerFromSubprotocol(value: string | undefined): string | undefined {
  const offered = (value ?? '').split(',').map((p) => p.trim());
  const at = offered.indexOf(BEARER_SUBPROTOCOL);
  return at >= 0 ? offered[at + 1] || undefined : undefined;
}

export class Authenticator {
  constructor(private readonly apiToken: string | undefined) {}

  /** Whether requests need a credential at all. */
  get required(): boolean {
    return Boolean(this.apiToken);
  }

  /** Admits a request carrying `token`, or throws `unauthorized`. */
  authenticate(token: string | undefined): Principal {
    if (!this.apiToken) return { kind: 'anonymous' };
    if (token === undefined) throw new PorticoError('unauthorized', 'Missing bearer token');
    if (safeEqual(token, this.apiToken)) return { kind: 'api_token' };
    throw new PorticoError('unauthorized', 'Invalid bearer token');
  }
}
