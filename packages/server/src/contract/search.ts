/**
 * The config-search contract: `FindRequest` → `SearchResponse` (field names follow the
 * reference server's search). This file owns the request's syntax — path grammar, which ops
 * take which values, sort keys, paging fields — so that every malformed request fails here with
 * a location. What a valid request means is owned by `store/query.ts`.
 */
import { InterfaceInfo } from './common.js';
import { z } from './zod.js';

/** Filter operators; their semantics are documented in `store/query.ts`. */
export const FILTER_OPS = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in', 'nin', 'contains', 'exists'] as const;
export type FilterOp = (typeof FILTER_OPS)[number];

/** Record fields a record-level path may start with besides `config`. */
export const RECORD_FIELDS = ['uuid', 'module', 'kind', 'class_name', 'label', 'created_by', 'created_at', 'archived'] as const;

// Dotted segments with optional `[n]` indexes, e.g. `stages[0].epochs`; a path may open with `[n]`.
const PATH = /^(?:[A-Za-z0-9_-]+|\[[0-9]+\])(?:\.[A-Za-z0-9_-]+|\[[0-9]+\])*$/;
const TOKEN = /[A-Za-z0-9_-]+|\[[0-9]+\]/g;
const INVALID_PATH = 'Invalid path: expected dotted segments of [A-Za-z0-9_-], with optional [n] indexes (e.g. "stages[0].epochs")';
/** Record sort keys clients of the reference server send, and the record path each one means here. */
const SORT_ALIASES = new Map([['created_at_ns', 'created_at']]);

/**
 * What parseRecordPath accepts, as a pattern for the document: `config` with a path below it, or
 * a record field (patterns.test.ts holds the two to the same answers). With the sort aliases, for
 * SortSpec.by.
 */
export const RECORD_PATH = new RegExp(`^(?:config(?:\\.[A-Za-z0-9_-]+|\\[[0-9]+\\])*|${RECORD_FIELDS.join('|')})$`);
export const RECORD_SORT_PATH = new RegExp(`^(?:config(?:\\.[A-Za-z0-9_-]+|\\[[0-9]+\\])*|${[...RECORD_FIELDS, ...SORT_ALIASES.keys()].join('|')})$`);

/**
 * Splits a path into its segments (`a[0].b` → `['a', '0', 'b']`), or returns null when the path
 * is not valid syntax.
 */
export function parsePath(path: string): string[] | null {
  if (!PATH.test(path)) return null;
  return path.match(TOKEN)!.map((token) => (token.startsWith('[') ? token.slice(1, -1) : token));
}

/**
 * Splits a record-level path (`config.<path>` or a top-level field); returns an error message
 * instead when the path is not one.
 */
export function parseRecordPath(path: string): string[] | string {
  const segments = parsePath(path);
  if (!segments) return INVALID_PATH;
  const [root] = segments;
  if (root === 'config') return segments;
  if (!(RECORD_FIELDS as readonly string[]).includes(root!)) {
    return `Unknown record field "${root}": use config.<path> or one of ${RECORD_FIELDS.join(', ')}`;
  }
  if (segments.length > 1) return `"${root}" is a scalar field and has no sub-paths`;
  return segments;
}

const ConfigPath = z
  .string()
  .regex(PATH, INVALID_PATH)
  .describe('Path relative to the resolved config: dotted segments, `[n]` indexes an array.');

const RecordPath = z
  .string()
  .regex(RECORD_PATH, { error: (issue) => recordPathProblem(issue.input) })
  .describe(`Path relative to the record: config.<path>, or one of ${RECORD_FIELDS.join(', ')}.`);

/** Why `path` is not a record path. */
function recordPathProblem(path: unknown): string {
  const parsed = typeof path === 'string' ? parseRecordPath(path) : INVALID_PATH;
  return typeof parsed === 'string' ? parsed : INVALID_PATH;
}

const Op = z.enum(FILTER_OPS).default('eq').describe('Operator (default eq); see the search semantics.');

const FilterValue = z
  .unknown()
  .optional()
  .describe('JSON value. lt/lte/gt/gte: number or string; in/nin: array; exists: boolean (default true); otherwise any (default null).');

