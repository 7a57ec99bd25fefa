/**
 * The embedded index made by a gateway before class_name (docs/operating/store.md): records whose `kind`
 * holds the class name read as class_name = that name and kind = 'Interface', from the segments and
 * from the record files `portico reindex` rebuilds from; the open writes the upgraded segments back;
 * and a gateway killed (SIGKILL) while it writes them leaves an index that the next open reads the
 * same and finishes.
 */
import { spawn } from 'node:child_process';
import { watch } from 'node:fs';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LowdbStore } from '../packages/server/src/store/lowdb-store.js';
import { record } from '../packages/server/src/store/query.arbitraries.js';
import { ROOT } from './helpers.js';

const STORE_JS = pathToFileURL(path.join(ROOT, 'packages/server/dist/store/lowdb-store.js')).href;
const RECORDS = 2000;
const CLASSES = ['Counter', 'Trainer', 'Streamer'];

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'portico-migration-'));
  dirs.push(dir);
  return dir;
}

/** The class record i was made of. */
const classOf = (i: number) => CLASSES[i % CLASSES.length]!;

/** A record as a gateway before class_name wrote it: the class name in kind, no class_name. */
function oldFormat(json: Record<string, unknown>): Record<string, unknown> {
  const { class_name: className, ...rest } = json;
  return { ...rest, kind: className };
}

const segmentFiles = async (project: string) => (await readdir(path.join(project, '.portico/index'))).filter((name) => /^seg-\d\d\.json$/.test(name)).sort();

/** Per segment file on disk: how many records are in the old format and how many in the new. */
async function formats(project: string): Promise<{ old: number; current: number }> {
  const counts = { old: 0, current: 0 };
  for (const name of await segmentFiles(project)) {
    const { interfaces } = JSON.parse(await readFile(path.join(project, '.portico/index', name), 'utf8')) as { interfaces: Record<string, Record<string, unknown>> };
    const records = Object.values(interfaces);
    if (records.length === 0) continue;
    if (records.every((r) => typeof r.class_name === 'string' && r.kind === 'Interface')) counts.current++;
    else if (records.every((r) => r.class_name === undefined && r.kind !== 'Interface')) counts.old++;
    else throw new Error(`segment ${name} mixes formats`);
  }
  return counts;
}

/**
 * An index of RECORDS records in the old format: made by the store (so every record lies in its
 * segment), closed, then every segment and record file rewritten as the older gateway wrote them.
 */
async function oldIndex(): Promise<string> {
  const project = await tempDir();
  const store = await LowdbStore.open(project);
  await Promise.all(
    Array.from({ length: RECORDS }, (_, i) =>
      store.insert(record(`rec-${i}`, { i, pad: 'x'.repeat(200) }, { module: classOf(i).toLowerCase(), class_name: classOf(i), created_at: new Date(Date.UTC(2025, 0, 1, 0, 0, i)).toISOString() })),
    ),
  );
  await store.close();
  const index = path.join(project, '.portico/index');
  for (const name of await segmentFiles(project)) {
    const file = path.join(index, name);
    const data = JSON.parse(await readFile(file, 'utf8')) as { seq: number; interfaces: Record<string, Record<string, unknown>> };
    for (const [uuid, json] of Object.entries(data.interfaces)) data.interfaces[uuid] = oldFormat(json);
    await writeFile(file, JSON.stringify(data));
  }
  for (const uuid of await readdir(path.join(project, '.portico/interfaces'))) {
    const file = path.join(project, '.portico/interfaces', uuid, 'interface.json');
    await writeFile(file, `${JSON.stringify(oldFormat(JSON.parse(await readFile(file, 'utf8'))))}\n`);
  }
  expect(await formats(project)).toEqual({ old: 64, current: 0 });
  return project;
}

/** Every record reads as the new format says, and searches by class_name and kind answer so. */
async function expectMigrated(project: string): Promise<void> {
  const store = await LowdbStore.open(project);
  try {
    expect(store.size).toBe(RECORDS);
    for (const i of [0, 1, 2, 997, RECORDS - 1]) {
      expect(await store.get(`rec-${i}`)).toMatchObject({ uuid: `rec-${i}`, kind: 'Interface', class_name: classOf(i), config: { i } });
    }
    const trainers = Array.from({ length: RECORDS }, (_, i) => i).filter((i) => classOf(i) === 'Trainer').length;
    expect(await store.search({ class_name: 'Trainer', limit: 1 })).toMatchObject({ total: trainers, total_exact: true });
    expect((await store.search({ kind: 'Interface', limit: 1 })).total).toBe(RECORDS);
    expect((await store.search({ kind: 'Trainer', limit: 1 })).total).toBe(0);
    expect((await store.search({ filters: [{ path: 'class_name', op: 'in', value: ['Counter', 'Streamer'] }], exact_total: true, limit: 1 })).total).toBe(RECORDS - trainers);
  } finally {
    await store.close();
  }
  expect(await formats(project)).toEqual({ old: 0, current: 64 });
}

describe('an index made before class_name', () => {
  let original: string;
  beforeAll(async () => {
    original = await oldIndex();
  }, 120_000);

  it('opens with every record upgraded: kind "Interface", the class name in class_name; the segments are written back', async () => {
    const project = await tempDir();
    await cp(original, project, { recursive: true });
    await expectMigrated(project);
    // Opening again changes nothing more.
    await expectMigrated(project);
  });

  it('portico reindex from record files of the old format gives the same records', async () => {
    const project = await tempDir();
    await cp(original, project, { recursive: true });
    await rm(path.join(project, '.portico/index'), { recursive: true });
    expect(await LowdbStore.reindex(project)).toBe(RECORDS);
    await expectMigrated(project);
  });

  it('SIGKILL while the migration writes the segments back: the next open reads every record upgraded and finishes', async () => {
    // The kill lands after the first segment is written back; tried again in the rare case the
    // child wrote every segment before the signal arrived (then nothing was interrupted).
    let interrupted: { old: number; current: number } | undefined;
    let project = '';
    for (let attempt = 0; attempt < 5 && !interrupted; attempt++) {
      project = await tempDir();
      await cp(original, project, { recursive: true });
      const child = spawn(process.execPath, ['--input-type=module', '-e', `const { LowdbStore } = await import(${JSON.stringify(STORE_JS)}); await LowdbStore.open(${JSON.stringify(project)}); process.stdout.write('opened');`], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const watcher = watch(path.join(project, '.portico/index'), (_event, name) => {
        if (name && /^seg-\d\d\.json$/.test(name)) child.kill('SIGKILL');
      });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])));
      watcher.close();
      expect({ code, signal, out }).toEqual({ code: null, signal: 'SIGKILL', out: '' });
      const found = await formats(project);
      if (found.old > 0 && found.current > 0) interrupted = found;
    }
    expect(interrupted, 'some segments written back, some not').toBeDefined();
    await expectMigrated(project);
  }, 120_000);
});
