/** Executions: dispatch, listing, output windows, cancel, lifecycle and faults, with real run processes. */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, gateway, runEnded, tempProject, waitForRun } from './helpers.js';

afterAll(cleanup);

const EXTRA = {
  'noisy.py': [
    'import os, sys',
    'from portico import Interface',
    '',
    'class Noisy(Interface):',
    '    """Prints binary garbage and a very long line."""',
    '    def __call__(self):',
    '        os.write(1, bytes(range(256)) * 64)',
    '        sys.stdout.write("x" * 1_000_000 + "\\n")',
    '',
  ].join('\n'),
  'ctx.py': [
    'import os',
    'from portico import Interface',
    '',
    'class Ctx(Interface):',
    '    """A context that records when it is entered and exited."""',
    '    class Config:',
    '        name: str = "a"',
    '    def _log(self, what):',
    '        with open(os.path.join(os.getcwd(), "order.txt"), "a") as f:',
    '            f.write(f"{what} {self.config.name}\\n")',
    '    def __enter__(self):',
    '        self._log("enter")',
    '    def __exit__(self, *exc):',
    '        self._log("exit")',
    '',
  ].join('\n'),
};

type Info = { uuid: string; status: string; is_active: boolean; pid: number | null; finished_at: string | null; error: { exception: string } | null };

const waitFor = (g: { url: string }, uuid: string, done: (info: Info) => boolean, timeoutMs = 30_000) => waitForRun<Info>(g, uuid, done, timeoutMs);
const ended = runEnded;

