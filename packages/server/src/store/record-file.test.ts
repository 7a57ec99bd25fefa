/**
 * The record file of a new interface, written the fast way (files.ts writeNewRecordFile, on the
 * record-file thread) and the reference way (writeRecordFile): from the same project folder, both
 * leave the same files with the same contents, or fail with the same error code.
 */
import fc from 'fast-check';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERFACES_DIR, RECORD_FILE, STORE_DIR, writeNewRecordFile, writeRecordFile } from './files.js';
import { threadReady } from './record-file-thread.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'portico-record-file-'));
  // Up before the first comparison, so that every file of the fast way goes through the thread.
  expect(await threadReady()).toBe(true);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** What a project folder can hold where a record file goes, before it is written. */
const BEFORE = [
  'nothing', // a new project: no interfaces folder yet
  'interfaces folder', // the usual case: other interfaces, not this one
  'empty folder', // its folder is there (a crash between making it and writing the file)
  'older record file', // its folder holds a record file (a record deleted from the index, created again)
  'data, no record file', // its folder holds data (a copy put in place, or left behind)
  'a file named as its folder',
  'a file named as the interfaces folder',
] as const;

async function prepare(project: string, uuid: string, before: (typeof BEFORE)[number]): Promise<void> {
  const interfaces = path.join(project, STORE_DIR, INTERFACES_DIR);
  const dir = path.join(interfaces, uuid);
  await mkdir(path.join(project, STORE_DIR), { recursive: true });
  if (before === 'nothing') return;
  if (before === 'a file named as the interfaces folder') return writeFile(interfaces, 'x');
  await mkdir(interfaces);
  await mkdir(path.join(interfaces, 'other'));
  if (before === 'a file named as its folder') return writeFile(dir, 'x');
  if (before === 'interfaces folder') return;
  await mkdir(dir);
  if (before === 'older record file') await writeFile(path.join(dir, RECORD_FILE), '{"uuid":"old"}\n');
  if (before === 'data, no record file') await writeFile(path.join(dir, 'data.bin'), 'kept');
}

/** Every file and folder under the project, with the content of each file. */
async function tree(dir: string, prefix = ''): Promise<string[]> {
  const entries: string[] = [];
  for (const name of (await readdir(dir)).sort()) {
    const at = path.join(dir, name);
    if ((await stat(at)).isDirectory()) entries.push(`${prefix}${name}/`, ...(await tree(at, `${prefix}${name}/`)));
    else entries.push(`${prefix}${name} = ${await readFile(at, 'utf8')}`);
  }
  return entries;
}

async function outcome(write: Promise<unknown>): Promise<string> {
  return write.then(
    () => 'written',
    (err: NodeJS.ErrnoException) => `failed: ${err.code}`,
  );
}

let runs = 0;

describe('writeNewRecordFile (the fast way) against writeRecordFile (the reference)', () => {
  it('leaves the same files, or fails with the same code, from every starting point', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...BEFORE),
        fc.stringMatching(/^[A-Za-z0-9_.-]{1,24}$/).filter((uuid) => uuid !== '.' && uuid !== '..' && uuid !== 'other'),
        fc.oneof(fc.json(), fc.string({ unit: 'binary' }), fc.constant('x'.repeat(200_000))),
        async (before, uuid, text) => {
          const run = path.join(root, String(runs++));
          const [fast, reference] = [path.join(run, 'fast'), path.join(run, 'reference')];
          await prepare(fast, uuid, before);
          await prepare(reference, uuid, before);
          const fastOutcome = await outcome(writeNewRecordFile(fast, uuid, text));
          expect(fastOutcome).toBe(await outcome(writeRecordFile(reference, uuid, text)));
          expect(await tree(fast)).toEqual(await tree(reference));
          if (fastOutcome === 'written') expect(await readFile(path.join(fast, STORE_DIR, INTERFACES_DIR, uuid, RECORD_FILE), 'utf8')).toBe(`${text}\n`);
          await rm(run, { recursive: true, force: true });
        },
      ),
      { numRuns: 120 },
    );
  });

  it('writes the files of many creates at once, each whole, whichever way each goes', async () => {
    const project = path.join(root, 'many');
    await prepare(project, 'any', 'interfaces folder');
    const write = (uuid: string) => writeNewRecordFile(project, uuid, JSON.stringify({ uuid }));
    // A first wave in one turn (one batch), and a second while the first may still be out (those
    // wait for the thread, or write their own once it lags).
    const first = Array.from({ length: 300 }, (_, i) => `u${i}`);
    const second = Array.from({ length: 100 }, (_, i) => `v${i}`);
    const waves = [Promise.all(first.map(write)), new Promise<void>((resolve) => setImmediate(resolve)).then(() => Promise.all(second.map(write)))];
    await Promise.all(waves);
    for (const uuid of [...first, ...second]) {
      expect(JSON.parse(await readFile(path.join(project, STORE_DIR, INTERFACES_DIR, uuid, RECORD_FILE), 'utf8'))).toEqual({ uuid });
    }
  });
});
