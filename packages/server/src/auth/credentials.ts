/**
 * Who is calling: the one place that decides. Transports only hand over the bearer string, read
 * from `Authorization` or, for WebSocket upgrades, from `Sec-WebSocket-Protocol: bearer, <token>`.
 * A token is the api token (compared in constant time), a session token this gateway minted
 * (auth/session-tokens.ts) or an OIDC access token of the configured issuer (auth/oidc.ts).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { PorticoError } from '../errors.js';
import { looksLikeJwt, OidcVerifier } from './oidc.js';
import { SESSION_TOKEN_PREFIX, SessionTokens, sharedKey, type MintedToken } from './session-tokens.js';

export const BEARER_SUBPROTOCOL = 'bearer';

/** Who a request was admitted as. */
export interface Principal {
  /** `peer`: another gateway forwarding a client's request to the owner of a live instance (docs/operating/several-gateways.md). */
  kind: 'anonymous' | 'api_token' | 'session' | 'oidc' | 'peer';
  /** A verified identity, when the credential carries one; it overrides X-Service-User. */
  subject?: string;
  /** When the credential stops being valid (ms since the epoch); a socket it admitted closes with 4401 then. */
  expiresAt?: number;
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

/** Headers of a request forwarded by another gateway to an instance's owner (service/ownership.ts, forwardHeaders). */
export const PEER_HEADERS = { gateway: 'x-portico-peer', user: 'x-portico-peer-user' } as const;

/** The forwarding gateway and the user it forwards for, when a request says it comes from a gateway. */
export function peerOf(get: (name: string) => string | undefined): { gateway: string; user?: string } | undefined {
  const gateway = get(PEER_HEADERS.gateway);
  if (!gateway) return undefined;
  const encoded = get(PEER_HEADERS.user);
  // Percent-encoded by the forwarding gateway (a header holds Latin-1 only).
  let user = encoded;
  try {
    user = encoded && decodeURIComponent(encoded);
  } catch {
    // not encoding: taken as it is
  }
  return user ? { gateway, user } : { gateway };
}

export interface AuthOptions {
  /** The shared secret; also the only credential that may mint session tokens. */
  apiToken?: string | undefined;
  /** Accept JWT access tokens of this OpenID Connect issuer (needs oidcAudience). */
  oidcIssuer?: string | undefined;
  oidcAudience?: string | undefined;
  /** The claim naming the user of an OIDC request (default `sub`). */
  oidcUserClaim?: string | undefined;
  /** What gateways present to each other when they forward (default: the api token). */
  peerSecret?: string | undefined;
  /** Several gateways share the index: session tokens minted by one are accepted by all (their key comes from the peer secret). */
  sharedIndex?: boolean | undefined;
  log?: ((line: string) => void) | undefined;
}

export class Authenticator {
  private readonly apiToken: string | undefined;
  private readonly peerSecret: string | undefined;
  private readonly sessions: SessionTokens;
  private readonly oidc: OidcVerifier | undefined;

  constructor(options: AuthOptions = {}) {
    this.apiToken = options.apiToken || undefined;
    this.peerSecret = options.peerSecret || this.apiToken;
    this.sessions = new SessionTokens(Date.now, options.sharedIndex && this.peerSecret ? sharedKey(this.peerSecret) : undefined);
    if (options.oidcIssuer) {
      if (!options.oidcAudience) {
        // Without an audience, any token the issuer mints for any other API would be accepted here.
        throw new Error('--oidc-issuer needs --oidc-audience (the aud its access tokens carry for this gateway)');
      }
      this.oidc = new OidcVerifier(
        { issuer: options.oidcIssuer, audience: options.oidcAudience, userClaim: options.oidcUserClaim || 'sub' },
        options.log ?? ((line) => process.stderr.write(`${line}\n`)),
      );
    }
  }

  /** Whether requests need a credential at all. */
  get required(): boolean {
    return Boolean(this.apiToken || this.oidc);
  }

  /**
   * Admits a request carrying `token`, or throws `unauthorized` (`oidc_unavailable` when the
   * provider is unreachable). `peer`: the request says it comes from another gateway (the
   * X-Portico-Peer headers), forwarding for `user`: admitted only with the peer secret (any
   * other credential, the api token too when a peer secret of its own is set, is refused), and
   * then the user it names is the request's verified user.
   */
  async authenticate(token: string | undefined, peer?: { gateway: string; user?: string | undefined }): Promise<Principal> {
    if (peer) return this.admitPeer(token, peer.user);
    if (!this.required) return { kind: 'anonymous' };
    if (token === undefined) throw new PorticoError('unauthorized', 'Missing bearer token');
    if (this.apiToken && safeEqual(token, this.apiToken)) return { kind: 'api_token' };
    if (this.apiToken && token.startsWith(SESSION_TOKEN_PREFIX)) {
      const { subject, expiresAt } = this.sessions.verify(token);
      return { kind: 'session', expiresAt, ...(subject ? { subject } : {}) };
    }
    if (this.oidc && looksLikeJwt(token)) {
      const { subject, expiresAt } = await this.oidc.verify(token);
      return { kind: 'oidc', subject, expiresAt };
    }
    throw new PorticoError('unauthorized', 'Invalid bearer token');
  }

  private admitPeer(token: string | undefined, user: string | undefined): Principal {
    const admitted = { kind: 'peer' as const, ...(user ? { subject: user } : {}) };
    // A gateway without any credential is open to every client already: its peers too.
    if (!this.peerSecret && !this.required) return admitted;
    if (!this.peerSecret) throw new PorticoError('unauthorized', 'This gateway accepts no gateway-to-gateway requests: it has no --peer-secret (nor --api-token)');
    if (token === undefined || !safeEqual(token, this.peerSecret)) throw new PorticoError('unauthorized', 'A gateway-to-gateway request (X-Portico-Peer) needs the peer secret');
    return admitted;
  }

  /**
   * A session token for the caller admitted as `principal`. Only the api token itself may mint:
   * a session token cannot extend itself, and an OIDC caller already holds a short-lived token
   * of its own (`mint_refused`). A gateway without an api token mints nothing (`no_api_token`).
   */
  mint(principal: Principal | undefined, request: { ttlSeconds?: number | undefined; user?: string | null | undefined } = {}): MintedToken {
    if (principal?.kind === 'session' || principal?.kind === 'oidc') {
      throw new PorticoError('mint_refused', `A ${principal.kind === 'oidc' ? 'OIDC' : 'session'} token cannot mint a session token; only the api token can`);
    }
    if (!this.apiToken) throw new PorticoError('no_api_token', 'This gateway has no api token, so it mints no session tokens');
    if (principal?.kind !== 'api_token') throw new PorticoError('unauthorized', 'Minting a session token needs the api token');
    return this.sessions.mint({ ...(request.ttlSeconds !== undefined ? { ttlSeconds: request.ttlSeconds } : {}), subject: request.user || undefined });
  }
}