describe('executions', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  let project: string;
  beforeAll(async () => {
    project = await tempProject(EXTRA);
    g = await gateway({ project });
  });

  it('dispatch runs __call__ in its own process; output, listing, lifecycle and the cached result follow', async () => {
    const dispatched = await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ epochs: 3 }] }] });
    expect(dispatched.status).toBe(200);
    expect(dispatched.body).toMatchObject({ status: expect.stringMatching(/pending|running/), interfaces: [expect.any(String)] });
    const info = await waitFor(g, dispatched.body.uuid, ended);
    expect(info).toMatchObject({ status: 'finished', is_active: false, error: null });
    expect(info.finished_at).not.toBeNull();
    const out = await api(g, 'GET', `/v1/executions/${info.uuid}/output`);
    expect(out.body.output).toBe('epoch 1/3 loss=0.5000\nepoch 2/3 loss=0.2500\nepoch 3/3 loss=0.1250\n');
    expect(out.body).toMatchObject({ offset: 0, size: out.body.output.length });
    const [iface] = dispatched.body.interfaces;
    expect((await api(g, 'GET', '/v1/executions')).body.map((e: Info) => e.uuid)).toContain(info.uuid);
    expect((await api(g, 'GET', `/v1/interfaces/${iface}/executions`)).body.map((e: Info) => e.uuid)).toEqual([info.uuid]);
    const life = await api(g, 'POST', '/v1/interfaces/lifecycle', { target: 'trainer', version: [{ epochs: 3 }] });
    expect(life.body).toMatchObject({ status: 'cached', uuid: iface, execution_uuid: info.uuid });
    expect((await api(g, 'POST', '/v1/interfaces/call', { target: iface, method: 'result' })).body.payload).toEqual({ loss: 0.125, epochs: 3 });
  });

  it('lifecycle: draft before any run; 400 with issues for a config that cannot be constructed', async () => {
    expect((await api(g, 'POST', '/v1/interfaces/lifecycle', { target: 'trainer', version: [{ epochs: 99 }] })).body.status).toBe('draft');
    const bad = await api(g, 'POST', '/v1/interfaces/lifecycle', { target: 'trainer', version: [{ epochs: 'many' }] });
    expect(bad.status).toBe(400);
    expect(bad.body.detail.issues[0].path).toBe('epochs');
  });

  it('a failing run ends failed with its exception; lifecycle says failed', async () => {
    const { body } = await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ fail_at: 2 }] }] });
    const info = await waitFor(g, body.uuid, ended);
    expect(info).toMatchObject({ status: 'failed', error: { exception: 'RuntimeError' } });
    expect((await api(g, 'GET', `/v1/executions/${body.uuid}/output`)).body.output).toContain('diverged at epoch 2');
    expect((await api(g, 'POST', '/v1/interfaces/lifecycle', { target: 'trainer', version: [{ fail_at: 2 }] })).body.status).toBe('failed');
  });

  it('output windows: offset polls only appended bytes, tail reads the end, limit is capped', async () => {
    const { body } = await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ epochs: 6, delay: 0.05 }] }] });
    let offset = 0;
    let text = '';
    for (;;) {
      const window = (await api(g, 'GET', `/v1/executions/${body.uuid}/output?offset=${offset}`)).body;
      expect(window.offset).toBe(offset);
      text += window.output;
      offset = window.size;
      const info = (await api(g, 'GET', `/v1/executions/${body.uuid}`)).body;
      if (ended(info) && offset === (await api(g, 'GET', `/v1/executions/${body.uuid}/output?tail=0`)).body.size) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(text.trim().split('\n')).toHaveLength(6);
    const tail = (await api(g, 'GET', `/v1/executions/${body.uuid}/output?tail=22`)).body;
    expect(tail.output).toBe('epoch 6/6 loss=0.0156\n');
    expect(tail.offset).toBe(tail.size - 22);
    const capped = (await api(g, 'GET', `/v1/executions/${body.uuid}/output?limit=999999999`)).body;
    expect(capped.limit).toBe(262144);
    expect((await api(g, 'GET', `/v1/executions/${body.uuid}/output?offset=-1`)).status).toBe(422);
  });

  it('binary garbage and very long lines are still served in bounded windows', async () => {
    const { body } = await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'noisy' }] });
    await waitFor(g, body.uuid, ended);
    const first = (await api(g, 'GET', `/v1/executions/${body.uuid}/output?offset=0&limit=4096`)).body;
    expect(first.size).toBe(256 * 64 + 1_000_001);
    expect(Buffer.byteLength(first.output)).toBeLessThanOrEqual(4096 * 3); // U+FFFD is 3 bytes for each invalid byte
    const last = (await api(g, 'GET', `/v1/executions/${body.uuid}/output`)).body;
    expect(last.output).toBe('x'.repeat(65535) + '\n');
  });

  it('cancel interrupts a running run; cancelling an ended run changes nothing; unknown is 404', async () => {
    const { body } = await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ epochs: 1, delay: 60 }] }] });
    await waitFor(g, body.uuid, (i) => i.status === 'running');
    expect((await api(g, 'POST', `/v1/executions/${body.uuid}/cancel`)).status).toBe(204);
    const info = await waitFor(g, body.uuid, ended, 10_000);
    expect(info.status).toBe('interrupted');
    expect(existsSync(path.join(project, '.portico/executions', body.uuid, 'cancelled'))).toBe(true);
    expect((await api(g, 'POST', '/v1/interfaces/lifecycle', { target: 'trainer', version: [{ epochs: 1, delay: 60 }] })).body.status).toBe('failed');
    expect((await api(g, 'POST', `/v1/executions/${body.uuid}/cancel`)).status).toBe(204);
    expect((await api(g, 'GET', `/v1/executions/${body.uuid}`)).body.status).toBe('interrupted');
    expect((await api(g, 'POST', '/v1/executions/nope/cancel')).status).toBe(404);
    expect((await api(g, 'GET', '/v1/executions/nope')).status).toBe(404);
  });

  it('the status flags are the reference server’s: is_live is finished or active, is_incomplete its opposite once started', async () => {
    // As machinable's status snapshot: is_live = is_finished or is_active; is_incomplete = is_started and not is_live.
    const dispatch = async (version: Record<string, unknown>) => (await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [version] }] })).body.uuid as string;
    const flags = (info: Record<string, unknown>) => ({
      status: info.status,
      is_active: info.is_active,
      is_started: info.is_started,
      is_finished: info.is_finished,
      is_live: info.is_live,
      is_incomplete: info.is_incomplete,
    });
    const finished = await waitFor(g, await dispatch({ epochs: 1 }), ended);
    expect(flags(finished)).toEqual({ status: 'finished', is_active: false, is_started: true, is_finished: true, is_live: true, is_incomplete: false });
    const failed = await waitFor(g, await dispatch({ epochs: 2, fail_at: 1 }), ended);
    expect(flags(failed)).toEqual({ status: 'failed', is_active: false, is_started: true, is_finished: false, is_live: false, is_incomplete: true });
    const long = await dispatch({ epochs: 2, delay: 60 });
    const running = await waitFor(g, long, (i) => i.status === 'running');
    expect(flags(running)).toEqual({ status: 'running', is_active: true, is_started: true, is_finished: false, is_live: true, is_incomplete: false });
    expect((await api(g, 'POST', `/v1/executions/${long}/cancel`)).status).toBe(204);
    const interrupted = await waitFor(g, long, ended, 10_000);
    expect(flags(interrupted)).toEqual({ status: 'interrupted', is_active: false, is_started: true, is_finished: false, is_live: false, is_incomplete: true });
  });

  it('a run killed with SIGKILL ends failed, never active forever', async () => {
    const { body } = await api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ epochs: 1, delay: 60, fail_at: 7 }] }] });
    const running = await waitFor(g, body.uuid, (i) => i.status === 'running' && i.pid !== null);
    process.kill(running.pid!, 'SIGKILL');
    const info = await waitFor(g, body.uuid, ended, 10_000);
    expect(info).toMatchObject({ status: 'failed', is_active: false, error: { exception: 'ProcessDied' } });
    expect((await api(g, 'GET', '/v1/executions?active=true')).body.map((e: Info) => e.uuid)).not.toContain(body.uuid);
    expect((await api(g, 'GET', '/v1/executions?incomplete=true')).body.map((e: Info) => e.uuid)).toContain(body.uuid);
  });

  it('context interfaces are entered in order, exited in reverse, and fold into the identity', async () => {
    const plain = await api(g, 'POST', '/v1/interfaces', { target: 'trainer', version: [{ epochs: 1 }] });
    const { body } = await api(g, 'POST', '/v1/executions', {
      interfaces: [{ target: 'trainer', version: [{ epochs: 1 }], context: [{ target: 'ctx', version: [{ name: 'a' }] }, { target: 'ctx', version: [{ name: 'b' }] }] }],
    });
    await waitFor(g, body.uuid, ended);
    expect(body.interfaces[0]).not.toBe(plain.body.uuid);
    const record = (await api(g, 'GET', `/v1/interfaces/${body.interfaces[0]}`)).body;
    expect(record.predicate.context).toHaveLength(2);
    expect(await readFile(path.join(project, 'order.txt'), 'utf8')).toBe('enter a\nenter b\nexit b\nexit a\n');
  });
});

