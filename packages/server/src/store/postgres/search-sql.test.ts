/**
 * The FindRequest → SQL compiler on its own (its semantics are held to the oracle against a real
 * PostgreSQL in test/store-conformance.test.ts): values only ever travel as parameters, one
 * statement counts and pages, and the common searches take the shapes their indexes serve.
 */
import { describe, expect, it } from 'vitest';
import type { FindRequest } from '../../contract/search.js';
import { planQuery } from '../query.js';
import { codeText } from './coding.js';
import { configSortKeys, indexablePaths, pathIndexStatement, searchStatement } from './search-sql.js';

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const compile = (request: FindRequest) => searchStatement('/project', planQuery(request));

describe('search compiled to SQL', () => {
  it('never splices a value into the SQL text', () => {
    const hostile = [`'; DROP TABLE portico_interfaces; --`, '$$ || $1 $$', '"\\\u0000', 'é😀\uffff'];
    for (const value of hostile) {
      const { text, values } = compile({
        label: value,
        module: value,
        config: { filters: [{ path: 'a', value }, { path: 'b', op: 'contains', value }, { path: 'c', op: 'gt', value }] },
        filters: [{ path: 'created_by', op: 'in', value: [value] }],
      });
      expect(text).not.toContain(value);
      expect(text).not.toContain('DROP');
      expect(values).toContain(codeText(value));
    }
  });

  it('sends a 10 000-element in list as one parameter', () => {
    const list = Array.from({ length: 10_000 }, (_, i) => `v${i}`);
    const { text, values } = compile({ config: { filters: [{ path: 'tag', op: 'in', value: list }] } });
    expect(values.find((value) => Array.isArray(value))).toHaveLength(10_000);
    expect(text.length).toBeLessThan(2000);
  });

  it('takes the total and the page in one statement, fetching one row more than the limit', () => {
    const first = compile({ limit: 25 });
    expect(first.text.match(/\bSELECT\b/g)).toHaveLength(3);
    expect(first.values).toContain(26);
    // Past the first page, the skipped records are walked in an index alone: a deferred join, one SELECT more.
    const { text, values } = compile({ module: 'm', limit: 25, offset: 50 });
    expect(text.match(/\bSELECT\b/g)).toHaveLength(4);
    expect(text).toMatch(/uuid IN \(\s*SELECT uuid FROM portico_interfaces/);
    expect(values).toContain(26);
    expect(values).toContain(50);
  });

  it('skips whole hours and minutes by their counts for an offset page in created_at order with no filter', () => {
    for (const request of [{ offset: 50 }, { offset: 50, include_archived: true }, { offset: 50, sort: [{ by: 'created_at', direction: 'asc' as const }] }]) {
      const { text, values } = compile({ ...request, limit: 25 });
      expect(text).toMatch(/dimension = 'created_hour'/);
      expect(text).toMatch(/dimension = 'created_minute'/);
      expect(text).toMatch(/OFFSET \(SELECT \$\d+::bigint - before FROM minute\)/);
      expect(values).toContain(26);
    }
    // Any other filter or order: the deferred join.
    for (const request of [{ module: 'm', offset: 50 }, { offset: 50, sort: [{ by: 'uuid', direction: 'asc' as const }] }, { cursor: null, offset: 0 }]) {
      expect(compile({ ...request, limit: 25 }).text).not.toMatch(/created_minute/);
    }
  });

  it('sums the trigger-kept counts for the common totals and counts the matches for the others', () => {
    const counted = [{}, { module: 'm' }, { kind: 'K' }, { created_by: 'ada' }, { label: 'x' }, { filters: [{ path: 'label', value: null }] }, { include_archived: true }];
    for (const request of counted) {
      const { text } = compile(request);
      expect(text).toMatch(/sum\(delta\), 0\) AS total, count\(\*\) AS deltas FROM portico_counts/);
      expect(text).not.toMatch(/count\(\*\) AS total/);
    }
    const uncounted = [{ module: 'm', kind: 'K' }, { config: { filters: [{ path: 'lr', value: 1 }] } }, { filters: [{ path: 'module', op: 'in' as const, value: ['m'] }] }];
    for (const request of uncounted) {
      // Counted only up to one past the total rule's bound (query.ts): never a million rows for one page.
      const { text, values } = compile(request);
      expect(text).toMatch(/count\(\*\) AS total, 0 AS deltas FROM \(SELECT 1 FROM portico_interfaces WHERE .* LIMIT \$\d+::int\) AS matches/);
      expect(values).toContain(1001);
      // Asked for, the count is exact: no LIMIT on it.
      const exact = compile({ ...request, exact_total: true }).text;
      expect(exact).toMatch(/count\(\*\) AS total, 0 AS deltas FROM \(SELECT 1 FROM portico_interfaces WHERE /);
      expect(exact).not.toMatch(/LIMIT \$\d+::int\) AS matches/);
    }
  });

  it('sorts and ranges a config path by the expressions its path index holds', () => {
    const path = ['config', 'opt', 'beta'];
    const index = pathIndexStatement(path);
    expect(index).toMatch(/^CREATE INDEX CONCURRENTLY IF NOT EXISTS portico_path_[0-9a-f]{16} ON portico_interfaces \(project, /);
    // The index spells the path in its text; a parameter would keep any statement from using it.
    const keys = configSortKeys(path);
    expect(index).toContain(`(project, ${keys.rank}, ${keys.number}, ${keys.prefix}) INCLUDE (archived)`);
    const sorted = compile({ sort: [{ by: 'config.opt.beta', direction: 'desc' }], config: { filters: [{ path: 'lr', op: 'gte', value: 0.5 }] } }).text;
    expect(sorted).toContain(`ORDER BY ${keys.rank} DESC, ${keys.number} DESC, ${keys.prefix} DESC, ${keys.text} DESC, uuid ASC`);
    const lr = configSortKeys(['config', 'lr']);
    expect(sorted).toMatch(new RegExp(`${escape(lr.rank)} = 4 AND ${escape(lr.number)} >= \\$\\d+::numeric`));
    expect(indexablePaths(planQuery({ sort: [{ by: 'config.opt.beta' }], config: { filters: [{ path: 'lr', op: 'gte', value: 0.5 }, { path: 'depth', value: 3 }] } }))).toEqual([path, ['config', 'lr']]);
  });

  it('orders newest first by the plain columns its index holds, and filters fields by plain equality', () => {
    const { text } = compile({ module: 'm', created_by: 'ada' });
    expect(text).toContain('ORDER BY created_at DESC, uuid ASC');
    expect(text).toMatch(/module = \$\d+/);
    expect(text).toMatch(/created_by = \$\d+/);
  });

  it('writes config equality as containment too, so the GIN index answers it', () => {
    const { text } = compile({ config: { filters: [{ path: 'opt.lr', value: 0.1 }] } });
    expect(text).toMatch(/config @> \$\d+::jsonb/);
    // An index segment may address an array: no containment, the exact test alone.
    expect(compile({ config: { filters: [{ path: 'opt[0]', value: 0.1 }] } }).text).not.toMatch(/config @>/);
  });

  it('starts a cursor page with a range on the first sort key', () => {
    const plan = planQuery({ limit: 1 });
    const cursor = plan.cursorAfter({
      uuid: 'u1',
      module: 'm',
      kind: 'Interface',
      class_name: 'K',
      config: {},
      predicate: {},
      version: [],
      label: null,
      meta: {},
      created_by: 'ada',
      created_at: '2026-01-01T00:00:00.000Z',
      archived: false,
    });
    const { text } = compile({ limit: 1, cursor });
    expect(text).toMatch(/created_at <= \$\d+ AND/);
  });
});