/** The op-dependent constraints on `value`, shared by both filter lists. */
function checkValue(filter: { op: FilterOp; value?: unknown }, ctx: z.RefinementCtx): void {
  const { op, value } = filter;
  const fail = (message: string) => ctx.addIssue({ code: 'custom', path: ['value'], message, input: value });
  switch (op) {
    case 'lt':
    case 'lte':
    case 'gt':
    case 'gte':
      if (typeof value !== 'string' && !(typeof value === 'number' && Number.isFinite(value))) fail(`"${op}" needs a number or a string`);
      break;
    case 'in':
    case 'nin':
      if (!Array.isArray(value)) fail(`"${op}" needs an array`);
      break;
    case 'exists':
      if (value !== undefined && typeof value !== 'boolean') fail('"exists" needs a boolean');
      break;
  }
}

/**
 * checkValue, for the document. (Passed `as never` here and below: zod-to-openapi types its metadata
 * as an OpenAPI 3.0 schema, which knows no `const` nor type arrays.)
 */
const VALUE_BY_OP = {
  anyOf: [
    { properties: { op: { enum: ['eq', 'ne', 'contains'] } } },
    { required: ['op', 'value'], properties: { op: { enum: ['lt', 'lte', 'gt', 'gte'] }, value: { type: ['number', 'string'] } } },
    { required: ['op', 'value'], properties: { op: { enum: ['in', 'nin'] }, value: { type: 'array' } } },
    { required: ['op'], properties: { op: { const: 'exists' }, value: { type: 'boolean' } } },
  ],
};

export const ConfigFilter = z
  .object({ path: ConfigPath, op: Op, value: FilterValue })
  .superRefine(checkValue)
  .openapi('ConfigFilter', VALUE_BY_OP as never);

export const Filter = z
  .object({ path: RecordPath, op: Op, value: FilterValue })
  .superRefine(checkValue)
  .openapi('Filter', VALUE_BY_OP as never);

const Layer = z.enum(['resolved']).describe('The config layer; only the resolved config is searchable.');

export const ConfigMatch = z
  .object({ layer: Layer.default('resolved'), filters: z.array(ConfigFilter).default([]) })
  .openapi('ConfigMatch');

/** The request with record sort keys given by their alias spelled as the record path (the stores know only those). */
export function withCanonicalSort(request: FindRequest): FindRequest {
  const sort = request.sort?.map((spec) => (spec.config_layer || !SORT_ALIASES.has(spec.by) ? spec : { ...spec, by: SORT_ALIASES.get(spec.by)! }));
  return sort ? { ...request, sort } : request;
}

export const SortSpec = z
  .object({
    by: z
      .string()
      .regex(PATH, INVALID_PATH)
      .describe('A record path (as in `filters`; created_at_ns means created_at), or a config path when config_layer is "resolved".'),
    config_layer: Layer.nullable().optional(),
    direction: z
      .string()
      .regex(/^(?:[aA][sS][cC]|[dD][eE][sS][cC])$/, '"asc" or "desc"')
      .transform((value) => value.toLowerCase() as 'asc' | 'desc')
      .default('desc')
      .describe('"asc" or "desc", in any case.'),
  })
  .superRefine((spec, ctx) => {
    if (spec.config_layer || parsePath(spec.by) === null) return; // a config path, or reported by the regex
    const parsed = parseRecordPath(SORT_ALIASES.get(spec.by) ?? spec.by);
    if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', path: ['by'], message: parsed, input: spec.by });
  })
  // The refinement above, for the document: without config_layer, `by` is a record path.
  .openapi('SortSpec', { anyOf: [{ required: ['config_layer'], properties: { config_layer: { const: 'resolved' } } }, { properties: { by: { pattern: RECORD_SORT_PATH.source } } }] } as never);

