/**
 * The sidebar's search form as data, and its translation into the gateway's FindRequest.
 * Module, label and creator match as case-sensitive substrings (`contains` on record fields);
 * each config row is one `ConfigFilter` on the resolved config.
 */
import type { FilterOp, FindRequest } from '@portico/protocol';

export interface ConfigFilterRow {
  /** Path in the resolved config, e.g. `optimizer.lr` or `stages[0].epochs`. */
  path: string;
  op: FilterOp;
  /** What the user typed; see `parseFilterValue`. */
  value: string;
}

export interface SearchQuery {
  module: string;
  label: string;
  createdBy: string;
  includeArchived: boolean;
  config: ConfigFilterRow[];
}

export const EMPTY_QUERY: Readonly<SearchQuery> = Object.freeze({ module: '', label: '', createdBy: '', includeArchived: false, config: [] });

/** Records per page in the sidebar (the gateway allows up to 1000). */
export const SEARCH_PAGE_SIZE = 50;

export class QueryError extends Error {
  override readonly name = 'QueryError';
}

/**
 * The JSON value of a filter typed as text:
 * - `exists`: empty (true), `true` or `false`;
 * - `in` / `nin`: a JSON array, e.g. `[1, 2]` or `["a", "b"]`;
 * - `lt` / `lte` / `gt` / `gte`: a number, else the text as a string;
 * - otherwise JSON when the text parses (`3`, `true`, `null`, `"3"`, `{"a": 1}`), else the text.
 */
export function parseFilterValue(op: FilterOp, text: string): unknown {
  const trimmed = text.trim();
  const json = (): { ok: true; value: unknown } | { ok: false } => {
    try {
      return { ok: true, value: JSON.parse(trimmed) };
    } catch {
      return { ok: false };
    }
  };
  switch (op) {
    case 'exists':
      if (trimmed === '' || trimmed === 'true') return true;
      if (trimmed === 'false') return false;
      throw new QueryError('"exists" takes true or false');
    case 'in':
    case 'nin': {
      const parsed = json();
      if (!parsed.ok || !Array.isArray(parsed.value)) throw new QueryError(`"${op}" takes a JSON array, e.g. [1, 2] or ["a", "b"]`);
      return parsed.value;
    }
    case 'lt':
    case 'lte':
    case 'gt':
    case 'gte':
      return trimmed !== '' && Number.isFinite(Number(trimmed)) ? Number(trimmed) : text;
    default: {
      const parsed = json();
      return parsed.ok ? parsed.value : text;
    }
  }
}

/** The FindRequest for `query`; `cursor` continues a previous page. Throws QueryError on a bad filter. */
export function toFindRequest(query: SearchQuery, cursor?: string | null): FindRequest {
  const filters = [];
  if (query.module.trim()) filters.push({ path: 'module', op: 'contains' as const, value: query.module.trim() });
  if (query.label.trim()) filters.push({ path: 'label', op: 'contains' as const, value: query.label.trim() });
  if (query.createdBy.trim()) filters.push({ path: 'created_by', op: 'contains' as const, value: query.createdBy.trim() });
  const config = query.config
    .filter((row) => row.path.trim() !== '')
    .map((row) => {
      try {
        return { path: row.path.trim(), op: row.op, value: parseFilterValue(row.op, row.value) };
      } catch (err) {
        throw new QueryError(`${row.path.trim()}: ${(err as Error).message}`);
      }
    });
  return {
    filters,
    ...(config.length ? { config: { layer: 'resolved' as const, filters: config } } : {}),
    include_archived: query.includeArchived,
    limit: SEARCH_PAGE_SIZE,
    ...(cursor ? { cursor } : {}),
  };
}