describe('executions under load and restarts', () => {
  it('200 concurrent dispatches all complete and are all listed', async () => {
    const g = await gateway();
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => api(g, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ epochs: 1 + (i % 3) }] }] })),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    const uuids = results.map((r) => r.body.uuid);
    for (const uuid of uuids) await waitFor(g, uuid, ended, 120_000);
    const listed = (await api(g, 'GET', '/v1/executions?limit=1000')).body as Info[];
    const finished = new Set(listed.filter((e) => e.status === 'finished').map((e) => e.uuid));
    expect(uuids.filter((u) => !finished.has(u))).toEqual([]);
  }, 180_000);

  it('a gateway restart does not stop a run; the new gateway reports it and can still cancel it', async () => {
    const project = await tempProject();
    const first = await gateway({ project });
    const { body } = await api(first, 'POST', '/v1/executions', { interfaces: [{ target: 'trainer', version: [{ epochs: 100, delay: 0.05 }] }] });
    await waitFor(first, body.uuid, (i) => i.status === 'running');
    await first.close();
    await new Promise((r) => setTimeout(r, 300));
    const second = await gateway({ project });
    const info = (await api(second, 'GET', `/v1/executions/${body.uuid}`)).body;
    expect(info).toMatchObject({ status: 'running', is_active: true });
    const before = (await api(second, 'GET', `/v1/executions/${body.uuid}/output`)).body.size;
    await new Promise((r) => setTimeout(r, 300));
    expect((await api(second, 'GET', `/v1/executions/${body.uuid}/output`)).body.size).toBeGreaterThan(before);
    expect((await api(second, 'POST', `/v1/executions/${body.uuid}/cancel`)).status).toBe(204);
    expect((await waitFor(second, body.uuid, ended, 10_000)).status).toBe('interrupted');
  });
});
