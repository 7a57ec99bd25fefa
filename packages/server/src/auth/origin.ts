/**
 * Browser origin policy. A request without Origin (curl, Python, Node) is not a browser's and
 * passes; a browser's passes when it comes from the gateway's own origin or an allowlisted one.
 * The allowlist is empty by default (`portico serve` on loopback adds local JupyterLab's origins).
 * The gateway's own origin is the host the client asked for (`Host`); behind a trusted proxy, the
 * scheme and host the proxy says the client used (`X-Forwarded-Proto`, `X-Forwarded-Host`,
 * http/forwarded.ts), so that a page served through the proxy is the gateway's own.
 */
export function originAllowed(origin: string | undefined, host: string | undefined, allowlist: readonly string[], proto?: 'http' | 'https'): boolean {
  if (!origin) return true;
  if (allowlist.includes('*') || allowlist.includes(origin)) return true;
  if (host === undefined) return false;
  try {
    const page = new URL(origin);
    // Without a trusted proxy's word on the scheme only the hosts are compared (as they always were).
    if (proto === undefined) return page.host === host;
    return page.protocol === `${proto}:` && page.host === new URL(`${proto}://${host}`).host;
  } catch {
    return false;
  }
}

/**
 * What a refused page is told, everywhere it can be told (the 403 of REST and upgrades,
 * `GET /v1/origin`, and so the widget runtime's notice): what was refused and how to allow it.
 */
export function originRefusal(origin: string | undefined): string {
  return `This gateway does not accept pages from ${origin ?? 'this origin'}. Allow it with: ${SERVE_COMMAND} --allow-origin ${origin ?? '<origin>'} (or PORTICO_ALLOW_ORIGINS).`;
}

/** The command this gateway was started with, as the person who started it typed it: `npm start --` under `npm start`. */
const SERVE_COMMAND = process.env.npm_lifecycle_event === 'start' ? 'npm start --' : 'portico serve';
