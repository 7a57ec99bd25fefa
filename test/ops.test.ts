/**
 * What an operator reads: `GET /metrics` in the Prometheus format (authenticated like every other
 * endpoint) with calls, sockets, workers and their restarts, executions, index operations and
 * transfer bytes; and one structured access line per request and per socket, never a credential.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { api, cleanup, Client, gateway, ROOT, tempProject } from './helpers.js';

const TOKEN = 'ops-secret-token-1234';
const auth = { authorization: `Bearer ${TOKEN}` };
afterAll(cleanup);

/** The value of one sample in a Prometheus text page (undefined when absent). */
function sample(page: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of page.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? '').split(',').filter(Boolean);
    if (wanted.every((w) => have.includes(w))) return Number(m[3]);
  }
  return undefined;
}

describe('GET /metrics', { timeout: 60_000 }, () => {
  it('is authenticated, and counts calls, sockets, workers and restarts, executions, index operations and bytes', async () => {
    const g = await gateway({ project: await tempProject(), apiToken: TOKEN });
    expect((await api(g, 'GET', '/metrics')).status).toBe(401);

    await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'add', args: [2] }, auth);
    await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'nope' }, auth);
    const ws = await Client.open(g.url, { headers: auth });
    await ws.connect('files');
    const payload = Buffer.alloc(100_000, 1);
    ws.send({ type: 'chunk_start', id: 'u', mode: 'write', path: 'm.bin' });
    ws.ws.send(payload);
    await ws.request({ type: 'chunk_end', id: 'u' });
    await ws.request({ type: 'chunk_start', id: 'r', mode: 'read', params: { name: 'm.bin' } });
    const run = await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ epochs: 1 }] }] }, auth);
    await expect.poll(async () => (await api(g, 'GET', `/v1/executions/${run.body.uuid}`, undefined, auth)).body.status, { timeout: 30_000 }).toBe('finished');

    const res = await fetch(`${g.url}/metrics`, { headers: auth });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const page = await res.text();
    expect(sample(page, 'portico_calls_total', { method: 'add', outcome: 'ok' })).toBe(1);
    expect(sample(page, 'portico_calls_total', { method: '(unknown)', outcome: 'not_found' })).toBe(1);
    expect(sample(page, 'portico_call_duration_seconds_count', { method: 'add', outcome: 'ok' })).toBe(1);
    expect(sample(page, 'portico_sockets', { endpoint: 'interfaces' })).toBe(1);
    expect(sample(page, 'portico_upload_bytes_total')).toBe(payload.length);
    expect(sample(page, 'portico_read_bytes_total')).toBe(payload.length);
    expect(sample(page, 'portico_workers')).toBe(1);
    expect(sample(page, 'portico_executions', { state: 'finished' })).toBe(1);
    expect(sample(page, 'portico_store_operations_total', { op: 'insert', outcome: 'ok' })).toBeGreaterThanOrEqual(3);
    expect(sample(page, 'portico_http_requests_total', { method: 'GET', status: '401' })).toBe(1);
    expect(sample(page, 'portico_process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(page).not.toContain(TOKEN);

    // A REST call by module name on the record an earlier call made: looked up once, nothing inserted.
    const count = (text: string, op: string) => sample(text, 'portico_store_operations_total', { op, outcome: 'ok' }) ?? 0;
    await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'value' }, auth);
    const later = await (await fetch(`${g.url}/metrics`, { headers: auth })).text();
    expect(count(later, 'existing') - count(page, 'existing')).toBe(1);
    expect(count(later, 'insert')).toBe(count(page, 'insert'));

    // a worker killed and started again is a restart
    // (it held live instances, so supervision starts it again at once)
    const [worker] = g.gateway.listProjects().workers;
    expect(sample(page, 'portico_live_instances', { project: worker!.directory })).toBeGreaterThanOrEqual(2);
    process.kill(worker!.pid!, 'SIGKILL');
    await expect.poll(() => g.gateway.listProjects().workers.some((w) => w.pid !== worker!.pid), { timeout: 20_000 }).toBe(true);
    await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'value' }, auth);
    ws.close();
    const after = await (await fetch(`${g.url}/metrics`, { headers: auth })).text();
    expect(sample(after, 'portico_worker_restarts_total', { reason: 'crashed' })).toBe(1);
    await expect.poll(async () => sample(await (await fetch(`${g.url}/metrics`, { headers: auth })).text(), 'portico_sockets', { endpoint: 'interfaces' })).toBe(0);
  });
});

