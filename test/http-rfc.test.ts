/**
 * HTTP as RFC 9110 says, against a real gateway: a method a path lacks is 405 with `Allow`
 * (§15.5.6), an unknown path is 404 whatever the method, CONNECT and methods no HTTP parser knows
 * are 501 (§15.6.2), and 431 and 413 have the JSON error body every other error has. Every answer
 * has an access line with the status the client got, a 500 raised while the answer is written
 * included. Requests fetch will not send go over node:net.
 */
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../packages/server/src/index.js';
import { api, cleanup, Client, gateway, tempProject } from './helpers.js';

afterAll(cleanup);

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `request` as it is and reads the answer until the gateway closes the connection. */
function raw(g: RunningServer, request: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(g.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const [statusLine = '', ...lines] = text.slice(0, split === -1 ? text.length : split).split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: split === -1 ? '' : text.slice(split + 4) });
      socket.end();
    });
    socket.write(request);
  });
}

/** The error code of a JSON error body (`detail.code`, or `code` beside a string `detail`). */
function errorCode(body: unknown): string | undefined {
  const b = body as { code?: unknown; detail?: { code?: unknown } };
  return typeof b?.code === 'string' ? b.code : typeof b?.detail?.code === 'string' ? b.detail.code : undefined;
}

/** The `Allow` header as a set of methods. */
const allowed = (header: string | null | undefined) => new Set((header ?? '').split(',').map((m) => m.trim()).filter(Boolean));

let g: RunningServer;
const lines: Array<Record<string, unknown>> = [];
/** The access line of the request with `X-Request-Id: id`, once written. */
const accessLine = async (match: (line: Record<string, unknown>) => boolean) => {
  await expect.poll(() => lines.find((l) => l.msg === 'http' && match(l))).toBeDefined();
  return lines.find((l) => l.msg === 'http' && match(l))!;
};

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const deep = [
    'import sys',
    'from portico import Interface',
    'class Deep(Interface):',
    '    """Returns lists nested deeper than the gateway can write back."""',
    '    def nested(self, n: int = 20000):',
    '        sys.setrecursionlimit(max(sys.getrecursionlimit(), n + 1000))',
    '        value = 0',
    '        for _ in range(n):',
    '            value = [value]',
    '        return value',
    '',
  ].join('\n');
  g = await gateway({ project: await tempProject({ 'deep.py': deep }), logger: pino({ level: 'info' }, sink) });
});

