/**
 * Remote modules declared in portico.json: fetched on first use (https, local copy, link),
 * pinned by sha256, never silently re-fetched, and `portico fetch` without importing.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cleanup, gateway, ROOT, tempProject } from './helpers.js';

afterAll(cleanup);

const BIN = path.join(ROOT, 'packages/server/bin/portico.js');
const run = promisify(execFile);
const sha = (text: string) => createHash('sha256').update(text).digest('hex');

const SHARED = [
  'import os',
  'from portico import Interface',
  '',
  '# Importing leaves a trace, so a test can tell whether the code ran.',
  'open(os.path.join(os.getcwd(), "imported-" + __name__), "w").close()',
  '',
  'class Shared(Interface):',
  '    """A shared interface."""',
  '    class Config:',
  '        scale: int = 2',
  '    def times(self, x: int) -> int:',
  '        return x * self.config.scale',
  '',
].join('\n');

describe('remote modules', () => {
  let lib: string;
  let served = SHARED;
  let hits = 0;
  let httpsUrl: string;
  let caFile: string;
  const servers: Array<{ close(): void }> = [];

  beforeAll(async () => {
    lib = await mkdtemp(path.join(tmpdir(), 'portico-lib-'));
    await writeFile(path.join(lib, 'shared.py'), SHARED);
    // A loopback https server with a throwaway self-signed certificate.
    const key = path.join(lib, 'key.pem');
    caFile = path.join(lib, 'cert.pem');
    await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', caFile, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1']);
    const server = createServer({ key: await readFile(key), cert: await readFile(caFile) }, (req, res) => {
      hits++;
      if (req.url === '/shared.py') res.end(served);
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    httpsUrl = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => servers.forEach((s) => s.close()));

  it('a local copy is fetched on first use, imports like a project module, and is listed', async () => {
    const project = await tempProject({ 'portico.json': JSON.stringify({ remotes: { 'lib.shared': { file: path.join(lib, 'shared.py'), sha256: sha(SHARED) } } }) });
    const g = await gateway({ project });
    const before = await api(g, 'GET', '/v1/project/remotes');
    expect(before.body.remotes['lib.shared']).toBe(path.join(lib, 'shared.py'));
    expect(before.body.details['lib.shared']).toMatchObject({ kind: 'file', fetched: false, path: '.portico/remotes/lib/shared.py' });
    const call = await api(g, 'POST', '/v1/interfaces/call', { target: 'lib.shared', version: [{ scale: 3 }], method: 'times', args: [5] });
    expect(call.body).toEqual({ payload: 15 });
    expect((await api(g, 'GET', '/v1/project/remotes')).body.details['lib.shared'].fetched).toBe(true);
    // Never silently re-fetched: a change at the source does not reach the cached copy.
    expect(await readFile(path.join(project, '.portico/remotes/lib/shared.py'), 'utf8')).toBe(SHARED);
  });

  it('a pin that does not match is refused, and nothing is imported', async () => {
    const project = await tempProject({ 'portico.json': JSON.stringify({ remotes: { shared: { file: path.join(lib, 'shared.py'), sha256: sha('something else') } } }) });
    const g = await gateway({ project });
    const res = await api(g, 'POST', '/v1/interfaces', { target: 'shared' });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('integrity_failed');
    expect(existsSync(path.join(project, '.portico/remotes/shared.py'))).toBe(false);
    expect(existsSync(path.join(project, 'imported-shared'))).toBe(false);
  });

  it('a link follows its target, and a changed target no longer matches its pin', async () => {
    const target = path.join(lib, 'linked.py');
    await writeFile(target, SHARED);
    const project = await tempProject({ 'portico.json': JSON.stringify({ remotes: { linked: { link: target, sha256: sha(SHARED) } } }) });
    const g = await gateway({ project });
    expect((await api(g, 'POST', '/v1/interfaces/call', { target: 'linked', method: 'times', args: [2] })).body).toEqual({ payload: 4 });
    await writeFile(target, SHARED + '\n# tampered\n');
    const res = await api(g, 'POST', '/v1/interfaces', { target: 'linked', version: [{ scale: 9 }] });
    expect(res.body.code).toBe('integrity_failed');
  });

  it('portico fetch downloads over https without importing, and the gateway then uses the cached copy', async () => {
    const project = await tempProject({ 'portico.json': JSON.stringify({ remotes: { shared: { url: `${httpsUrl}/shared.py`, sha256: sha(SHARED) } } }) });
    const env = { ...process.env, NODE_EXTRA_CA_CERTS: caFile };
    const { stdout } = await run(process.execPath, [BIN, 'fetch', '--project', project], { env, cwd: project });
    expect(stdout).toContain('shared');
    expect(await readFile(path.join(project, '.portico/remotes/shared.py'), 'utf8')).toBe(SHARED);
    expect(existsSync(path.join(project, 'imported-shared'))).toBe(false);
    const fetchedHits = hits;

    served = SHARED.replace('scale: int = 2', 'scale: int = 7'); // the source changes upstream
    const child = spawn(process.execPath, [BIN, 'serve', project, '--port', '0'], { env, stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const url = await new Promise<string>((resolve) => {
        let out = '';
        child.stdout.on('data', (d) => {
          out += d;
          const m = /API\s+(http:\/\/\S+)\/v1/.exec(out);
          if (m) resolve(m[1]!);
        });
      });
      const res = await api({ url }, 'POST', '/v1/interfaces/call', { target: 'shared', method: 'times', args: [1] });
      expect(res.body).toEqual({ payload: 2 });
      expect(hits).toBe(fetchedHits);
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('portico fetch --refresh re-downloads, and refuses content that breaks the pin', async () => {
    const project = await tempProject({ 'portico.json': JSON.stringify({ remotes: { shared: { url: `${httpsUrl}/shared.py`, sha256: sha(SHARED) } } }) });
    const env = { ...process.env, NODE_EXTRA_CA_CERTS: caFile };
    served = SHARED;
    await run(process.execPath, [BIN, 'fetch', 'shared', '--project', project], { env });
    served = SHARED + '# changed\n';
    const refused = await run(process.execPath, [BIN, 'fetch', 'shared', '--refresh', '--project', project], { env }).catch((e) => e);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('integrity_failed');
    expect(await readFile(path.join(project, '.portico/remotes/shared.py'), 'utf8')).toBe(SHARED);
  });

  it('a portico.json written, edited or removed while the gateway runs is what the next uses follow', async () => {
    const project = await tempProject();
    const g = await gateway({ project });
    // The gateway has read the project's remotes (none) before the file appears.
    expect((await api(g, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'value' })).status).toBe(200);
    const declare = (pin: string) => writeFile(path.join(project, 'portico.json'), JSON.stringify({ remotes: { shared: { file: path.join(lib, 'shared.py'), sha256: pin } } }));
    await declare(sha(SHARED));
    await expect.poll(async () => (await api(g, 'POST', '/v1/interfaces/call', { target: 'shared', method: 'times', args: [4] })).body).toEqual({ payload: 8 });
    await declare(sha('another pin'));
    await expect.poll(async () => (await api(g, 'POST', '/v1/interfaces', { target: 'shared', version: [{ scale: 5 }] })).body.code).toBe('integrity_failed');
    await rm(path.join(project, 'portico.json'));
    await expect.poll(async () => (await api(g, 'GET', '/v1/project/remotes')).body.remotes).toEqual({});
  });

  it('a portico.json that is a symbolic link follows its target', async () => {
    const declared = path.join(lib, 'declared.json');
    await writeFile(declared, JSON.stringify({ remotes: {} }));
    const project = await tempProject();
    await symlink(declared, path.join(project, 'portico.json'));
    const g = await gateway({ project });
    expect((await api(g, 'GET', '/v1/project/remotes')).body.remotes).toEqual({});
    // An edit of the target is no event in the project folder: the link is checked on every use.
    await writeFile(declared, JSON.stringify({ remotes: { shared: { file: path.join(lib, 'shared.py') } } }));
    expect((await api(g, 'GET', '/v1/project/remotes')).body.remotes).toEqual({ shared: path.join(lib, 'shared.py') });
  });

  it('a malformed portico.json is a clear error', async () => {
    const project = await tempProject({ 'portico.json': JSON.stringify({ remotes: { 'bad name': { url: 'http://x' } } }) });
    const g = await gateway({ project });
    const res = await api(g, 'GET', '/v1/project/remotes');
    expect(res.status).toBe(400);
    expect(res.body.message).toContain('portico.json');
  });
});
