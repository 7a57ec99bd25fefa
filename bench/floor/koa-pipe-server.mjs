// Floor for REST calls through Portico's architecture (issue 45): the bare Koa + @koa/router server
// of koa-server.mjs, plus the one thing every call must also do, one round trip to a Python process
// over pipes with the bridge's framing (8-byte prefix, JSON header; pipe_echo.py answers each frame
// with itself, running no Python of its own). Nothing else: no auth, validation, store, access log
// or metrics. What the gateway costs beyond this is its own; what this costs beyond bare Koa is the
// price of running the interface in a separate Python process (DESIGN.md: one worker per project).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Router from '@koa/router';
import Koa from 'koa';
import { readJson } from './json-body.mjs';

const python = spawn('python3', [path.join(path.dirname(fileURLToPath(import.meta.url)), 'pipe_echo.py')], { stdio: ['ignore', 'inherit', 'inherit', 'pipe', 'pipe'] });
const [toPython, fromPython] = [python.stdio[3], python.stdio[4]];
python.once('exit', () => process.exit(1));

/** Calls waiting for their echo, by id. */
const waiting = new Map();
let nextId = 0;
let held = Buffer.alloc(0);
fromPython.on('data', (chunk) => {
  held = held.length ? Buffer.concat([held, chunk]) : chunk;
  while (held.length >= 8) {
    const size = 8 + held.readUInt32BE(0) + held.readUInt32BE(4);
    if (held.length < size) break;
    const header = JSON.parse(held.toString('utf8', 8, size));
    held = held.subarray(size);
    const resolve = waiting.get(header.id);
    waiting.delete(header.id);
    resolve(header);
  }
});

/** Sends a call frame and resolves with its answer. */
function roundTrip(message) {
  return new Promise((resolve) => {
    const id = ++nextId;
    waiting.set(id, resolve);
    const header = Buffer.from(JSON.stringify({ op: 'call', id, ...message }));
    const prefix = Buffer.alloc(8);
    prefix.writeUInt32BE(header.length, 0);
    toPython.write(Buffer.concat([prefix, header]));
  });
}

const app = new Koa();
const router = new Router();
router.post('/v1/interfaces/call', async (ctx) => {
  const { target, method, args } = await readJson(ctx.req);
  const answer = await roundTrip({ target, method, args });
  ctx.body = { payload: answer.args?.[0] ?? null };
});
app.use(router.routes());
const server = app.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
server.keepAliveTimeout = 60_000;
process.on('SIGTERM', () => {
  python.kill('SIGTERM');
  process.exit(0);
});