describe('405 and Allow (RFC 9110 §15.5.6)', () => {
  it('a method a path lacks (TRACE, PROPFIND, PATCH, DELETE) answers 405 with Allow listing the methods the path has, and a JSON body', async () => {
    for (const method of ['TRACE', 'PROPFIND', 'PATCH', 'DELETE', 'PUT']) {
      const res = await raw(g, `${method} /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Request-Id: allow-${method}\r\n\r\n`);
      expect(res.status, method).toBe(405);
      expect(allowed(res.headers.allow), method).toEqual(new Set(['GET', 'HEAD', 'OPTIONS']));
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(errorCode(JSON.parse(res.body))).toBe('method_not_allowed');
      expect(await accessLine((l) => l.req_id === `allow-${method}`)).toMatchObject({ method, path: '/v1/health', status: 405, code: 'method_not_allowed' });
    }
    // a path with parameters, one with POST only, and a literal path a parameter path would match too
    const uuid = (await api(g, 'POST', '/v1/interfaces', { target: 'counter' })).body.uuid;
    const one = await api(g, 'PUT', `/v1/interfaces/${uuid}`, {});
    expect(one.status).toBe(405);
    expect(allowed(one.headers.get('allow'))).toEqual(new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']));
    const archive = await api(g, 'GET', `/v1/interfaces/${uuid}/archive`);
    expect(archive.status).toBe(405);
    expect(allowed(archive.headers.get('allow'))).toEqual(new Set(['POST', 'OPTIONS']));
    expect(errorCode(archive.body)).toBe('method_not_allowed');
    const call = await api(g, 'PUT', '/v1/interfaces/call', {});
    expect(call.status).toBe(405);
    expect(allowed(call.headers.get('allow'))).toEqual(new Set(['POST', 'OPTIONS']));
  });

  it('OPTIONS on a path answers with its Allow', async () => {
    const res = await fetch(`${g.url}/v1/interfaces`, { method: 'OPTIONS' });
    expect(res.status).toBeLessThan(300);
    expect(allowed(res.headers.get('allow'))).toEqual(new Set(['GET', 'HEAD', 'POST', 'OPTIONS']));
  });

  it('a path that does not exist is 404 whatever the method', async () => {
    for (const method of ['GET', 'TRACE', 'PROPFIND', 'PATCH']) {
      const res = await raw(g, `${method} /v1/nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect(res.status, method).toBe(404);
      expect(errorCode(JSON.parse(res.body)), method).toBe('not_found');
    }
  });
});

describe('501, CONNECT, 431 and 413 with JSON bodies', () => {
  it('a method no HTTP parser knows answers 501 not_implemented, logged', async () => {
    const res = await raw(g, 'BREW /v1/health HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(res.status).toBe(501);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers.connection).toBe('close');
    expect(errorCode(JSON.parse(res.body))).toBe('not_implemented');
    expect(await accessLine((l) => l.status === 501 && l.path === '/v1/health')).toMatchObject({ code: 'not_implemented' });
  });

  it('CONNECT is answered (501: the gateway is no proxy) with a JSON body, and the connection closes', async () => {
    const res = await raw(g, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(res.status).toBe(501);
    expect(res.headers.connection).toBe('close');
    const body = JSON.parse(res.body);
    expect(errorCode(body)).toBe('not_implemented');
    expect(JSON.stringify(body)).toContain('CONNECT');
    expect(await accessLine((l) => l.method === 'CONNECT')).toMatchObject({ status: 501, code: 'not_implemented' });
  });

  it('431: header fields over 16 KiB get the JSON error body, logged', async () => {
    const res = await raw(g, `GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = JSON.parse(res.body);
    expect(errorCode(body)).toBe('headers_too_large');
    expect(JSON.stringify(body)).toMatch(/16 KiB/);
    expect(await accessLine((l) => l.status === 431)).toMatchObject({ method: 'GET', path: '/v1/health', code: 'headers_too_large' });
    // the gateway goes on serving
    expect((await api(g, 'GET', '/v1/health')).status).toBe(200);
  });

  it('413: a body over its bound gets the JSON error body, declared or chunked, and so do chunk extensions over 16 KiB', async () => {
    const declared = await raw(g, `POST /v1/interfaces HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${17 * 1024 * 1024}\r\n\r\n{}`);
    expect(declared.status).toBe(413);
    expect(errorCode(JSON.parse(declared.body))).toBe('payload_too_large');
    const extensions = await raw(g, `POST /v1/interfaces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2;${'e'.repeat(20_000)}\r\n{}\r\n0\r\n\r\n`);
    expect(extensions.status).toBe(413);
    expect(extensions.headers['content-type']).toMatch(/^application\/json/);
    expect(errorCode(JSON.parse(extensions.body))).toBe('payload_too_large');
    expect(await accessLine((l) => l.status === 413 && l.code === 'payload_too_large' && l.path === '/v1/interfaces')).toBeDefined();
  });

  it('a request the parser cannot read at all answers 400 with a JSON body', async () => {
    const res = await raw(g, 'GET /v1/health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(errorCode(JSON.parse(res.body))).toBeDefined();
  });
});

describe('access log: the status the client got', () => {
  it('a 500 raised while the answer is written is a JSON internal error, logged as 500', async () => {
    const res = await api(g, 'POST', '/v1/interfaces/call', { target: 'deep', method: 'nested', args: [20_000] }, { 'x-request-id': 'deep-result' });
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(errorCode(res.body)).toBe('internal');
    expect(await accessLine((l) => l.req_id === 'deep-result')).toMatchObject({ status: 500, code: 'internal' });
    // and the gateway goes on answering
    expect((await api(g, 'POST', '/v1/interfaces/call', { target: 'deep', method: 'nested', args: [3] })).body).toEqual({ payload: [[[0]]] });
  });

  it('over the WebSocket the same result answers an internal error for its id, and the socket stays usable', async () => {
    const client = await Client.open(g.url);
    await client.connect('deep');
    expect(await client.request({ type: 'call', id: 'deep-ws', method: 'nested', args: [20_000] })).toMatchObject({ type: 'error', id: 'deep-ws', payload: { code: 'internal' } });
    expect(await client.request({ type: 'call', method: 'nested', args: [2] })).toMatchObject({ type: 'result', payload: [[0]] });
    client.close();
  });
});
