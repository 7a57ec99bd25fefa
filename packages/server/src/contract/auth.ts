/** POST /v1/auth/token: minting a session token. */
import { LIMITS } from '../config/constants.js';
import { z } from './zod.js';

export const SessionTokenRequest = z
  .object({
    ttl_seconds: z
      .number()
      .int()
      .min(1)
      .max(LIMITS.sessionTokenTtlMaxS)
      .default(LIMITS.sessionTokenTtlDefaultS)
      .describe(`Lifetime in seconds (default ${LIMITS.sessionTokenTtlDefaultS}, at most ${LIMITS.sessionTokenTtlMaxS}).`),
    user: z
      .string()
      .min(1)
      .max(256)
      .nullable()
      .optional()
      .describe('Fixes created_by for every request the token admits (X-Service-User is then ignored). Without it, X-Service-User applies as for the api token.'),
  })
  .openapi('SessionTokenRequest');

export const SessionTokenResponse = z
  .object({
    access_token: z.string().describe('`pst1.<payload>.<signature>`; send as `Authorization: Bearer <token>` or the WebSocket subprotocol `bearer, <token>`.'),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int().describe('Seconds until it expires.'),
    expires_at: z.string().describe('When it expires (ISO 8601, UTC).'),
    user: z.string().nullable().describe('The user it attributes requests to, if fixed.'),
  })
  .openapi('SessionTokenResponse');

export type SessionTokenRequest = z.infer<typeof SessionTokenRequest>;
