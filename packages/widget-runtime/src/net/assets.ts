/**
 * Fetching a widget's ES module and stylesheet with the bearer header, and importing module
 * source. A page cannot put an Authorization header on `import()`, so the source is fetched and
 * imported from a Blob URL, revoked right after (anywidget does the same for inline `_esm`).
 * Consequences, documented in the README: relative imports inside the module do not resolve
 * (bundle the widget, or import absolute URLs), and a Content-Security-Policy must allow `blob:`
 * scripts.
 */
import { WidgetRuntimeError } from '../errors.js';

export type FetchLike = (url: string, init?: RequestInit) => Promise<Response>;

/**
 * Returns the asset's text, or null on 404 (a widget without a stylesheet). `no-cache`
 * revalidates with the gateway's ETag each time, so a hot reload never sees a stale copy.
 */
export async function fetchAsset(url: string, token: string | undefined, fetchImpl: FetchLike = fetch): Promise<string | null> {
  let response: Response;
  try {
    response = await fetchImpl(url, { headers: token ? { Authorization: `Bearer ${token}` } : {}, cache: 'no-cache' });
  } catch (error) {
    throw new WidgetRuntimeError('load_failed', `Cannot fetch ${url}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (response.status === 404) return null;
  if (!response.ok) {
    const detail = await errorDetail(response);
    throw new WidgetRuntimeError(detail?.code ?? 'load_failed', detail?.message ?? `GET ${url} answered ${response.status}`);
  }
  return response.text();
}

/** The gateway's REST error body is `{detail: {code, message}}`. */
async function errorDetail(response: Response): Promise<{ code: string; message: string } | undefined> {
  try {
    const body = (await response.json()) as { detail?: { code?: unknown; message?: unknown } };
    const { code, message } = body.detail ?? {};
    return typeof code === 'string' && typeof message === 'string' ? { code, message } : undefined;
  } catch {
    return undefined;
  }
}

/** Imports JavaScript source as an ES module through a Blob URL. */
export async function importSource(source: string): Promise<unknown> {
  const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  try {
    return await import(/* webpackIgnore: true */ /* @vite-ignore */ url);
  } catch (error) {
    throw new WidgetRuntimeError('load_failed', `The widget module failed to import: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  } finally {
    URL.revokeObjectURL(url);
  }
}
