/**
 * OIDC access tokens against a real OpenID provider (oidc-provider) on loopback: discovery, JWKS,
 * audience and issuer checks, expiry with bounded clock skew, tampering, key rotation, the user
 * claim, and sockets closed with 4401 when their token expires.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../packages/server/src/index.js';
import { api, cleanup, Client, gateway } from './helpers.js';

const AUDIENCE = 'urn:portico:api';
const SHORT_TTL_S = 3;

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' } };
}

/**
 * A real OpenID provider on 127.0.0.1:0 issuing JWT access tokens by client_credentials:
 * client `svc` gets tokens valid 10 minutes, `svc-short` tokens valid SHORT_TTL_S seconds; each
 * token also carries `email: <client>@example.test`. `rotate` restarts the provider on the same
 * issuer with another key set, as a provider rotating its keys does.
 */
class Issuer {
  url = '';
  private provider: { callback(): (req: IncomingMessage, res: ServerResponse) => void } | undefined;
  private readonly server: Server = createServer((req, res) => this.provider!.callback()(req, res));

  constructor(public keys: SigningKey[]) {}

  static async start(keys: SigningKey[]): Promise<Issuer> {
    const issuer = new Issuer(keys);
    await new Promise<void>((resolve) => issuer.server.listen(0, '127.0.0.1', resolve));
    issuer.url = `http://127.0.0.1:${(issuer.server.address() as AddressInfo).port}`;
    issuer.rotate(keys);
    return issuer;
  }

  rotate(keys: SigningKey[]): void {
    this.keys = keys;
    this.provider = new Provider(this.url, {
      clients: ['svc', 'svc-short'].map((client_id) => ({
        client_id,
        client_secret: `${client_id}-secret`,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
      })),
      jwks: { keys: keys.map((k) => k.jwk) },
      scopes: ['api:read'],
      cookies: { keys: ['test-cookie-key'] },
      ttl: { ClientCredentials: (_ctx: unknown, token: { resourceServer?: { accessTokenTTL?: number } }) => token.resourceServer?.accessTokenTTL ?? 600 },
      extraTokenClaims: (_ctx: unknown, token: { clientId: string }) => ({ email: `${token.clientId}@example.test` }),
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => AUDIENCE,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx: unknown, resource: string, client: { clientId: string }) => ({
            scope: 'api:read',
            audience: resource,
            accessTokenFormat: 'jwt',
            accessTokenTTL: client.clientId === 'svc-short' ? SHORT_TTL_S : 600,
            jwt: { sign: { alg: 'RS256' } },
          }),
        },
      },
    });
  }

  /** An access token for `client`, for the resource (audience) `resource`. */
  async token(client = 'svc', resource = AUDIENCE): Promise<string> {
    const res = await fetch(`${this.url}/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${client}:${client}-secret`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'api:read', resource }),
    });
    const body = (await res.json()) as { access_token?: string };
    if (!res.ok || !body.access_token) throw new Error(`token endpoint: ${res.status} ${JSON.stringify(body)}`);
    return body.access_token;
  }

  /** A token signed with this provider's current key but with claims of our choosing (e.g. exp in the past). */
  async sign(claims: Record<string, unknown>, key: SigningKey = this.keys[0]!): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iss: this.url, aud: AUDIENCE, sub: 'svc', iat: now, exp: now + 600, ...claims })
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: key.kid })
      .sign(key.privateKey);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Resolves with the close code and reason of a socket, and when it came. */
function closed(client: Client): Promise<{ code: number; reason: string; at: number }> {
  return new Promise((resolve) => client.ws.once('close', (code, reason) => resolve({ code, reason: String(reason), at: Date.now() })));
}

let issuer: Issuer;
let k1: SigningKey;
afterAll(async () => {
  await cleanup();
  await issuer?.close();
});
beforeAll(async () => {
  k1 = await signingKey('k1');
  issuer = await Issuer.start([k1]);
});

