/**
 * Browser origin policy. A request without Origin (curl, Python, Node) is not a browser's and
 * passes; a browser's passes when it comes from the gateway's own origin or an allowlisted one.
 * The allowlist is empty by default.
 */
export function originAllowed(origin: string | undefined, host: string | undefined, allowlist: readonly string[]): boolean {
  if (!origin) return true;
  if (allowlist.includes('*') || allowlist.includes(origin)) return true;
  try {
    return host !== undefined && new URL(origin).host === host;
  } catch {
    return false;
  }
}
