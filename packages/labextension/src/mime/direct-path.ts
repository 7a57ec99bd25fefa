/**
 * Whether this browser can use the direct path to a gateway: a route to it, an origin it allows,
 * and a token when it needs one. Asked before a live widget mounts when the output also carries
 * the kernel's view of the same widget (an anywidget, `application/vnd.jupyter.widget-view+json`),
 * so that a gateway the browser cannot use falls back to that view instead of a dead widget.
 */

/** How long each probe waits for the gateway (ms): past it, the route counts as missing. */
export const PROBE_MS = 3_000;

/**
 * Why the direct path cannot be used, as a sentence, or undefined when it can. Asks
 * `/v1/origin` (public and open to any origin: is this page's origin allowed?), then
 * `/v1/health` with the token (is a token needed, and is this one accepted?).
 */
export async function directPathProblem(url: string, token: string | undefined, fetcher: typeof fetch = fetch): Promise<string | undefined> {
  const signal = () => AbortSignal.timeout(PROBE_MS);
  let origin: { allowed?: unknown; message?: unknown };
  try {
    const answer = await fetcher(`${url}/v1/origin`, { signal: signal() });
    if (!answer.ok) return `the gateway at ${url} answered ${answer.status} to /v1/origin`;
    origin = (await answer.json()) as typeof origin;
  } catch (err) {
    return `this browser cannot reach the gateway at ${url} (${(err as Error)?.message ?? err})`;
  }
  if (origin.allowed !== true) return typeof origin.message === 'string' ? origin.message : `the gateway at ${url} refuses this page's origin`;
  try {
    const health = await fetcher(`${url}/v1/health`, { signal: signal(), headers: token ? { Authorization: `Bearer ${token}` } : {} });
    if (health.status === 401) return token ? `the gateway at ${url} refused the token in Settings → Portico` : `the gateway at ${url} needs a token (Settings → Portico)`;
  } catch (err) {
    return `this browser cannot reach the gateway at ${url} (${(err as Error)?.message ?? err})`;
  }
  return undefined;
}
