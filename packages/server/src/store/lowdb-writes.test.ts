/**
 * The embedded store's writes when the disk fails them, and its files: a write whose journal entry
 * does not reach the disk is refused and taken back out of memory (a later write of the same
 * record survives it), leaves nothing a reopen or a crash copy brings back, and a failed delete
 * keeps the interface's data. Segments and record files are written compact; indented ones, as
 * earlier gateways wrote them, open and reindex the same.
 */
import { cp, mkdtemp, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { record } from './query.arbitraries.js';
import { INTERFACES_DIR, RECORD_FILE, STORE_DIR } from './files.js';
import { INDEX_DIR, LowdbStore } from './lowdb-store.js';
import type { InterfaceRecord } from './store.js';

let root: string;
let project: string;
/** What every FileHandle inherits (node:fs/promises does not export the class). */
let handles: { datasync: () => Promise<void> };

beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'portico-writes-'));
  project = path.join(root, 'project');
  const probe = await open(path.join(root, 'probe'), 'w');
  handles = Object.getPrototypeOf(probe);
  await probe.close();
});

afterEach(async () => {
  vi.restoreAllMocks();
  await rm(root, { recursive: true, force: true });
});

/**
 * Makes the next `times` fdatasync calls of any file handle fail as a dying disk does (only the
 * journal fdatasyncs in these tests; the bytes written before it stay in the file). Synchronous,
 * so that the writes started next meet it.
 */