export const FindRequest = z
  .object({
    module: z.string().nullable().optional().describe('Exact module; null means no filter.'),
    kind: z
      .string()
      .nullable()
      .optional()
      .describe('Exact record kind, as the reference names it: every interface record is "Interface" (the index holds no run records, so "Execution" finds none); null means no filter.'),
    class_name: z.string().nullable().optional().describe('Exact interface class name; null means no filter.'),
    created_by: z.string().nullable().optional().describe('Exact creator; null means no filter.'),
    label: z.string().nullable().optional().describe('Exact label; null means no filter (filter `label eq null` for unlabelled records).'),
    // A union rather than .nullable(): zod-to-openapi would otherwise mark the ConfigMatch component itself nullable.
    config: z.union([ConfigMatch, z.null()]).optional(),
    filters: z.array(Filter).default([]).describe('Record-level filters; all filters are ANDed.'),
    sort: z
      .array(SortSpec)
      .default([])
      .describe('Sort keys in order (default created_at desc); uuid asc always breaks ties.'),
    include_archived: z.boolean().optional().describe('Include archived records (default false).'),
    include_hidden: z.boolean().optional().describe('Alias of include_archived (reference compatibility).'),
    exact_total: z
      .boolean()
      .optional()
      .describe('Count every match for `total` even when that reads every record (default false: beyond 1,000 matches, see total_exact).'),
    include_status: z.boolean().optional().describe('Add status, cached, run_count and execution_uuid to each item (reads each one\'s runs).'),
    limit: z.number().int().min(1).max(1000).default(100).describe('Page size (1..1000).'),
    offset: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).default(0).describe('Matches to skip; must be 0 with a cursor.'),
    cursor: z.string().nullable().optional().describe("A previous response's next_cursor; continues strictly after its last item."),
  })
  .superRefine((request, ctx) => {
    if (request.cursor != null && request.offset !== 0) {
      ctx.addIssue({ code: 'custom', path: ['offset'], message: 'offset must be 0 when a cursor is given', input: request.offset });
    }
    const { include_archived: archived, include_hidden: hidden } = request;
    if (archived !== undefined && hidden !== undefined && archived !== hidden) {
      ctx.addIssue({ code: 'custom', path: ['include_hidden'], message: 'include_hidden is an alias of include_archived and contradicts it', input: hidden });
    }
  })
  // The refinement above, for the document.
  .openapi('FindRequest', {
    allOf: [
      { not: { required: ['cursor', 'offset'], properties: { cursor: { type: 'string' }, offset: { not: { const: 0 } } } } },
      {
        not: {
          required: ['include_archived', 'include_hidden'],
          anyOf: [
            { properties: { include_archived: { const: true }, include_hidden: { const: false } } },
            { properties: { include_archived: { const: false }, include_hidden: { const: true } } },
          ],
        },
      },
    ],
  } as never);

export const SearchItem = InterfaceInfo.extend({
  id: z.string().describe('The uuid again, under the name reference clients read.'),
  created_at_ns: z.number().describe('created_at as epoch nanoseconds (an integer beyond 2^53: exact in Python, rounded in JavaScript).'),
  cached: z
    .boolean()
    .optional()
    .describe('With include_status: as InterfaceInfo has it (status is cached). Left out otherwise: it reads each item\'s runs, which a plain search does not.'),
  status: z.enum(['draft', 'running', 'cached', 'failed']).optional().describe('With include_status: as POST /v1/interfaces/lifecycle reports it.'),
  run_count: z.number().int().optional().describe('With include_status: how many executions ran it.'),
  execution_uuid: z.string().nullable().optional().describe('With include_status: its newest execution.'),
}).openapi('SearchItem');

const page = <T extends z.ZodType>(item: T) =>
  z.object({
    items: z.array(item),
    total: z
      .number()
      .int()
      .describe('Every record matching the filters, regardless of limit, offset and cursor, when total_exact; else a lower bound.'),
    total_exact: z
      .boolean()
      .describe(
        'Whether total is exact. It is, up to 1,000 matches (or offset + limit), for no filter or one on module, kind, class_name, created_by or label, and with exact_total; otherwise more than total match.',
      ),
    next_cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null when no record follows.'),
  });

/** What a store answers: the records of one page, as stored. */
export const SearchResponse = page(InterfaceInfo.omit({ cli: true, cached: true }).extend({ predicate: InterfaceInfo.shape.predicate.unwrap() }));
/** What a client receives: the page's records as SearchItems. */
export const SearchItemsResponse = page(SearchItem).openapi('SearchResponse');

/** What a caller may send (before defaults); `search` validates it. */
export type FindRequest = z.input<typeof FindRequest>;
/** A validated request: defaults applied, `direction` lowercased. */
export type ParsedFindRequest = z.output<typeof FindRequest>;
export type SearchResponse = z.output<typeof SearchResponse>;
export type SearchItemsResponse = z.output<typeof SearchItemsResponse>;
export type SearchItem = z.output<typeof SearchItem>;