describe('OIDC access tokens', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway({ oidcIssuer: issuer.url, oidcAudience: AUDIENCE, apiToken: 'api-secret' });
  });

  it('a token from the issuer is admitted; created_by is its sub, and X-Service-User is ignored', async () => {
    const token = await issuer.token();
    expect((await api(g, 'GET', '/v1/health', undefined, bearer(token))).status).toBe(200);
    const created = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 101 }] }, { ...bearer(token), 'x-service-user': 'mallory' });
    expect(created.status).toBe(200);
    expect(created.body.created_by).toBe('svc');
    const found = await api(g, 'POST', '/v1/interfaces/search', { created_by: 'svc' }, bearer(token));
    expect(found.body.items.map((i: { uuid: string }) => i.uuid)).toContain(created.body.uuid);
  });

  it('over the WebSocket too (bearer subprotocol): connect attributes to the verified identity', async () => {
    const token = await issuer.token();
    const c = await Client.open(g.url, { protocols: ['bearer', token], headers: { 'x-service-user': 'mallory' } });
    expect(c.ws.protocol).toBe('bearer');
    const connected = await c.connect('counter', { version: [{ start: 102 }] });
    expect(connected.payload.created_by).toBe('svc');
    c.close();
  });

  it('the api token still works beside OIDC, and the OIDC caller cannot mint a session token', async () => {
    expect((await api(g, 'GET', '/v1/health', undefined, bearer('api-secret'))).status).toBe(200);
    const mint = await api(g, 'POST', '/v1/auth/token', undefined, bearer(await issuer.token()));
    expect(mint.status).toBe(403);
    expect(mint.body.code).toBe('mint_refused');
  });

  it('a token for another audience is refused', async () => {
    const token = await issuer.token('svc', 'urn:someone:else');
    const res = await api(g, 'GET', '/v1/health', undefined, bearer(token));
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(res.body).toMatchObject({ code: 'unauthorized', message: expect.stringMatching(/aud/) });
    await expect(Client.open(g.url, { protocols: ['bearer', token] })).rejects.toMatchObject({ status: 401 });
  });

  it('a token of another issuer is refused, even one signed with the same key', async () => {
    const other = await Issuer.start([k1]);
    try {
      const token = await other.token();
      const res = await api(g, 'GET', '/v1/health', undefined, bearer(token));
      expect(res.status).toBe(401);
      expect(res.body.message).toMatch(/issuer/);
      await expect(Client.open(g.url, { headers: bearer(token) })).rejects.toMatchObject({ status: 401 });
    } finally {
      await other.close();
    }
  });

  it('tampered tokens are refused: claims changed, signature changed, or signed by a stranger under the same kid', async () => {
    const token = await issuer.token();
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, sub: 'root' })).toString('base64url');
    const flipped = signature.slice(0, 10) + (signature[10] === 'A' ? 'B' : 'A') + signature.slice(11);
    const stranger = await issuer.sign({}, { ...(await signingKey('k1')) });
    const cases: Array<[string, RegExp]> = [
      [`${header}.${forged}.${signature}`, /signature/],
      [`${header}.${payload}.${flipped}`, /signature/],
      [stranger, /signature/],
      [`${header}.${payload}`, /Invalid bearer token/],
    ];
    for (const [bad, message] of cases) {
      const res = await api(g, 'GET', '/v1/health', undefined, bearer(bad));
      expect(res.status, bad).toBe(401);
      expect(res.body.message).toMatch(message);
      await expect(Client.open(g.url, { protocols: ['bearer', bad] })).rejects.toMatchObject({ status: 401 });
    }
  });

  it(`an expired token is refused; clock skew is tolerated up to ${LIMITS.oidcClockToleranceS} s (REST), never for a new socket`, async () => {
    const now = Math.floor(Date.now() / 1000);
    const expired = await issuer.sign({ iat: now - 700, exp: now - LIMITS.oidcClockToleranceS - 30 });
    const res = await api(g, 'GET', '/v1/health', undefined, bearer(expired));
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/expired/);
    await expect(Client.open(g.url, { headers: bearer(expired) })).rejects.toMatchObject({ status: 401 });

    const skewed = await issuer.sign({ iat: now - 600, exp: now - 5 });
    expect((await api(g, 'GET', '/v1/health', undefined, bearer(skewed))).status).toBe(200);
    await expect(Client.open(g.url, { headers: bearer(skewed) })).rejects.toMatchObject({ status: 401 });

    const noExp = await new SignJWT({ iss: issuer.url, aud: AUDIENCE, sub: 'svc' }).setProtectedHeader({ alg: 'RS256', kid: k1.kid }).sign(k1.privateKey);
    expect((await api(g, 'GET', '/v1/health', undefined, bearer(noExp))).status).toBe(401);
  });

  it('a socket admitted by an OIDC token is closed with 4401 when the token expires', async () => {
    const token = await issuer.token('svc-short');
    const exp = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).exp * 1000;
    const c = await Client.open(g.url, { protocols: ['bearer', token] });
    const done = closed(c);
    await c.connect('counter');
    expect(await c.request({ type: 'call', method: 'add', args: [1] })).toMatchObject({ type: 'result' });
    const { code, reason, at } = await done;
    expect(code).toBe(4401);
    expect(reason).toBe('token expired');
    expect(at).toBeGreaterThanOrEqual(exp - 50);
    expect(at).toBeLessThan(exp + 2000);
  });

  it('keys rotate: after the provider changes its keys, its new tokens verify and tokens of the dropped key do not', async () => {
    const before = await issuer.token();
    expect((await api(g, 'GET', '/v1/health', undefined, bearer(before))).status).toBe(200);
    issuer.rotate([await signingKey('k2')]);
    // An unknown kid refetches the key set, at most once per cooldown after the last fetch.
    await new Promise((resolve) => setTimeout(resolve, LIMITS.oidcJwksCooldownMs + 100));
    const after = await issuer.token();
    expect(JSON.parse(Buffer.from(after.split('.')[0]!, 'base64url').toString()).kid).toBe('k2');
    expect((await api(g, 'GET', '/v1/health', undefined, bearer(after))).status).toBe(200);
    const stale = await api(g, 'GET', '/v1/health', undefined, bearer(before));
    expect(stale.status).toBe(401);
    expect(stale.body.message).toMatch(/key/);
    issuer.rotate([k1]);
  });
});

