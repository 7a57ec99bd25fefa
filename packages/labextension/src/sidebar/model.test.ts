import { describe, expect, it } from 'vitest';
import type { InterfaceInfo } from '@portico/protocol';
import { GatewayClient } from '../gateway/client.js';
import { SettingsStore } from '../settings.js';
import { SidebarModel } from './model.js';

const info = (uuid: string, extra: Partial<InterfaceInfo> = {}): InterfaceInfo => ({
  uuid,
  module: 'counter',
  kind: 'Interface',
  class_name: 'Counter',
  config: { step: 1 },
  predicate: {},
  version: [],
  label: null,
  meta: {},
  created_by: 'ada',
  created_at: '2026-01-01T00:00:00Z',
  archived: false,
  cached: false,
  cli: `portico get ${uuid}`,
  ...extra,
});

/** A gateway in memory behind a fake fetch: two interfaces, one run. */
function fakeGateway() {
  const records = new Map([
    ['u1', info('u1')],
    ['u2', info('u2', { module: 'trainer', class_name: 'Trainer' })],
  ]);
  const calls: string[] = [];
  const fetchFn = async (url: string, init?: RequestInit) => {
    const { pathname, searchParams } = new URL(url);
    calls.push(`${init?.method} ${pathname}`);
    const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status });
    let match: RegExpMatchArray | null;
    if (pathname === '/v1/interfaces/search') return json({ items: [...records.values()].filter((r) => !r.archived), total: records.size, next_cursor: null });
    if (pathname === '/v1/project') return json({ project: '/p', modules: [{ module: 'counter', widget: true }, { module: 'trainer', widget: false }] });
    if ((match = pathname.match(/^\/v1\/interfaces\/([^/]+)$/))) {
      const record = records.get(match[1]!);
      return record ? json(record) : json({ detail: 'gone', code: 'not_found', message: 'gone' }, 404);
    }
    if ((match = pathname.match(/^\/v1\/interfaces\/([^/]+)\/label$/))) {
      const record = { ...records.get(match[1]!)!, label: JSON.parse(String(init?.body)).label };
      records.set(record.uuid, record);
      return json(record);
    }
    if ((match = pathname.match(/^\/v1\/interfaces\/([^/]+)\/archive$/))) {
      const record = { ...records.get(match[1]!)!, archived: searchParams.get('restore') !== 'true' };
      records.set(record.uuid, record);
      return json(record);
    }
    if (pathname.endsWith('/executions')) return json([{ uuid: 'e1', status: 'running', created_at: '2026-01-01T00:00:00Z' }]);
    return json({ detail: pathname, code: 'not_found', message: pathname }, 404);
  };
  const model = new SidebarModel(new SettingsStore(), (settings) => new GatewayClient({ url: settings.gatewayUrl }, fetchFn));
  return { model, calls, records };
}

describe('SidebarModel', () => {
  it('search: results, total, and the project modules for suggestions', async () => {
    const { model } = fakeGateway();
    await model.search();
    await model.loadModules();
    expect(model.results.map((r) => r.uuid)).toEqual(['u1', 'u2']);
    expect(model.total).toBe(2);
    expect(model.searched).toBe(true);
    expect(model.hasWidget('counter')).toBe(true);
    expect(model.hasWidget('trainer')).toBe(false);
    expect(model.hasWidget('unknown')).toBeUndefined();
  });

  it('open: fresh InterfaceInfo and its runs; close clears them', async () => {
    const { model } = fakeGateway();
    await model.search();
    await model.open('u1');
    expect(model.openUuid).toBe('u1');
    expect(model.selected?.uuid).toBe('u1');
    expect(model.executions.map((e) => e.uuid)).toEqual(['e1']);
    model.close();
    expect([model.openUuid, model.selected, model.executions]).toEqual([null, null, []]);
  });

  it('rename: the answer replaces the open record and its row; blank clears the label', async () => {
    const { model } = fakeGateway();
    await model.search();
    await model.open('u1');
    await model.rename('  best run ');
    expect(model.selected?.label).toBe('best run');
    expect(model.results.find((r) => r.uuid === 'u1')?.label).toBe('best run');
    await model.rename('   ');
    expect(model.selected?.label).toBeNull();
  });

  it('archive and restore', async () => {
    const { model, calls } = fakeGateway();
    await model.search();
    await model.open('u2');
    await model.setArchived(true);
    expect(model.selected?.archived).toBe(true);
    await model.setArchived(false);
    expect(model.selected?.archived).toBe(false);
    expect(calls.filter((c) => c.includes('archive'))).toEqual(['POST /v1/interfaces/u2/archive', 'POST /v1/interfaces/u2/archive']);
  });

  it('a failed open says why', async () => {
    const { model } = fakeGateway();
    await model.open('nope');
    expect(model.openUuid).toBe('nope');
    expect(model.detailError).toBe('gone');
  });

  it('a bad config filter is a search error, not an exception', async () => {
    const { model, calls } = fakeGateway();
    await model.search({ module: '', label: '', createdBy: '', includeArchived: false, config: [{ path: 'tags', op: 'in', value: 'x' }] });
    expect(model.searchError).toMatch(/^tags: .*JSON array/);
    expect(calls.filter((c) => c.includes('search'))).toEqual([]);
  });
});

describe('progressOf', () => {
  it('reads {progress: 0..1, message?} and nothing else', async () => {
    const { progressOf } = await import('./followed-run.js');
    expect(progressOf({ progress: 0.25, message: 'epoch 1/4' })).toEqual({ value: 0.25, message: 'epoch 1/4' });
    expect(progressOf({ progress: 1 })).toEqual({ value: 1, message: null });
    for (const other of [null, 0.5, [0.5], { progress: '0.5' }, { progress: 1.5 }, { progress: -0.1 }, { progress: Number.NaN }]) expect(progressOf(other)).toBeNull();
  });
});
