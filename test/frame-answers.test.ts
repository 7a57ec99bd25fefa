/**
 * Every frame gets the answer its doc promises: a widget_msg is answered once for its id (a reply,
 * or widget_msg_done when widget_message returned nothing), content is optional, buffers and
 * buffer_paths must agree before anything reaches Python, ids come back exactly as they were
 * sent (or are refused naming them as written), and every refusal the worker can make has a
 * gateway code of its own (never `internal`).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorFromWorker } from '../packages/server/src/kernel/worker.js';
import { ERROR_CODES } from '../packages/server/src/index.js';
import { Client, cleanup, gateway, ROOT, tempProject, type Frame } from './helpers.js';

const EXTRA = {
  'echoer.py': `
from portico import Interface


class Echoer(Interface):
    """Answers widget messages with what it got; takes any change."""

    def widget_message(self, content, buffers):
        return {"got": content, "sizes": [len(b) for b in buffers]}

    def widget_update(self, changes):
        return {key: (len(value) if isinstance(value, bytes) else value) for key, value in changes.items()}
`,
};

let url: string;
beforeAll(async () => {
  ({ url } = await gateway({ project: await tempProject(EXTRA) }));
});
afterAll(cleanup);

let probes = 0;

/** Sends `text` as it is, then a ping; resolves with the frames since that answered `id`, once the pong is in. */
async function answersTo(client: Client, text: string, id: unknown): Promise<Frame[]> {
  const probe = `probe-${++probes}`;
  const from = client.frames.length;
  client.sendRaw(text);
  client.send({ type: 'ping', id: probe });
  await client.waitFor((f) => f.id === probe);
  return client.frames.slice(from).filter((f) => f.id === id);
}

describe('widget_msg: one answer per id', () => {
  it('to an interface without widget_message: widget_msg_done with its id, and nothing else', async () => {
    const client = await Client.open(url);
    await client.connect('streamer');
    const id = client.send({ type: 'widget_msg', content: { hello: 1 } });
    const done = await client.waitFor((f) => f.id === id);
    expect(done).toEqual({ type: 'widget_msg_done', id });
    await client.request({ type: 'ping' });
    expect(client.replies(id)).toHaveLength(1);
    client.close();
  });

  it('a hook that replies answers widget_msg with that reply only (no widget_msg_done besides)', async () => {
    const client = await Client.open(url);
    await client.connect('echoer');
    const reply = await client.request({ type: 'widget_msg', content: 'hi', buffers: [Buffer.from([1, 2]).toString('base64')] });
    expect(reply).toEqual({ type: 'widget_msg', id: reply.id, payload: { content: { got: 'hi', sizes: [2] }, buffers: [] } });
    await client.request({ type: 'ping' });
    expect(client.replies(reply.id!)).toHaveLength(1);
    client.close();
  });

  it('without content: accepted, widget_message gets None', async () => {
    const client = await Client.open(url);
    await client.connect('echoer');
    const reply = await client.request({ type: 'widget_msg' });
    expect(reply).toMatchObject({ type: 'widget_msg', payload: { content: { got: null, sizes: [] } } });
    client.close();
  });
});

describe('widget_set: buffers and buffer_paths agree before Python sees them', () => {
  const base64 = (...bytes: number[]) => Buffer.from(bytes).toString('base64');

  it('buffers without buffer_paths, paths without buffers, or counts that differ: invalid_argument naming both', async () => {
    const client = await Client.open(url);
    await client.connect('echoer');
    const cases: Array<Record<string, unknown>> = [
      { changes: { image: null }, buffers: [base64(1, 2, 3)] },
      { changes: { image: null }, buffer_paths: [['image']] },
      { changes: { a: null, b: null }, buffer_paths: [['a'], ['b']], buffers: [base64(1)] },
    ];
    for (const frame of cases) {
      const answer = await client.request({ type: 'widget_set', ...frame });
      expect(answer.type, JSON.stringify(frame)).toBe('error');
      expect(answer.payload.code).toBe('invalid_argument');
      expect(answer.payload.message).toMatch(/buffer_paths/);
      expect(answer.payload.message).toMatch(/buffer/);
    }
    // binary frames count as buffers too
    const id = client.sendWithBuffers({ type: 'widget_set', changes: { image: null } }, [Buffer.from([9])]);
    const binary = await client.waitFor((f) => f.id === id);
    expect(binary.payload).toMatchObject({ code: 'invalid_argument', message: expect.stringMatching(/1 buffer.*no buffer_paths|buffer_paths/) });
    client.close();
  });

  it('a path that does not lead into the changes: invalid_argument naming it', async () => {
    const client = await Client.open(url);
    await client.connect('echoer');
    const answer = await client.request({ type: 'widget_set', changes: { image: null }, buffer_paths: [['layers', 0]], buffers: [base64(1)] });
    expect(answer.payload).toMatchObject({ code: 'invalid_argument', message: expect.stringContaining('["layers",0]') });
    // and the agreeing frame is taken, its buffer placed where its path says
    const ok = await client.request({ type: 'widget_set', changes: { image: null }, buffer_paths: [['image']], buffers: [base64(1, 2, 3)] });
    expect(ok).toMatchObject({ type: 'widget_change', payload: { changes: { image: 3 } } });
    client.close();
  });
});

