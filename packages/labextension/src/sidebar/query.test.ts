import { describe, expect, it } from 'vitest';
import { EMPTY_QUERY, parseFilterValue, SEARCH_PAGE_SIZE, toFindRequest } from './query.js';

describe('parseFilterValue', () => {
  it('eq and friends: JSON when it parses, else the text', () => {
    expect(parseFilterValue('eq', '3')).toBe(3);
    expect(parseFilterValue('eq', 'true')).toBe(true);
    expect(parseFilterValue('eq', 'null')).toBe(null);
    expect(parseFilterValue('eq', '"3"')).toBe('3');
    expect(parseFilterValue('eq', '{"a": 1}')).toEqual({ a: 1 });
    expect(parseFilterValue('contains', 'adam')).toBe('adam');
  });

  it('comparisons: numbers, else strings', () => {
    expect(parseFilterValue('gte', ' 2.5 ')).toBe(2.5);
    expect(parseFilterValue('lt', '2026-01-01')).toBe('2026-01-01');
  });

  it('in / nin need a JSON array', () => {
    expect(parseFilterValue('in', '[1, "a"]')).toEqual([1, 'a']);
    expect(() => parseFilterValue('nin', '1, 2')).toThrow(/JSON array/);
  });

  it('exists: empty means true', () => {
    expect(parseFilterValue('exists', '')).toBe(true);
    expect(parseFilterValue('exists', 'false')).toBe(false);
    expect(() => parseFilterValue('exists', 'maybe')).toThrow(/true or false/);
  });
});

describe('toFindRequest', () => {
  it('an empty form asks for the first page of non-archived interfaces', () => {
    expect(toFindRequest({ ...EMPTY_QUERY, config: [] })).toEqual({ filters: [], include_archived: false, limit: SEARCH_PAGE_SIZE });
  });

  it('module, label and creator are substring filters; config rows are resolved-config filters', () => {
    const request = toFindRequest(
      {
        module: ' count ',
        label: 'best',
        createdBy: 'ada',
        includeArchived: true,
        config: [
          { path: 'step', op: 'gte', value: '2' },
          { path: '  ', op: 'eq', value: 'ignored: no path' },
        ],
      },
      'cursor-1',
    );
    expect(request).toEqual({
      filters: [
        { path: 'module', op: 'contains', value: 'count' },
        { path: 'label', op: 'contains', value: 'best' },
        { path: 'created_by', op: 'contains', value: 'ada' },
      ],
      config: { layer: 'resolved', filters: [{ path: 'step', op: 'gte', value: 2 }] },
      include_archived: true,
      limit: SEARCH_PAGE_SIZE,
      cursor: 'cursor-1',
    });
  });

  it('a bad filter value names its path', () => {
    expect(() => toFindRequest({ ...EMPTY_QUERY, config: [{ path: 'tags', op: 'in', value: 'a' }] })).toThrow(/^tags: /);
  });
});
