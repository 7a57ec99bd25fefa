/**
 * A background checkpoint of the embedded store that fails is logged through the gateway's log
 * (a JSON line at error level when the logger writes JSON), not as plain text on stderr.
 */
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { setBackgroundLog, type LineLevel } from '../ops/logger.js';
import { STORE_DIR } from './files.js';
import { INDEX_DIR, LowdbStore } from './lowdb-store.js';
import type { InterfaceRecord } from './store.js';

const dirs: string[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

const record: InterfaceRecord = {
  uuid: 'r1',
  module: 'counter',
  kind: 'Interface',
  class_name: 'Counter',
  config: { start: 0 },
  predicate: {},
  version: [],
  label: null,
  meta: {},
  created_by: 'ada',
  created_at: '2026-01-01T00:00:00.000Z',
  archived: false,
};

describe('embedded store: background checkpoint', () => {
  it('a checkpoint that fails is an error line of the gateway log, naming the index', async () => {
    const logged: Array<[string, LineLevel | undefined]> = [];
    setBackgroundLog((line, level) => logged.push([line, level]));
    const project = await mkdtemp(path.join(tmpdir(), 'portico-checkpoint-'));
    dirs.push(project);
    // Only the clocks the checkpoint timer reads: file I/O and its promises run as ever.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    const store = await LowdbStore.open(project);
    try {
      await store.insert(record);
      // The checkpoint opens the next journal first: a folder in its place makes that fail.
      const index = path.join(project, STORE_DIR, INDEX_DIR);
      const journals = (await readdir(index)).map((name) => /^journal-(\d+)\.jsonl$/.exec(name)?.[1]).filter(Boolean).map(Number);
      await mkdir(path.join(index, `journal-${Math.max(...journals) + 1}.jsonl`));
      await vi.advanceTimersByTimeAsync(60_000);
      await vi.waitFor(() => expect(logged.length).toBeGreaterThan(0), { timeout: 10_000 });
      const [line, level] = logged[0]!;
      expect(level).toBe('error');
      expect(line).toMatch(/^store checkpoint failed \(.*index\): Error: EISDIR/);
    } finally {
      vi.useRealTimers();
      await store.close().catch(() => undefined);
    }
  });
});
