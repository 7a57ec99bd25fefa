/**
 * Fetching a widget's ES module and stylesheet with the bearer header, and importing module
 * source. The module's response says whether there is a stylesheet, with a
 * `Link: </v1/project/<module>/widget/css…>; rel="stylesheet"` header: the stylesheet is fetched
 * only then, so a widget without one costs no request (and no 404 in the console). A page cannot put an Authorization header on `import()`, so the source is fetched and
 * imported from a Blob URL, revoked right after (anywidget does the same for inline `_esm`).
 * Consequences, documented in the README: relative imports inside the module do not resolve
 * (bundle the widget, or import absolute URLs), and a Content-Security-Policy must allow `blob:`
 * scripts.
 */
import { WidgetRuntimeError } from '../errors.js';
import { gatewayUrls, stylesheetLinks } from './urls.js';

export type FetchLike = (url: string, init?: RequestInit) => Promise<Response>;

export interface WidgetModuleSource {
  /** The module's JavaScript. */
  esm: string;
  /** The stylesheet's URL, when the module's response linked one. */
  stylesheet: string | undefined;
}

/**
 * Fetches a module's widget front end; null when it has none (404). The stylesheet URL comes
 * from the response's Link header, resolved against the gateway URL (see GatewayUrls.resolve).
 */
export async function fetchWidgetModule(
  gateway: { url: string; project?: string; token?: string },
  module: string,
  fetchImpl: FetchLike = fetch,
): Promise<WidgetModuleSource | null> {
  const urls = gatewayUrls(gateway.url, gateway.project);
  const url = urls.asset(module, 'esm');
  const fetched = await fetchAsset(url, gateway.token, fetchImpl);
  if (!fetched) return null;
  const [link] = stylesheetLinks(fetched.headers.get('Link'));
  return { esm: fetched.text, stylesheet: link === undefined ? undefined : urls.resolve(link, url) };
}

/**
 * The stylesheet the module's response linked: null, without any request, when it linked none.
 * The token goes along only to the gateway's own origin.
 */
export async function fetchStylesheet(gateway: { url: string; token?: string }, source: WidgetModuleSource, fetchImpl: FetchLike = fetch): Promise<string | null> {
  const url = source.stylesheet;
  if (url === undefined) return null;
  const sameOrigin = new URL(url).origin === gatewayUrls(gateway.url).origin;
  return (await fetchAsset(url, sameOrigin ? gateway.token : undefined, fetchImpl))?.text ?? null;
}

/**
 * Returns the asset's text and headers, or null on 404. `no-cache` revalidates with the
 * gateway's ETag each time, so a hot reload never sees a stale copy.
 */
export async function fetchAsset(url: string, token: string | undefined, fetchImpl: FetchLike = fetch): Promise<{ text: string; headers: Headers } | null> {
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
  return { text: await response.text(), headers: response.headers };
}

/**
 * The code and message of the gateway's REST error body, `{detail, code, message}` (`detail` the
 * message, or on a 400 `{code, message, …}`); an older gateway sent them in `detail` only.
 */
async function errorDetail(response: Response): Promise<{ code: string; message: string } | undefined> {
  try {
    const body = (await response.json()) as { detail?: unknown; code?: unknown; message?: unknown };
    const { code, message } = typeof body.code === 'string' ? body : ((body.detail ?? {}) as { code?: unknown; message?: unknown });
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
