/**
 * Edits on disk (docs/writing/reload.md): with `portico serve --reload` an edit of a
 * project's .py file starts its worker again, live instances are made again on the new code with
 * their saved widget state, and attached clients hear `instance_restarted` (`source_changed`).
 * Without it, a live instance keeps the class it was made with, and says so when asked for a
 * method added since.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api, cleanup, Client, gateway, tempProject } from './helpers.js';

afterAll(cleanup);

/** A widget whose state is saved (it overrides widget_update), and a size that makes other uuids. */
const BOARD = `
from portico import Interface
from words import GREETING

class Board(Interface):
    class Config:
        size: int = 1

    def __init__(self):
        self.title = "untitled"

    def widget_state(self):
        return {"title": self.title}

    def widget_update(self, changes):
        self.title = str(changes.get("title", self.title))
        return changes

    def greet(self):
        return GREETING
`;

/** The method an edit adds: it reads the state the instance has, so it proves the state came back. */
const SHOUT = `
    def shout(self):
        return self.title.upper()
`;

const WORDS = 'GREETING = "hello"\n';

describe('portico serve --reload', { timeout: 120_000 }, () => {
  it('an edit adding a method restarts the worker: the client hears source_changed, and the same uuid answers the new method with its widget state back', async () => {
    const project = await tempProject({ 'board.py': BOARD, 'words.py': WORDS }, { demo: false });
    const g = await gateway({ project, reload: true });
    const page = await Client.open(g.url);
    const { payload } = await page.connect('board');
    expect((await page.request({ type: 'widget_set', changes: { title: 'kept' } })).type).toBe('widget_change');
    expect((await page.request({ type: 'call', method: 'shout' })).payload.code).toBe('not_found');

    await writeFile(path.join(project, 'board.py'), BOARD + SHOUT);
    const told = await page.waitFor((f) => f.type === 'instance_restarted');
    expect(told.payload).toMatchObject({ uuid: payload.uuid, reason: 'source_changed' });
    expect(told.payload.message).toContain('board.py changed on disk (--reload)');

    expect(await page.request({ type: 'call', method: 'shout' })).toMatchObject({ type: 'result', payload: 'KEPT' });
    expect((await page.request({ type: 'widget_get' })).payload.state).toEqual({ title: 'kept' });
    const rest = await api(g, 'POST', '/v1/interfaces/call', { target: payload.uuid, method: 'shout' });
    expect(rest).toMatchObject({ status: 200, body: { payload: 'KEPT' } });
  });

  it('an edit of a module the interface imports reloads it too; .py files in .portico/, hidden and environment folders do not count', async () => {
    const project = await tempProject({ 'board.py': BOARD, 'words.py': WORDS, 'env/pyvenv.cfg': 'home = /usr/bin\n' }, { demo: false });
    const g = await gateway({ project, reload: true });
    const page = await Client.open(g.url);
    await page.connect('board');
    expect((await page.request({ type: 'call', method: 'greet' })).payload).toBe('hello');

    // Written first: had any of these started a restart, the first notice would name it.
    await mkdir(path.join(project, '.portico', 'remotes'), { recursive: true });
    await writeFile(path.join(project, '.portico', 'remotes', 'other.py'), 'X = 1\n');
    await mkdir(path.join(project, '.git'), { recursive: true });
    await writeFile(path.join(project, '.git', 'hook.py'), 'X = 1\n');
    await writeFile(path.join(project, 'env', 'site.py'), 'X = 1\n');
    await writeFile(path.join(project, '.#board.py'), 'an editor lock file\n');
    await writeFile(path.join(project, 'words.py'), 'GREETING = "hello again"\n');

    const told = await page.waitFor((f) => f.type === 'instance_restarted');
    expect(told.payload.reason).toBe('source_changed');
    expect(told.payload.message).toContain(': words.py changed on disk (--reload)');
    expect((await page.request({ type: 'call', method: 'greet' })).payload).toBe('hello again');
  });

  it('a package made after the start is watched too', async () => {
    const project = await tempProject({ 'board.py': BOARD, 'words.py': WORDS }, { demo: false });
    const g = await gateway({ project, reload: true });
    const page = await Client.open(g.url);
    await page.connect('board');
    await page.request({ type: 'call', method: 'greet' }); // the instance is made on its first use
    await mkdir(path.join(project, 'shapes'));
    await writeFile(path.join(project, 'shapes', '__init__.py'), 'from portico import Interface\n\nclass Shape(Interface):\n    def sides(self):\n        return 3\n');
    const first = await page.waitFor((f) => f.type === 'instance_restarted');
    expect(first.payload.message).toContain('shapes');
    // Edited again inside the new folder: heard as well (by the instance made again on its next use).
    await page.request({ type: 'call', method: 'greet' });
    page.frames.length = 0;
    await writeFile(path.join(project, 'shapes', '__init__.py'), 'from portico import Interface\n\nclass Shape(Interface):\n    def sides(self):\n        return 4\n');
    await page.waitFor((f) => f.type === 'instance_restarted');
    expect((await api(g, 'POST', '/v1/interfaces/call', { target: 'shapes', method: 'sides' })).body).toEqual({ payload: 4 });
  });
});

describe('without --reload', { timeout: 120_000 }, () => {
  it('a live instance keeps the class it was made with: a method added on disk is 404 there, saying why; new instances and a released one have it', async () => {
    const project = await tempProject({ 'board.py': BOARD, 'words.py': WORDS }, { demo: false });
    const g = await gateway({ project });
    const page = await Client.open(g.url);
    const { payload } = await page.connect('board');
    await page.request({ type: 'widget_set', changes: { title: 'kept' } });

    await writeFile(path.join(project, 'board.py'), BOARD + SHOUT);
    const refused = await page.request({ type: 'call', method: 'shout' });
    expect(refused).toMatchObject({ type: 'error', payload: { code: 'not_found' } });
    expect(refused.payload.message).toContain("Method 'shout' not found on board.Board; this live instance was made before board's source changed on disk");
    expect(refused.payload.message).toContain('portico serve --reload');
    const rest = await api(g, 'POST', '/v1/interfaces/call', { target: payload.uuid, method: 'shout' });
    expect(rest.status).toBe(404);
    expect(rest.body.message).toContain('release it');

    // The schema and another instance of the module come from the new code at once.
    const schema = await api(g, 'GET', '/v1/project/board');
    expect(schema.body.methods.map((m: { name: string }) => m.name)).toContain('shout');
    const other = await api(g, 'POST', '/v1/interfaces', { target: 'board', version: [{ size: 2 }] });
    expect((await api(g, 'POST', '/v1/interfaces/call', { target: other.body.uuid, method: 'shout' })).body).toEqual({ payload: 'UNTITLED' });
    // Released, the same uuid is made again from the new code, with its saved widget state.
    expect((await page.request({ type: 'release' })).payload.released).toBe(true);
    expect(await page.request({ type: 'call', method: 'shout' })).toMatchObject({ type: 'result', payload: 'KEPT' });
    expect(page.frames.some((f) => f.type === 'instance_restarted')).toBe(false);
  });
});
