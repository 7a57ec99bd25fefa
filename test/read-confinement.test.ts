/**
 * Reads are confined like writes: a path a hook builds with `local_directory()` (and the files
 * `save_file` / `load_file` touch) may follow a symlink only while it stays inside the interface's
 * folder. One that leads out answers `forbidden`, and nothing of the outside file is sent.
 */
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, Client, cleanup, gateway, tempProject } from './helpers.js';

const FILES = `
from portico import Interface


class Files(Interface):
    """Serves files of its folder."""

    class Config:
        name: str = "default"

    def read(self, params):
        return open(self.local_directory(*params["parts"]), "rb")

    def load(self, name):
        return self.load_file(name)

    def save(self, name, text):
        self.save_file(name, text)
        return "saved"
`;

const SECRET = 'secret bytes 7f3a beyond the folder';
let project: string;
let outside: string;
let url: string;
let client: Client;
let uuid: string;
let dir: string;

beforeAll(async () => {
  project = await tempProject({ 'files.py': FILES }, { demo: false });
  outside = await tempProject({ 'secret.txt': SECRET }, { demo: false });
  ({ url } = await gateway({ project }));
  client = await Client.open(url);
  uuid = (await client.connect('files')).payload.uuid;
  dir = path.join(project, '.portico/interfaces', uuid);
  await mkdir(path.join(dir, 'real'), { recursive: true });
  await writeFile(path.join(dir, 'real/inside.txt'), 'inside');
  await symlink(path.join(outside, 'secret.txt'), path.join(dir, 'link'));
  await symlink(outside, path.join(dir, 'dirlink'));
  await symlink(path.join(dir, 'real'), path.join(dir, 'alias'));
});
afterAll(cleanup);

async function read(parts: string[]): Promise<{ type: string; code?: string; message?: string; bytes: Buffer }> {
  const received: Buffer[] = [];
  client.onBinary = (data) => received.push(data);
  const reply = await client.request({ type: 'chunk_start', mode: 'read', params: { parts } });
  return { type: reply.type, code: reply.payload?.code, message: reply.payload?.message, bytes: Buffer.concat(received) };
}

async function call(method: string, kwargs: Record<string, unknown>) {
  return api({ url }, 'POST', '/v1/interfaces/call', { target: uuid, method, kwargs });
}

describe('a read hook opening local_directory(...)', () => {
  it.each([
    ['a symlinked file leading out', ['link']],
    ['a file under a symlinked folder leading out', ['dirlink', 'secret.txt']],
    ['the symlinked folder itself', ['dirlink']],
  ])('%s answers forbidden and sends nothing of it', async (_name, parts) => {
    const got = await read(parts);
    expect(got).toMatchObject({ type: 'error', code: 'forbidden' });
    expect(got.message).toContain('outside the interface folder');
    expect(got.message).not.toContain(outside);
    expect(got.bytes.length).toBe(0);
    // the socket stays usable
    expect((await client.request({ type: 'ping' })).type).toBe('pong');
  });

  it('follows a symlink that stays inside the folder', async () => {
    const got = await read(['alias', 'inside.txt']);
    expect(got.type).toBe('chunk_done');
    expect(got.bytes.toString()).toBe('inside');
  });
});

describe('save_file and load_file', () => {
  it('load_file through a symlink leading out answers 403 forbidden', async () => {
    const res = await call('load', { name: 'link' });
    expect(res.status).toBe(403);
    expect(JSON.stringify(res.body)).toContain('forbidden');
    expect(JSON.stringify(res.body)).not.toContain(SECRET);
  });

  it('save_file under a symlinked folder leading out answers 403 forbidden and writes nothing there', async () => {
    const res = await call('save', { name: 'dirlink/new.txt', text: 'evil' });
    expect(res.status).toBe(403);
    expect(JSON.stringify(res.body)).toContain('forbidden');
    await expect(readFile(path.join(outside, 'new.txt'))).rejects.toThrow();
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
  });

  it('save_file and load_file inside the folder still work', async () => {
    expect((await call('save', { name: 'note.txt', text: 'kept' })).body).toMatchObject({ payload: 'saved' });
    expect((await call('load', { name: 'note.txt' })).body).toMatchObject({ payload: 'kept' });
  });
});
