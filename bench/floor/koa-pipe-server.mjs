// Floor for REST calls through Portico's architecture (issue 45): the bare Koa + @koa/router server
// of koa-server.mjs, plus the one thing every call must also do, one round trip to a Python process
// over pipes with the bridge's framing (8-byte prefix, JSON header; pipe_echo.py answers each frame
// with itself, running no Python of its own). Nothing else: no auth, validation, store, access log
// or metrics. What the gateway costs beyond this is its own; what this costs beyond bare Koa is the
// price of running the interface in a separate Python process (DESIGN.md: one worker per project).
import Router from '@koa/router';
import Koa from 'koa';
import { readJson } from './json-body.mjs';
import { startPipeEcho } from './pipe-echo.mjs';

const python = startPipeEcho();
python.child.once('exit', () => process.exit(1));

const app = new Koa();
const router = new Router();
router.post('/v1/interfaces/call', async (ctx) => {
  const { target, method, args } = await readJson(ctx.req);
  // The reply's header parsed, as the gateway parses a worker's answer.
  const answer = JSON.parse((await python.roundTrip({ op: 'call', target, method, args })).toString('utf8'));
  ctx.body = { payload: answer.args?.[0] ?? null };
});
app.use(router.routes());
const server = app.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
server.keepAliveTimeout = 60_000;
process.on('SIGTERM', () => {
  python.stop();
  process.exit(0);
});