describe('access log', { timeout: 60_000 }, () => {
  it('one JSON line per request and per socket, with request id, status, code, duration and user; never a token', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const g = await gateway({ project: await tempProject(), apiToken: TOKEN, logger: pino({ level: 'info' }, sink) });
    await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'add', args: [1] }, { ...auth, 'x-request-id': 'req-42', 'x-service-user': 'ada' });
    await api(g, 'GET', '/v1/interfaces/nope', undefined, auth);
    const ws = await Client.open(g.url, { headers: { ...auth, 'x-service-user': 'grace' } });
    await ws.connect('counter');
    await ws.request({ type: 'call', method: 'value' });
    const closed = new Promise((resolve) => ws.ws.once('close', resolve));
    ws.ws.close(1000, 'done');
    await closed;
    await expect.poll(() => lines.some((l) => JSON.parse(l).msg === 'socket')).toBe(true);

    const entries = lines.map((l) => JSON.parse(l));
    expect(entries.find((e) => e.req_id === 'req-42')).toMatchObject({ msg: 'http', method: 'POST', path: '/v1/interfaces/call', status: 200, user: 'ada', auth: 'api_token', duration_ms: expect.any(Number), level: 30 });
    expect(entries.find((e) => e.path === '/v1/interfaces/nope')).toMatchObject({ status: 404, code: 'not_found' });
    expect(entries.find((e) => e.msg === 'socket'), JSON.stringify(entries.filter((e) => e.msg === 'socket'))).toMatchObject({ socket: '/v1/interfaces/ws', status: 101, close_code: 1000, frames: 2, user: 'grace', req_id: expect.any(String) });
    expect(lines.join('\n')).not.toContain(TOKEN);
  });

  it('at debug level every frame has its own line, a call\'s written once its result is sent', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const g = await gateway({ project: await tempProject(), apiToken: TOKEN, logger: pino({ level: 'debug' }, sink) });
    const ws = await Client.open(g.url, { headers: auth });
    await ws.connect('counter');
    const result = await ws.request({ type: 'call', id: 'c-1', method: 'value' });
    expect(result.type).toBe('result');
    await expect.poll(() => lines.map((l) => JSON.parse(l)).find((e) => e.msg === 'frame' && e.frame === 'call')).toMatchObject({ id: 'c-1', duration_ms: expect.any(Number), level: 20 });
    ws.ws.close(1000, 'done');
  });

  it('portico serve writes JSON lines to a stderr that is not a terminal, at --log-level', async () => {
    const project = await tempProject();
    const child = spawn(process.execPath, [path.join(ROOT, 'packages/server/bin/portico.js'), 'serve', project, '--port', '0', '--log-level', 'info', '--api-token', TOKEN], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    await expect.poll(() => /API (http:\/\/\S+)\/v1/.exec(out)?.[1], { timeout: 20_000 }).toBeDefined();
    const url = /API (http:\/\/\S+)\/v1/.exec(out)![1]!;
    await fetch(`${url}/v1/health`, { headers: auth });
    await expect.poll(() => err).toContain('"msg":"http"');
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    const http = err.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((e) => e.msg === 'http');
    expect(http).toMatchObject({ method: 'GET', path: '/v1/health', status: 200 });
    expect(err).not.toContain(TOKEN);
  });
});
