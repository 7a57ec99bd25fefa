/**
 * A small typed client for the gateway's REST API, used by the sidebar. Every request carries
 * `Authorization: Bearer <token>` when a token is set and `?project=` when a project is set.
 * Failures reject with a `GatewayError` that keeps the gateway's stable error code.
 */
import type { ExecutionInfo, FindRequest, InterfaceInfo, OutputChunk, ProjectIndex, SearchResponse } from '@portico/protocol';

export interface GatewayConnection {
  /** Base URL, e.g. `http://127.0.0.1:8000` (a path prefix is kept). */
  url: string;
  token?: string;
  project?: string;
}

/** Codes the client adds to the gateway's own (`not_found`, `unauthorized`, …). */
export const CLIENT_ERROR_CODES = {
  /** No HTTP answer: the gateway is down, the URL is wrong, or the browser refused the request (CORS). */
  unreachable: 'unreachable',
  /** An answer that is not the gateway's JSON. */
  bad_response: 'bad_response',
  /** A 422 with the request's validation issues. */
  invalid_request: 'invalid_request',
} as const;

export class GatewayError extends Error {
  override readonly name = 'GatewayError';
  constructor(
    readonly code: string,
    message: string,
    /** HTTP status; undefined when there was no answer. */
    readonly status?: number,
  ) {
    super(message);
  }
}

type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  signal?: AbortSignal;
}

/**
 * The error of a gateway error body: `{detail: "<message>", code, message}`, a 400's (and every call failure's)
 * `{detail: {code, message, issues?}, code, message}` or a 422's `{detail: [{loc, msg}], …}`.
 * A server that sends only `{detail: "<message>"}` (FastAPI) gives code `bad_response` with that message.
 */
function errorFromBody(status: number, body: unknown): GatewayError {
  const { detail, code, message } = (body ?? {}) as { detail?: unknown; code?: unknown; message?: unknown };
  if (Array.isArray(detail)) {
    const issues = detail.map((issue: { loc?: unknown[]; msg?: string }) => `${(issue.loc ?? []).join('.')}: ${issue.msg ?? ''}`);
    return new GatewayError(CLIENT_ERROR_CODES.invalid_request, issues.join('; ') || 'Invalid request', status);
  }
  const structured = (detail && typeof detail === 'object' ? detail : {}) as { code?: unknown; message?: unknown };
  const found = typeof code === 'string' ? code : structured.code;
  const text = [message, structured.message, detail].find((value): value is string => typeof value === 'string');
  if (typeof found === 'string') return new GatewayError(found, text ?? found, status);
  return new GatewayError(CLIENT_ERROR_CODES.bad_response, text ? `HTTP ${status}: ${text}` : `HTTP ${status}`, status);
}

export class GatewayClient {
  constructor(
    readonly connection: GatewayConnection,
    private readonly fetchFn: FetchLike = (input, init) => fetch(input, init),
  ) {}

  /** The absolute URL of `path` on this gateway, with `?project=` and `query`. */
  url(path: string, query: RequestOptions['query'] = {}): string {
    const base = new URL(this.connection.url, globalThis.location?.href);
    const url = new URL(base.href);
    url.pathname = base.pathname.replace(/\/+$/, '') + path;
    url.search = '';
    url.hash = '';
    if (this.connection.project) url.searchParams.set('project', this.connection.project);
    for (const [key, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(key, String(value));
    return url.href;
  }

  /** GET /v1/project: the project's interface modules and which of them have a widget. */
  project(signal?: AbortSignal): Promise<ProjectIndex> {
    return this.request('GET', '/v1/project', { signal });
  }

  /** POST /v1/interfaces/search. */
  search(request: FindRequest, signal?: AbortSignal): Promise<SearchResponse> {
    return this.request('POST', '/v1/interfaces/search', { body: request, signal });
  }

  /** GET /v1/interfaces/{uuid}. */
  get(uuid: string, signal?: AbortSignal): Promise<InterfaceInfo> {
    return this.request('GET', `/v1/interfaces/${encodeURIComponent(uuid)}`, { signal });
  }

  /** PATCH /v1/interfaces/{uuid}/label: sets the label, or clears it with null (last write wins). */
  setLabel(uuid: string, label: string | null, signal?: AbortSignal): Promise<InterfaceInfo> {
    return this.request('PATCH', `/v1/interfaces/${encodeURIComponent(uuid)}/label`, { body: { label }, signal });
  }

  /** POST /v1/interfaces/{uuid}/archive (`restore` brings an archived one back). */
  archive(uuid: string, restore = false, signal?: AbortSignal): Promise<InterfaceInfo> {
    return this.request('POST', `/v1/interfaces/${encodeURIComponent(uuid)}/archive`, { query: { restore }, signal });
  }

  /** GET /v1/interfaces/{uuid}/executions, newest first. */
  executions(uuid: string, options: { active?: boolean; limit?: number } = {}, signal?: AbortSignal): Promise<ExecutionInfo[]> {
    return this.request('GET', `/v1/interfaces/${encodeURIComponent(uuid)}/executions`, { query: options, signal });
  }

  /** GET /v1/executions/{uuid}/output: a window read forward from `offset`, or the last `tail` bytes. */
  output(execution: string, window: { offset?: number; tail?: number; limit?: number } = {}, signal?: AbortSignal): Promise<OutputChunk> {
    return this.request('GET', `/v1/executions/${encodeURIComponent(execution)}/output`, { query: window, signal });
  }

  /** POST /v1/executions/{uuid}/cancel (best effort: the run stops within about a second). */
  async cancel(execution: string, signal?: AbortSignal): Promise<void> {
    await this.request('POST', `/v1/executions/${encodeURIComponent(execution)}/cancel`, { signal });
  }

  private async request<T>(method: string, path: string, options: RequestOptions): Promise<T> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (this.connection.token) headers.Authorization = `Bearer ${this.connection.token}`;
    if (options.body !== undefined) headers['Content-Type'] = 'application/json';
    const url = this.url(path, options.query);
    let response: Response;
    try {
      response = await this.fetchFn(url, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: options.signal,
        // The token travels in the header; cookies of the gateway's origin are not wanted here.
        credentials: 'omit',
      });
    } catch (err) {
      if (options.signal?.aborted) throw err;
      throw new GatewayError(
        CLIENT_ERROR_CODES.unreachable,
        `Cannot reach the gateway at ${this.connection.url} (is it running, and does its --allow-origins list this page's origin ${globalThis.location?.origin ?? ''}?)`,
      );
    }
    const text = await response.text();
    let body: unknown = null;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        throw new GatewayError(CLIENT_ERROR_CODES.bad_response, `HTTP ${response.status}: not JSON`, response.status);
      }
    }
    if (!response.ok) throw errorFromBody(response.status, body);
    return body as T;
  }
}