describe('ids come back as they were sent, or are refused naming them as written', () => {
  it('ids JSON carries exactly are echoed unchanged', async () => {
    const client = await Client.open(url);
    for (const [raw, id] of [
      ['9007199254740991', 9007199254740991],
      ['-9007199254740991', -9007199254740991],
      ['0.5', 0.5],
      ['-2.5e3', -2500],
      ['1e2', 100],
      ['"9007199254740993"', '9007199254740993'],
    ] as const) {
      const answers = await answersTo(client, `{"type":"ping","id":${raw}}`, id);
      expect(answers, raw).toEqual([{ type: 'pong', id }]);
      expect(client.ws.readyState).toBe(client.ws.OPEN);
    }
    client.close();
  });

  it('a number past the exact integer range, one that overflows, or one a double rounds: invalid_frame, its id the text as sent', async () => {
    const client = await Client.open(url);
    for (const raw of ['9007199254740993', '9007199254740992', '-9007199254740993', '1e400', '-1e400', '1.00000000000000000001', '1e-400', '123456789012345678901234567890']) {
      for (const frame of [`{"type":"ping","id":${raw}}`, `{"type":"call","method":"echo","id":${raw}}`, `{"id":${raw},"type":"nope"}`]) {
        const answers = await answersTo(client, frame, raw);
        expect(answers, frame).toHaveLength(1);
        expect(answers[0]).toMatchObject({ type: 'error', id: raw, payload: { code: 'invalid_frame', issues: [{ path: 'id' }] } });
        expect(answers[0]!.payload.message).toContain(raw);
      }
    }
    // nothing answered with a changed or a null id
    expect(client.frames.some((f) => f.id === null || f.id === 9007199254740992)).toBe(false);
    client.close();
  });

  it('a frame nested too deep keeps its id too', async () => {
    const client = await Client.open(url);
    const deep = `{"type":"call","id":9007199254740993,"method":"echo","args":${'['.repeat(100)}${']'.repeat(100)}}`;
    const answers = await answersTo(client, deep, '9007199254740993');
    expect(answers).toEqual([expect.objectContaining({ type: 'error', payload: expect.objectContaining({ code: 'invalid_argument' }) })]);
    client.close();
  });

  it('an id written with escapes or beside a nested "id" is read exactly as well', async () => {
    const client = await Client.open(url);
    const escaped = await answersTo(client, '{"type":"ping","\\u0069d":1.00000000000000000001}', '1.00000000000000000001');
    expect(escaped).toMatchObject([{ type: 'error', payload: { code: 'invalid_frame' } }]);
    client.close();
    const connected = await Client.open(url);
    await connected.connect('streamer');
    const nested = await answersTo(connected, '{"type":"call","method":"echo","args":[{"id":3}],"id":3.0000000000000000001}', '3.0000000000000000001');
    expect(nested).toMatchObject([{ type: 'error', payload: { code: 'invalid_frame' } }]);
    connected.sendRaw('{"type":"call","method":"echo","args":[{"id":3}],"id":3}');
    expect(await connected.waitFor((f) => f.id === 3)).toEqual({ type: 'result', id: 3, payload: { id: 3 } });
    connected.close();
  });
});

describe('every refusal the worker can make has a gateway code', () => {
  /** The codes the worker's sources refuse with, and those its README's error table lists. */
  async function workerCodes(): Promise<Set<string>> {
    const codes = new Set<string>();
    const folder = path.join(ROOT, 'packages/server/python/portico/worker');
    for (const name of await readdir(folder)) {
      if (!name.endsWith('.py')) continue;
      const text = await readFile(path.join(folder, name), 'utf8');
      for (const match of text.matchAll(/\bRefusal\(\s*"([a-z_]+)"/g)) codes.add(match[1]!);
      for (const match of text.matchAll(/_answer_failure\([^)]*?"([a-z_]+)"/gs)) codes.add(match[1]!);
    }
    const readme = await readFile(path.join(ROOT, 'packages/server/src/kernel/README.md'), 'utf8');
    const table = readme.slice(readme.indexOf('## Errors'));
    for (const match of table.matchAll(/^\| `([a-z_]+)` \|/gm)) codes.add(match[1]!);
    return codes;
  }

  it('maps each one to a stable code of the gateway table, and none but a worker bug to internal', async () => {
    const codes = await workerCodes();
    expect(codes).toEqual(expect.objectContaining({ size: expect.any(Number) }));
    expect([...codes]).toEqual(expect.arrayContaining(['bad_request', 'module_not_found', 'method_not_found', 'read_only', 'internal']));
    for (const code of codes) {
      const error = errorFromWorker({ op: 'error', id: 1, code, message: 'm' }, '/srv/project');
      expect(Object.keys(ERROR_CODES)).toContain(error.code);
      if (code !== 'internal') expect(error.code, code).not.toBe('internal');
    }
    expect(errorFromWorker({ op: 'error', id: 1, code: 'bad_request', message: 'm' }, '/p').code).toBe('invalid_argument');
    expect(errorFromWorker({ op: 'error', id: 1, code: 'module_not_found', message: 'm' }, '/p').toDetail()).toMatchObject({ code: 'unknown_module', issues: [{ path: null }] });
  });

  it('names no absolute path of the project: inside it relative to it, the folder itself "the project"', () => {
    const said = (message: string, issues?: unknown) => errorFromWorker({ op: 'error', id: 1, code: 'call_failed', message, ...(issues ? { issues } : {}) }, '/srv/p').toDetail();
    expect(said("No such file or directory: '/srv/p/.portico/interfaces/u1/x.bin'").message).toBe("No such file or directory: '.portico/interfaces/u1/x.bin'");
    expect(said("Module 'x' not found in project /srv/p").message).toBe("Module 'x' not found in the project");
    expect(said('cwd is /srv/p.').message).toBe('cwd is the project folder.');
    expect(said('/srv/p2/x and /srv/p.bak stay').message).toBe('/srv/p2/x and /srv/p.bak stay');
    expect(said('bad', [{ path: 'a', message: 'see /srv/p/a.json' }]).issues).toEqual([{ path: 'a', message: 'see a.json' }]);
  });
});
