/**
 * The gateway's log tells failures: what a worker prints is info, a Python traceback is one entry
 * at error level, and every line is JSON when the logger writes JSON.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { api, cleanup, Client, gateway, tempProject } from './helpers.js';

afterAll(cleanup);

const NOISY = `
from portico import Interface


class Noisy(Interface):
    """Prints, and fails."""

    def shout(self):
        print("hello from shout", flush=True)
        raise ValueError("boom")

    def chained(self):
        try:
            {}["missing"]
        except KeyError as e:
            raise RuntimeError("while looking it up") from e
`;

/** A gateway whose log lines (JSON, as on a stderr that is not a terminal) land in `lines`. */
async function loggedGateway(options: { accessLog?: boolean } = {}): Promise<{ g: Awaited<ReturnType<typeof gateway>>; lines: string[] }> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  // `log: undefined`: the plain lines go to the logger too, as they do outside the tests.
  const g = await gateway({ project: await tempProject({ 'noisy.py': NOISY }), logger: pino({ level: 'info' }, sink), log: undefined, ...options });
  return { g, lines };
}

const entries = (lines: string[]) => lines.map((line) => JSON.parse(line) as { level: number; msg: string });

describe('--access-log off (as npm start runs)', { timeout: 60_000 }, () => {
  it('writes no line per request or socket, still the lines a call prints with its interface and method, and the metrics still count', async () => {
    const { g, lines } = await loggedGateway({ accessLog: false });
    expect((await api(g, 'POST', '/v1/interfaces/call', { target: 'noisy', method: 'shout' })).body.code).toBe('call_failed');
    const ws = await Client.open(g.url);
    await ws.connect('noisy');
    ws.close();
    await expect.poll(() => entries(lines).find((e) => e.msg === 'noisy.shout stdout: hello from shout')).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 300)); // past the access log's batching, and the socket's close
    expect(entries(lines).filter((e) => e.msg === 'http' || e.msg === 'socket')).toEqual([]);
    expect(await (await fetch(`${g.url}/metrics`)).text()).toMatch(/portico_http_requests_total\{method="POST",status="400"\} 1/);
  });
});

describe('logs tell failures', { timeout: 60_000 }, () => {
  it('a traceback from the worker is one entry at error level; what the method printed is info', async () => {
    const { g, lines } = await loggedGateway();
    const res = await api(g, 'POST', '/v1/interfaces/call', { target: 'noisy', method: 'shout' });
    expect([res.status, res.body.code]).toEqual([400, 'call_failed']);
    await expect.poll(() => entries(lines).find((e) => e.msg.includes('Traceback (most recent call last):'))).toBeDefined();
    const entry = entries(lines).find((e) => e.msg.includes('Traceback (most recent call last):'))!;
    expect(entry.level).toBe(50);
    // The announcing line, the frames and the exception line, in one entry.
    expect(entry.msg).toMatch(/shout\(\) \(call .*\) raised:\nTraceback \(most recent call last\):\n[\s\S]*raise ValueError\("boom"\)[\s\S]*\nValueError: boom$/);
    expect(entries(lines).filter((e) => e.msg.includes('ValueError: boom'))).toHaveLength(1);
    const print = entries(lines).find((e) => e.msg.endsWith('hello from shout'));
    expect(print?.level).toBe(30);
  });

  it('a chained traceback is one error entry too', async () => {
    const { g, lines } = await loggedGateway();
    await api(g, 'POST', '/v1/interfaces/call', { target: 'noisy', method: 'chained' });
    await expect.poll(() => entries(lines).find((e) => e.msg.includes('RuntimeError: while looking it up'))?.level).toBe(50);
    const entry = entries(lines).find((e) => e.msg.includes('RuntimeError: while looking it up'))!;
    expect(entry.msg).toContain("KeyError: 'missing'\n\nThe above exception was the direct cause of the following exception:\n\nTraceback (most recent call last):");
  });

  it('every line is JSON: access lines, worker output, tracebacks, refusals', async () => {
    const { g, lines } = await loggedGateway();
    await api(g, 'POST', '/v1/interfaces/call', { target: 'noisy', method: 'shout' });
    await api(g, 'GET', '/v1/interfaces/nope');
    await api(g, 'POST', '/v1/interfaces', '{not json');
    await expect.poll(() => lines.some((l) => l.includes('ValueError: boom'))).toBe(true);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
  });
});