describe('OIDC configuration', () => {
  it('the user claim is configurable; a token without it is refused', async () => {
    const g = await gateway({ oidcIssuer: issuer.url, oidcAudience: AUDIENCE, oidcUserClaim: 'email' });
    const token = await issuer.token();
    const created = await api(g, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 103 }] }, bearer(token));
    expect(created.body.created_by).toBe('svc@example.test');
    const without = await issuer.sign({});
    expect((await api(g, 'GET', '/v1/health', undefined, bearer(without))).body.message).toMatch(/'email' claim/);
  });

  it('an OIDC-only gateway requires a credential, and mints nothing', async () => {
    const g = await gateway({ oidcIssuer: issuer.url, oidcAudience: AUDIENCE });
    expect((await api(g, 'GET', '/v1/health')).status).toBe(401);
    await expect(Client.open(g.url)).rejects.toMatchObject({ status: 401 });
    expect((await api(g, 'GET', '/v1/health', undefined, bearer('not-a-jwt'))).status).toBe(401);
    const mint = await api(g, 'POST', '/v1/auth/token', undefined, bearer(await issuer.token()));
    expect(mint.body.code).toBe('mint_refused');
  });

  it('an unreachable provider answers 503 oidc_unavailable for JWTs, while the api token keeps working', async () => {
    const gone = await Issuer.start([k1]);
    const token = await gone.token();
    await gone.close();
    const g = await gateway({ oidcIssuer: gone.url, oidcAudience: AUDIENCE, apiToken: 'api-secret' });
    const res = await api(g, 'GET', '/v1/health', undefined, bearer(token));
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('oidc_unavailable');
    expect((await api(g, 'GET', '/v1/health', undefined, bearer('api-secret'))).status).toBe(200);
  });

  it('an issuer without an audience, or over plain http off loopback, does not start', async () => {
    await expect(gateway({ oidcIssuer: issuer.url })).rejects.toThrow(/oidc-audience/);
    await expect(gateway({ oidcIssuer: 'http://id.example.test', oidcAudience: AUDIENCE })).rejects.toThrow(/https/);
  });
});
