/**
 * OpenID Connect access tokens: JWTs from one configured issuer, verified against the keys its
 * discovery document points at. The discovery document is fetched once, on the first token
 * (its `issuer` must equal the configured one exactly); the key set is cached, refetched after
 * LIMITS.oidcJwksMaxAgeMs, and refetched at once for a key id it does not know (rotation), at
 * most once per LIMITS.oidcJwksCooldownMs. Signature, `iss`, `aud` and `exp` (required) are
 * checked with LIMITS.oidcClockToleranceS of clock skew.
 */
import { createRemoteJWKSet, decodeJwt, errors, jwtVerify, type JWTPayload } from 'jose';
import { LIMITS } from '../config/constants.js';
import { PorticoError } from '../errors.js';

/** Asymmetric algorithms only: a key set is public, so an HMAC "key" from it would be no secret. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

export interface OidcConfig {
  issuer: string;
  audience: string;
  /** The claim naming the user (created_by). */
  userClaim: string;
}

export interface OidcIdentity {
  subject: string;
  /** The token's exp, ms since the epoch. */
  expiresAt: number;
}

type KeySet = ReturnType<typeof createRemoteJWKSet>;

/** https, or http on a loopback host (a test or a sidecar provider); keys over plain http elsewhere could be swapped in transit. */
function checkTransport(url: URL, what: string): void {
  const loopback = url.hostname === 'localhost' || url.hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new Error(`${what} '${url.href}' must use https (plain http only on a loopback address)`);
  }
}

/** Three base64url segments: the shape of a JWS compact serialization. */
export function looksLikeJwt(token: string): boolean {
  return /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token);
}

export class OidcVerifier {
  private keys: Promise<KeySet> | undefined;
  private failure: { at: number; error: PorticoError } | undefined;

  constructor(
    private readonly config: OidcConfig,
    private readonly log: (line: string) => void,
  ) {
    checkTransport(new URL(config.issuer), 'The OIDC issuer');
  }

  /** The verified identity of `token`, or `unauthorized`; `oidc_unavailable` when the provider cannot be reached. */
  async verify(token: string): Promise<OidcIdentity> {
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(token);
    } catch {
      throw new PorticoError('unauthorized', 'Invalid bearer token');
    }
    // Foreign tokens are refused before any key lookup, so they never make us refetch keys.
    if (unverified.iss !== this.config.issuer) throw new PorticoError('unauthorized', 'OIDC token is not from the configured issuer');

    const keys = await this.keySet();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        issuer: this.config.issuer,
        audience: this.config.audience,
        clockTolerance: LIMITS.oidcClockToleranceS,
        algorithms: ALGORITHMS,
        requiredClaims: ['exp'],
      }));
    } catch (err) {
      throw this.refusal(err);
    }
    const claim = payload[this.config.userClaim];
    const subject = typeof claim === 'string' ? claim : typeof claim === 'number' ? String(claim) : '';
    if (!subject) throw new PorticoError('unauthorized', `OIDC token has no '${this.config.userClaim}' claim to name its user`);
    return { subject, expiresAt: payload.exp! * 1000 };
  }

  private refusal(err: unknown): PorticoError {
    if (err instanceof errors.JWTExpired) return new PorticoError('unauthorized', 'OIDC token expired');
    if (err instanceof errors.JWTClaimValidationFailed) return new PorticoError('unauthorized', `OIDC token refused: ${err.message}`);
    if (err instanceof errors.JWSSignatureVerificationFailed) return new PorticoError('unauthorized', 'OIDC token signature is invalid');
    if (err instanceof errors.JWKSNoMatchingKey) return new PorticoError('unauthorized', 'OIDC token is signed with a key its issuer does not publish');
    // A JWKS fetch that timed out, failed (TypeError from fetch) or answered no key set.
    if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid || !(err instanceof errors.JOSEError) || err.code === 'ERR_JOSE_GENERIC') {
      this.log(`oidc: fetching the keys of ${this.config.issuer} failed: ${(err as Error)?.message ?? err}`);
      return new PorticoError('oidc_unavailable', 'The OpenID provider’s keys cannot be fetched; try again later');
    }
    return new PorticoError('unauthorized', 'Invalid OIDC token');
  }

  private keySet(): Promise<KeySet> {
    if (this.keys) return this.keys;
    if (this.failure && Date.now() - this.failure.at < LIMITS.oidcJwksCooldownMs) return Promise.reject(this.failure.error);
    this.keys = this.discover().catch((err) => {
      this.keys = undefined;
      this.log(`oidc: discovery of ${this.config.issuer} failed: ${(err as Error)?.message ?? err}`);
      const error = new PorticoError('oidc_unavailable', 'The OpenID provider’s discovery document cannot be fetched; try again later');
      this.failure = { at: Date.now(), error };
      throw error;
    });
    return this.keys;
  }

  private async discover(): Promise<KeySet> {
    const url = `${this.config.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    const res = await fetch(url, { headers: { accept: 'application/json' }, redirect: 'error', signal: AbortSignal.timeout(LIMITS.oidcFetchTimeoutMs) });
    if (!res.ok) throw new Error(`${url} answered ${res.status}`);
    const doc = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
    // OpenID Connect Discovery 1.0 §4.3: the document must name exactly the issuer we asked.
    if (doc.issuer !== this.config.issuer) throw new Error(`${url} names the issuer '${String(doc.issuer)}', not '${this.config.issuer}'`);
    if (typeof doc.jwks_uri !== 'string') throw new Error(`${url} has no jwks_uri`);
    const jwksUri = new URL(doc.jwks_uri);
    checkTransport(jwksUri, 'The jwks_uri');
    return createRemoteJWKSet(jwksUri, {
      timeoutDuration: LIMITS.oidcFetchTimeoutMs,
      cooldownDuration: LIMITS.oidcJwksCooldownMs,
      cacheMaxAge: LIMITS.oidcJwksMaxAgeMs,
    });
  }
}
