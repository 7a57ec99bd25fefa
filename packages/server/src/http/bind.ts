/** Binds a REST request to its project, interpreter and user (query wins over header). */
import type Koa from 'koa';
import type { Principal } from '../auth/credentials.js';
import type { RequestContext } from '../service/context.js';
import type { Gateway } from '../service/gateway.js';

export const HEADERS = {
  project: 'x-service-project',
  python: 'x-service-python',
  user: 'x-service-user',
} as const;

function queryValue(ctx: Koa.Context, name: string): string | undefined {
  if (!ctx.querystring) return undefined; // most requests have none: no parse, no parsed object
  const value = ctx.query[name];
  return Array.isArray(value) ? value[0] : value;
}

export function bindRequest(ctx: Koa.Context, gateway: Gateway): Promise<RequestContext> {
  const principal = ctx.state.principal as Principal | undefined;
  return gateway.bind({
    project: queryValue(ctx, 'project') ?? ctx.get(HEADERS.project),
    python: queryValue(ctx, 'python') ?? ctx.get(HEADERS.python),
    user: ctx.get(HEADERS.user),
    // gateway.bind lets a verified identity (OIDC) win over the self-declared header.
    principal,
  });
}
