import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import { afterAll, describe, expect, it } from 'vitest';
import { exactRoutes } from './route.js';

/** A router whose answers name the route that answered, with a static path an earlier parameter route shadows. */
function routes(): Router {
  const router = new Router();
  const answer = (name: string) => (ctx: Koa.Context) => {
    ctx.body = { route: name, params: ctx.params };
  };
  router.get('/things/:id', answer('thing by id'));
  router.get('/things/special', answer('special thing (never reached: shadowed)'));
  router.post('/exact', answer('exact'));
  router.get('/exact/:part', answer('exact part'));
  router.get('/twice', answer('first twice'));
  router.get('/twice', answer('second twice'));
  return router;
}

function serve(withExactRoutes: boolean): Promise<{ url: string; server: http.Server }> {
  const router = routes();
  const app = new Koa();
  if (withExactRoutes) app.use(exactRoutes(router));
  app.use(router.routes());
  app.use(router.allowedMethods());
  const server = http.createServer(app.callback());
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server })));
}

async function answer(url: string, method: string, path: string): Promise<unknown> {
  const res = await fetch(url + path, { method });
  return { status: res.status, allow: res.headers.get('allow'), body: method === 'HEAD' ? '' : await res.text() };
}

describe('exactRoutes', () => {
  const servers: http.Server[] = [];
  afterAll(() => servers.forEach((s) => s.close()));

  it('answers every request exactly as the router alone does', async () => {
    const [plain, exact] = await Promise.all([serve(false), serve(true)]);
    servers.push(plain.server, exact.server);
    const requests: Array<[string, string]> = [
      ['POST', '/exact'],
      ['POST', '/exact?x=1'],
      ['POST', '/EXACT'],
      ['POST', '/exact/'],
      ['GET', '/exact'],
      ['PUT', '/exact'],
      ['GET', '/exact/part'],
      ['GET', '/things/special'],
      ['GET', '/things/7'],
      ['HEAD', '/twice'],
      ['GET', '/twice'],
      ['GET', '/nowhere'],
    ];
    for (const [method, path] of requests) {
      expect([method, path, await answer(exact.url, method, path)]).toEqual([method, path, await answer(plain.url, method, path)]);
    }
    // The cases that matter, spelled out: the shadowed static path keeps the parameter route that
    // the router runs first, and a method the path lacks is still the router's 405.
    expect(await answer(exact.url, 'GET', '/things/special')).toMatchObject({ status: 200, body: JSON.stringify({ route: 'thing by id', params: { id: 'special' } }) });
    expect(await answer(exact.url, 'GET', '/exact')).toMatchObject({ status: 405, allow: 'POST' });
    expect(await answer(exact.url, 'POST', '/exact')).toMatchObject({ status: 200, body: JSON.stringify({ route: 'exact', params: {} }) });
  });
});