function failNextSyncs(times: number): void {
  const spy = vi.spyOn(handles, 'datasync');
  for (let i = 0; i < times; i++) spy.mockRejectedValueOnce(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
}

/** What a user sees of the store: every record, by uuid, label and archived flag. */
async function held(store: LowdbStore): Promise<string[]> {
  const { items } = await store.search({ include_archived: true, limit: 1000 });
  return items.map((r) => `${r.uuid}:${r.label}:${r.archived}`).sort();
}

const recordFile = (uuid: string) => path.join(project, STORE_DIR, INTERFACES_DIR, uuid, RECORD_FILE);

describe('a write the disk fails', () => {
  it('is refused and leaves memory, reopen and a crash copy as before; the store keeps writing', async () => {
    const store = await LowdbStore.open(project);
    const a = record('a', { n: 1 }, { label: 'one' });
    await store.insert(a);
    await writeFile(path.join(project, STORE_DIR, INTERFACES_DIR, 'a', 'data.bin'), 'kept');
    const before = await held(store);

    failNextSyncs(1);
    await expect(store.insert(record('b', { n: 2 }))).rejects.toThrow(/EIO/);
    expect(await store.get('b')).toBeUndefined();
    await expect(readFile(recordFile('b'))).rejects.toThrow(/ENOENT/);

    failNextSyncs(1);
    await expect(store.update('a', { label: 'two' })).rejects.toThrow(/EIO/);
    expect(await store.get('a')).toEqual(a);

    failNextSyncs(1);
    await expect(store.delete('a')).rejects.toThrow(/EIO/);
    expect(await store.get('a')).toEqual(a);
    expect(await readFile(path.join(project, STORE_DIR, INTERFACES_DIR, 'a', 'data.bin'), 'utf8')).toBe('kept');
    expect(await held(store)).toEqual(before);

    // Later writes are acknowledged, and replay past the failed ones.
    await store.insert(record('c', { n: 3 }));
    const after = await held(store);
    expect(after).toEqual(['a:one:false', 'c:null:false']);
    const crashed = path.join(root, 'crashed');
    await cp(path.join(project, STORE_DIR), path.join(crashed, STORE_DIR), { recursive: true });
    await store.close();
    const replayed = await LowdbStore.open(crashed);
    expect(await held(replayed)).toEqual(after);
    await replayed.close();
    const reopened = await LowdbStore.open(project);
    expect(await held(reopened)).toEqual(after);
    await reopened.close();
  });

  it('takes a record back to what the journal holds, unless a later write of it is on its way', async () => {
    const store = await LowdbStore.open(project);
    await store.insert(record('r', {}, { label: 'one' }));
    // Two labels on their way at once, both failed: back to the last durable one.
    failNextSyncs(2);
    const failed = await Promise.allSettled([store.update('r', { label: 'two' }), store.update('r', { label: 'three' })]);
    expect(failed.map((s) => s.status)).toEqual(['rejected', 'rejected']);
    expect((await store.get('r'))?.label).toBe('one');
    // The first fails; the second, built on it and written whole in the next flush, is acknowledged: it stands.
    failNextSyncs(1);
    const mixed = await Promise.allSettled([store.update('r', { label: 'four' }), store.update('r', { label: 'five' })]);
    expect(mixed.map((s) => s.status)).toEqual(['rejected', 'fulfilled']);
    expect((await store.get('r'))?.label).toBe('five');
    await store.close();
    const reopened = await LowdbStore.open(project);
    expect((await reopened.get('r'))?.label).toBe('five');
    await reopened.close();
  });

  it('an insert of a uuid whose first insert fails is made, not answered with the record that failed', async () => {
    const store = await LowdbStore.open(project);
    const r = record('same', { n: 1 });
    failNextSyncs(1);
    const [first, second] = await Promise.allSettled([store.insert(r), store.insert(r)]);
    expect(first.status).toBe('rejected');
    expect(second).toEqual({ status: 'fulfilled', value: { record: r, created: true } });
    await store.close();
    const reopened = await LowdbStore.open(project);
    expect(await reopened.get('same')).toEqual(r);
    await reopened.close();
  });
});

describe('files', () => {
  const records: InterfaceRecord[] = [record('x', { a: { b: [1, 2] } }, { meta: { m: [[[1]]] } }), record('y', { n: 2 }, { label: 'l' })];

  it('segments and record files are compact; indented ones from an earlier gateway open and reindex the same', async () => {
    let store = await LowdbStore.open(project);
    for (const r of records) await store.insert(r);
    await store.close();
    const indexDir = path.join(project, STORE_DIR, INDEX_DIR);
    const segments = (await readdir(indexDir)).filter((name) => name.startsWith('seg-'));
    for (const name of segments) expect(await readFile(path.join(indexDir, name), 'utf8')).not.toContain('\n');
    for (const r of records) expect(await readFile(recordFile(r.uuid), 'utf8')).toBe(`${JSON.stringify(r)}\n`);

    // What earlier gateways wrote: every file indented.
    for (const file of [...segments.map((name) => path.join(indexDir, name)), ...records.map((r) => recordFile(r.uuid))]) {
      await writeFile(file, JSON.stringify(JSON.parse(await readFile(file, 'utf8')), null, 2));
    }
    store = await LowdbStore.open(project);
    for (const r of records) expect(await store.get(r.uuid)).toEqual(r);
    await store.close();
    expect(await LowdbStore.reindex(project)).toBe(2);
    store = await LowdbStore.open(project);
    for (const r of records) expect(await store.get(r.uuid)).toEqual(r);
    await store.close();
  });

  it('reindex leaves out a record file the store could not write back, and the index keeps answering', async () => {
    const store = await LowdbStore.open(project);
    for (const r of records) await store.insert(r);
    await store.close();
    // A file nested past what JSON.stringify can walk (JSON.parse reads it).
    const deep = JSON.stringify({ ...record('deep', {}), meta: {} }).replace('"meta":{}', `"meta":{"m":${'['.repeat(20_000)}${']'.repeat(20_000)}}`);
    await cp(path.dirname(recordFile('x')), path.dirname(recordFile('deep')), { recursive: true });
    await writeFile(recordFile('deep'), deep);
    expect(await LowdbStore.reindex(project)).toBe(2);
    const reopened = await LowdbStore.open(project);
    expect(await held(reopened)).toEqual(['x:null:false', 'y:l:false']);
    await reopened.close();
  });
});
