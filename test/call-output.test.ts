/**
 * Prints and logs go where people look (issue 43): what a method writes to stdout and stderr and
 * through logging while a call runs reaches that call's caller as it happens (`output` frames on
 * the WebSocket, `output` lines of a streamed HTTP call, printed by the Python client), in order
 * with its items and events, and the gateway's log has each line with interface and method. A
 * method printing without pause is bounded: the caller is told what was dropped, and the gateway
 * and its other callers keep working.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, Client, gateway, ROOT, tempProject } from './helpers.js';

afterAll(cleanup);

const TALKER = `
import logging
import sys

from portico import Interface

log = logging.getLogger("talker")


class Talker(Interface):
    def hello(self, name: str = "world"):
        print(f"hello {name}")
        log.warning("careful, %s", name)
        return name

    def count(self, n: int = 2):
        for i in range(n):
            print(f"making {i}")
            self.emit({"i": i})
            yield i

    async def later(self):
        print("from async code", file=sys.stderr)
        return "done"

    def flood(self, megabytes: int = 20):
        line = "y" * 1023 + "\\n"
        for _ in range(megabytes * 1024):
            sys.stdout.write(line)
        return megabytes
`;

let g: Awaited<ReturnType<typeof gateway>>;
const logged: string[] = [];
beforeAll(async () => {
  g = await gateway({ project: await tempProject({ 'talker.py': TALKER }), log: (line) => logged.push(line) });
});

describe("a call's prints and logs", { timeout: 60_000 }, () => {
  it('reach its caller over the WebSocket as output frames, in order with its events and items, before its end', async () => {
    const ws = await Client.open(g.url);
    await ws.connect('talker');
    const id = ws.send({ type: 'call', method: 'count', args: [2] });
    await ws.waitFor((f) => f.id === id && f.type === 'stream' && f.final === true);
    const seen = ws.frames.filter((f) => f.id === id || f.type === 'event').map((f) => (f.type === 'output' ? `output ${f.payload.stream}: ${f.payload.text}` : `${f.type} ${JSON.stringify(f.payload)}`));
    expect(seen).toEqual([
      'output stdout: making 0\n',
      'event {"i":0}',
      'stream 0',
      'output stdout: making 1\n',
      'event {"i":1}',
      'stream 1',
      'stream null',
    ]);
    const hello = await ws.request({ type: 'call', method: 'hello', args: ['ada'] });
    expect(hello).toMatchObject({ type: 'result', payload: 'ada' });
    expect(ws.replies(hello.id!).map((f) => f.type === 'output' && `${f.payload.stream}: ${f.payload.text}`)).toEqual(['stdout: hello ada\n', 'stderr: careful, ada\n', false]);
    const later = await ws.request({ type: 'call', method: 'later' });
    expect(ws.replies(later.id!)[0]).toMatchObject({ type: 'output', payload: { stream: 'stderr', text: 'from async code\n' } });
    ws.close();
  });

  it('are lines of a streamed HTTP call; a plain JSON call answers as before; the gateway log names interface and method', async () => {
    const res = await fetch(`${g.url}/v1/interfaces/call`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/x-ndjson' }, body: JSON.stringify({ target: 'talker', method: 'hello', args: ['bob'] }) });
    expect((await res.text()).trimEnd().split('\n').map((l) => JSON.parse(l))).toEqual([
      { type: 'output', payload: { stream: 'stdout', text: 'hello bob\n' } },
      { type: 'output', payload: { stream: 'stderr', text: 'careful, bob\n' } },
      { type: 'result', payload: 'bob' },
    ]);
    const plain = await api(g, 'POST', '/v1/interfaces/call', { target: 'talker', method: 'hello', args: ['cy'] });
    expect(plain.body).toEqual({ payload: 'cy' });
    await expect.poll(() => logged.filter((l) => l.startsWith('talker.hello'))).toEqual(expect.arrayContaining(['talker.hello stdout: hello cy', 'talker.hello stderr: careful, cy']));
  });

  it('the Python client prints them where the caller runs (under the cell in a notebook), in order with the items', async () => {
    const script = [
      'from portico.client import Gateway',
      `t = Gateway(${JSON.stringify(g.url)}).interface("talker")`,
      'for item in t.count(2):',
      '    print("got", item)',
      'print("answer", t.hello("dee"))',
    ].join('\n');
    const { stdout, stderr } = await promisify(execFile)('python3', ['-c', script], { env: { ...process.env, PYTHONPATH: path.join(ROOT, 'packages/server/python') } });
    expect(stdout).toBe('making 0\ngot 0\nmaking 1\ngot 1\nhello dee\nanswer dee\n');
    expect(stderr).toBe('careful, dee\n');
  });

  it('a method printing 100 MB without pause is bounded: the caller is told what was dropped, and others are answered meanwhile', async () => {
    const ws = await Client.open(g.url);
    await ws.connect('talker');
    const id = ws.send({ type: 'call', method: 'flood', args: [100] });
    const other = api(g, 'POST', '/v1/interfaces/call', { target: 'talker', method: 'hello', args: ['eve'] });
    expect((await other).body).toEqual({ payload: 'eve' });
    await ws.waitFor((f) => f.id === id && f.type === 'result', 60_000);
    const outputs = ws.replies(id).filter((f) => f.type === 'output');
    const sent = outputs.filter((f) => f.payload.stream === 'stdout').reduce((n, f) => n + f.payload.text.length, 0);
    const notes = outputs.filter((f) => f.payload.stream === 'stderr').map((f) => f.payload.text as string);
    expect(notes.length).toBeGreaterThan(0);
    // Whether the last line printed was dropped (note last) or fit a refilled allowance (note just
    // before it) depends on the machine's speed; what never varies: every byte is sent or counted.
    const dropped = notes.reduce((n, text) => {
      const m = /^\[portico: (\d+) bytes of output dropped: more than 1048576 bytes a second\]\n$/.exec(text);
      expect(m, text).not.toBeNull();
      return n + Number(m![1]);
    }, 0);
    expect(sent).toBeLessThan(100 * 1024 * 1024);
    expect(sent + dropped).toBe(100 * 1024 * 1024);
    ws.close();
  });
});
