/**
 * Why a page could not reach its gateway, in words a user can act on. A browser hides the reason
 * a cross-origin request or a WebSocket upgrade failed (the page sees `TypeError: Failed to fetch`
 * or close code 1006), so after such a failure the runtime asks the gateway's public
 * `GET /v1/origin`, which any page may read: a refused origin becomes `origin_refused` with the
 * gateway's own words (what was refused, the flag that allows it), a gateway that does not answer
 * at all becomes `unreachable`.
 */
import { WidgetRuntimeError } from '../errors.js';
import type { FetchLike } from './assets.js';

/** Failures that a refused origin or an unreachable gateway would explain. */
const TRANSPORT_CODES = new Set(['connection_failed', 'load_failed', 'handshake_timeout']);

export async function explainFailure(url: string, error: WidgetRuntimeError, fetchImpl: FetchLike = fetch): Promise<WidgetRuntimeError> {
  if (!TRANSPORT_CODES.has(error.code)) return error;
  let answer: { allowed?: unknown; message?: unknown } | undefined;
  try {
    const endpoint = new URL('v1/origin', new URL(url.replace(/\/*$/, '/'), globalThis.location?.href)).href;
    const response = await fetchImpl(endpoint, {
      credentials: 'omit',
      cache: 'no-store',
    });
    // An older gateway has no /v1/origin: nothing to add.
    if (!response.ok) return error;
    answer = (await response.json()) as typeof answer;
  } catch (cause) {
    return new WidgetRuntimeError('unreachable', `Cannot reach the Portico gateway at ${url}: is it running (npm start, or portico serve), and is the URL right?`, { cause });
  }
  if (answer?.allowed === false && typeof answer.message === 'string') return new WidgetRuntimeError('origin_refused', answer.message, { cause: error });
  return error;
}
