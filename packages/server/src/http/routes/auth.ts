/** /v1/auth/token: exchanging the api token for a short-lived session token. */
import type { Authenticator, Principal } from '../../auth/credentials.js';
import { LIMITS } from '../../config/constants.js';
import { SessionTokenRequest, SessionTokenResponse } from '../../contract/auth.js';
import { route } from '../route.js';

export function authRoutes(auth: Authenticator) {
  return [
    route({
      method: 'post',
      path: '/v1/auth/token',
      tag: 'auth',
      summary: 'Mint a session token',
      description: [
        `Exchanges the api token for a session token valid ${LIMITS.sessionTokenTtlDefaultS / 60} minutes by default and at most one hour (\`ttl_seconds\`, 1–${LIMITS.sessionTokenTtlMaxS}; more answers 422), for widgets and pages that must not hold the api token.`,
        'The body is optional. Only a request carrying the api token itself may mint: a session token (no extending itself) or an OIDC token gets 403 `mint_refused`; a gateway without an api token answers 409 `no_api_token`.',
        'Session tokens are signed (HMAC-SHA256) with a key drawn at gateway start, so a restart invalidates them. A socket a session token opened is closed with code 4401 when the token expires.',
      ].join(' '),
      body: SessionTokenRequest,
      bodyOptional: true,
      response: SessionTokenResponse,
      errors: [401, 403, 409],
      handler: async (ctx, { body }) => {
        const minted = auth.mint(ctx.state.principal as Principal | undefined, { ttlSeconds: body.ttl_seconds, user: body.user });
        ctx.set('Cache-Control', 'no-store');
        return {
          access_token: minted.token,
          token_type: 'Bearer' as const,
          expires_in: minted.ttlSeconds,
          expires_at: new Date(minted.expiresAt).toISOString(),
          user: minted.subject ?? null,
        };
      },
    }),
  ];
}
