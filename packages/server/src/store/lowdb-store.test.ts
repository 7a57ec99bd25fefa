/**
 * The embedded store's search indexes across its lifecycle: live, after journal replay (a copy of
 * the index taken while the store is open, which is what a crash leaves), after a clean reopen
 * from the segments, and after `portico reindex`, every search answers as the linear pass over
 * the records the store should hold.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FindRequest } from '../contract/search.js';
import { STORE_DIR } from './files.js';
import { LowdbStore } from './lowdb-store.js';
import { compileQuery } from './query.js';
import { queryArb, recordsArb } from './query.arbitraries.js';
import type { InterfaceRecord } from './store.js';

/** Each run writes a project to disk with fdatasync'd journal entries: few runs, many steps. */
const RUNS = 8;

type Change =
  | { kind: 'insert'; i: number }
  | { kind: 'delete'; i: number }
  | { kind: 'label'; i: number; label: string | null }
  | { kind: 'archive'; i: number; archived: boolean };

const change: fc.Arbitrary<Change> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('insert' as const), i: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('label' as const), i: fc.nat(), label: fc.constantFrom(null, 'x', 'y') }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('archive' as const), i: fc.nat(), archived: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), i: fc.nat() }) },
);

/** Pool records with uuids that make safe directory names. */
const scenario = recordsArb('', 20)
  .filter((pool) => pool.length > 0)
  .map((pool) => pool.map((record, i) => ({ ...record, uuid: `r${String(i).padStart(2, '0')}` })))
  .chain((pool) =>
    fc.tuple(
      fc.constant(pool),
      fc.array(change, { minLength: 1, maxLength: 30, size: 'max' }),
      fc.array(fc.tuple(queryArb(pool), fc.integer({ min: 1, max: 8 })), { minLength: 1, maxLength: 6 }),
    ),
  );

/** The uuids, total and cursor of one page, which must not depend on how the store was opened. */
async function answer(store: LowdbStore, request: FindRequest): Promise<unknown> {
  const result = await store.search(request);
  return { uuids: result.items.map((item) => `${item.uuid}:${item.label}:${item.archived}`), total: result.total, next_cursor: result.next_cursor };
}

function linear(held: Map<string, InterfaceRecord>, request: FindRequest): unknown {
  const result = compileQuery(request).run([...held.values()]);
  return { uuids: result.items.map((item) => `${item.uuid}:${item.label}:${item.archived}`), total: result.total, next_cursor: result.next_cursor };
}

describe('embedded store search across reopen, journal replay and reindex', () => {
  it('answers like the linear pass over what it holds, however it was opened', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ([pool, changes, queries]) => {
        const root = await mkdtemp(path.join(tmpdir(), 'portico-store-'));
        try {
          const project = path.join(root, 'project');
          const crashed = path.join(root, 'crashed');
          const held = new Map<string, InterfaceRecord>();
          let store = await LowdbStore.open(project);
          for (const c of changes) {
            if (c.kind === 'insert') {
              const record = pool[c.i % pool.length]!;
              await store.insert(record);
              if (!held.has(record.uuid)) held.set(record.uuid, record);
              continue;
            }
            const current = [...held.values()][c.i % Math.max(1, held.size)];
            if (!current) continue;
            if (c.kind === 'delete') {
              await store.delete(current.uuid);
              held.delete(current.uuid);
            } else {
              const patch = c.kind === 'label' ? { label: c.label } : { archived: c.archived };
              await store.update(current.uuid, patch);
              held.set(current.uuid, { ...current, ...patch });
            }
          }
          // Random queries often match nothing; everything, newest first, always shows what is held.
          const requests: FindRequest[] = [{ include_archived: true, limit: 1000 }, ...queries.map(([query, limit]) => ({ ...query, limit }))];
          const expected = requests.map((request) => linear(held, request));
          const check = async (opened: LowdbStore) => {
            for (const [i, request] of requests.entries()) expect(await answer(opened, request)).toEqual(expected[i]);
          };
          await check(store);
          // Every mutation is acknowledged, so it is in the journal: this copy is what a crash leaves.
          await cp(path.join(project, STORE_DIR), path.join(crashed, STORE_DIR), { recursive: true });
          await store.close();
          const replayed = await LowdbStore.open(crashed);
          await check(replayed);
          await replayed.close();
          store = await LowdbStore.open(project);
          await check(store);
          await store.close();
          await LowdbStore.reindex(project);
          store = await LowdbStore.open(project);
          await check(store);
          await store.close();
        } finally {
          await rm(root, { recursive: true, force: true });
        }
      }),
      { numRuns: RUNS },
    );
  });
});
