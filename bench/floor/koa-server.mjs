// Floor for REST calls through the framework (issue 45): a bare Koa + @koa/router server in its own
// process (no gateway, no Python), the same Koa and router versions the gateway runs on. It reads
// the JSON body as the gateway does (the raw request stream's chunks, then JSON.parse) and answers
// the same small JSON result a call answers (`{"payload": <the first argument>}`), which Koa
// serializes as it does any object body. Everything the gateway does beyond this is its own per-request work.
import Router from '@koa/router';
import Koa from 'koa';
import { readJson } from './json-body.mjs';

const app = new Koa();
const router = new Router();
router.post('/v1/interfaces/call', async (ctx) => {
  const { args } = await readJson(ctx.req);
  ctx.body = { payload: args?.[0] ?? null };
});
app.use(router.routes());
const server = app.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
server.keepAliveTimeout = 60_000;
process.on('SIGTERM', () => process.exit(0));
