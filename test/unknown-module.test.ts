/**
 * One answer for one mistake: a target that names no module of the project is `unknown_module`
 * with issues on every endpoint and frame, naming the interface modules that do exist and the
 * nearest ones: 400 in a body or frame, 404 in a path (a missing resource); and no message a
 * client gets holds the server's absolute project path.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, Client, cleanup, gateway, tempProject } from './helpers.js';

afterAll(cleanup);

const INTERFACE = (name: string) => `from portico import Interface\n\n\nclass ${name}(Interface):\n    pass\n`;

describe('an unknown module', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    g = await gateway({ project: await tempProject({ 'helper.py': 'X = 1\n' }) });
  });

  /** The error detail each surface answers for `target`, by surface. */
  async function answers(target: string): Promise<Record<string, { status: number; detail: any }>> {
    const rest = async (method: string, pathname: string, body?: unknown) => {
      const res = await api(g, method, pathname, body);
      // A 404's detail is its message (a string), with code, message and issues beside it.
      const { code, message, issues } = res.body ?? {};
      return { status: res.status, detail: res.status === 404 ? (res.body.detail === message ? { code, message, issues } : res.body) : res.body?.detail };
    };
    const client = await Client.open(g.url);
    const frame = await client.request({ type: 'connect', target });
    client.close();
    return {
      create: await rest('POST', '/v1/interfaces', { target }),
      call: await rest('POST', '/v1/interfaces/call', { target, method: 'value' }),
      resolve: await rest('POST', '/v1/interfaces/resolve', { target }),
      lifecycle: await rest('POST', '/v1/interfaces/lifecycle', { target }),
      lifecycleContext: await rest('POST', '/v1/interfaces/lifecycle', { target: 'counter', context: [{ target }] }),
      dispatch: await rest('POST', '/v1/executions', { interfaces: [{ target }] }),
      schema: await rest('GET', `/v1/project/${target}`),
      widget: await rest('GET', `/v1/project/${target}/widget/esm`),
      connect: { status: 400, detail: frame.type === 'error' ? frame.payload : frame },
    };
  }

  it('is unknown_module with issues everywhere, naming the modules that exist and the nearest: 400, or 404 where a path names it', async () => {
    const all = await answers('countr');
    const expected = {
      code: 'unknown_module',
      message: "Unknown module 'countr': did you mean 'counter'? The interface modules of this project: counter, faulty, files, gallery, slow, streamer, trainer, wave.",
    };
    for (const [surface, { status, detail }] of Object.entries(all)) {
      expect(status, surface).toBe(surface === 'schema' || surface === 'widget' ? 404 : 400);
      expect(detail, surface).toEqual({ ...expected, issues: [{ path: null, message: expected.message }] });
    }
  });

  it('names the nearest modules only when some are near; a module that defines no interface is not offered', async () => {
    const far = await api(g, 'POST', '/v1/interfaces/resolve', { target: 'zzzzzzzz' });
    expect(far.body.detail.message).toBe("Unknown module 'zzzzzzzz'. The interface modules of this project: counter, faulty, files, gallery, slow, streamer, trainer, wave.");
    const two = await api(g, 'POST', '/v1/interfaces', { target: 'slaw' });
    expect(two.body.detail.message).toMatch(/^Unknown module 'slaw': did you mean 'slow'\?/);
    const helper = await api(g, 'POST', '/v1/interfaces', { target: 'helpr' });
    expect(helper.body.detail.message).not.toContain('helper');
    // not a module name at all, a uuid that names no record, a stdlib module: the same answer
    for (const target of ['../counter', 'json', '0123456789abcdef01234567']) {
      const res = await api(g, 'POST', '/v1/interfaces', { target });
      expect([res.status, res.body.detail.code], target).toEqual([400, 'unknown_module']);
      expect(res.body.detail.message).toContain(`Unknown module '${target}'`);
    }
  });

  it('lists at most the first 20 modules, sorted, and says how many more there are', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 25; i++) files[`m${String(i).padStart(2, '0')}.py`] = INTERFACE(`M${i}`);
    const many = await gateway({ project: await tempProject(files, { demo: false }) });
    const res = await api(many, 'POST', '/v1/interfaces', { target: 'm5' });
    const names = Array.from({ length: 20 }, (_, i) => `m${String(i).padStart(2, '0')}`).join(', ');
    expect(res.body.detail.message).toBe(`Unknown module 'm5': did you mean 'm05' or 'm15'? The interface modules of this project: ${names} and 5 more.`);
    const empty = await gateway({ project: await tempProject({}, { demo: false }) });
    expect((await api(empty, 'POST', '/v1/interfaces', { target: 'counter' })).body.detail.message).toBe("Unknown module 'counter': this project has no interface modules.");
  });
});

describe('no client-facing message holds the absolute project path', () => {
  let g: Awaited<ReturnType<typeof gateway>>;
  let project: string;
  beforeAll(async () => {
    project = await tempProject({
      'needs_data.py': 'import os\nopen(os.path.join(os.getcwd(), "data", "table.csv"))\n',
      'reader.py': `
import os
from portico import Interface


class Reader(Interface):
    def read(self, params):
        return open(os.path.join(self.local_directory(), params["name"]), "rb")

    def where(self):
        raise RuntimeError("nothing at " + self.local_directory("x"))
`,
    });
    g = await gateway({ project });
  });

  it('a module that fails to import (its error, its schema, its entry in the index), a read of a missing file, a raising method, a failed upload', async () => {
    const messages: string[] = [];
    const failedImport = await api(g, 'POST', '/v1/interfaces', { target: 'needs_data' });
    expect(failedImport.body.detail.code).toBe('module_error');
    expect(failedImport.body.detail.message).toContain("'data/table.csv'");
    messages.push(failedImport.body.detail.message);
    messages.push((await api(g, 'GET', '/v1/project/needs_data')).body.message);
    const listed = (await api(g, 'GET', '/v1/project')).body.modules.find((m: { module: string }) => m.module === 'needs_data');
    expect(listed.error).toContain("'data/table.csv'");
    messages.push(listed.error);

    const client = await Client.open(g.url);
    const { payload: info } = await client.connect('reader');
    const read = await client.request({ type: 'chunk_start', mode: 'read', params: { name: 'missing.bin' } });
    expect(read.payload.code).toBe('not_found');
    expect(read.payload.message).toContain(`.portico/interfaces/${info.uuid}/missing.bin`);
    messages.push(read.payload.message);
    const raised = await client.request({ type: 'call', method: 'where' });
    expect(raised.payload.code).toBe('call_failed');
    messages.push(raised.payload.message);
    const upload = await client.request({ type: 'chunk_start', mode: 'write', path: '../outside.bin' });
    messages.push(upload.payload.message);
    client.close();
    messages.push((await api(g, 'GET', `/v1/interfaces/${info.uuid}/files/missing.bin`)).body.message);

    for (const [i, message] of messages.entries()) {
      expect(typeof message, `message ${i}`).toBe('string');
      expect(message).not.toContain(project);
    }
  });
});
