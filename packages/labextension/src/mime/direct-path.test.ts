import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { directPathProblem } from './direct-path.js';

const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

/** A gateway stand-in on loopback answering /v1/origin with `allowed` and /v1/health with 401 unless the bearer is `token`. */
async function gatewayLike(allowed: boolean, token?: string): Promise<string> {
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/v1/origin') return res.end(JSON.stringify({ origin: 'http://page', allowed, message: allowed ? null : 'Origin http://page is not allowed: start the gateway with --allow-origin http://page' }));
    if (token && req.headers.authorization !== `Bearer ${token}`) {
      res.statusCode = 401;
      return res.end('{}');
    }
    res.end('{"status":"ok"}');
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('directPathProblem', () => {
  it('none when the origin is allowed and the token (if any) accepted', async () => {
    expect(await directPathProblem(await gatewayLike(true), undefined)).toBeUndefined();
    expect(await directPathProblem(await gatewayLike(true, 't'), 't')).toBeUndefined();
  });

  it("says why otherwise: a refused origin (the gateway's own message), a missing or refused token, no route", async () => {
    expect(await directPathProblem(await gatewayLike(false), undefined)).toMatch(/--allow-origin/);
    expect(await directPathProblem(await gatewayLike(true, 't'), undefined)).toMatch(/needs a token/);
    expect(await directPathProblem(await gatewayLike(true, 't'), 'wrong')).toMatch(/refused the token/);
    const closed = await gatewayLike(true);
    servers.pop()!.close();
    expect(await directPathProblem(closed, undefined)).toMatch(/cannot reach the gateway/);
  });
});
