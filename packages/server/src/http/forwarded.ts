/**
 * A request as its client made it, when a reverse proxy the gateway trusts (`--trusted-proxy`)
 * stands in front: the scheme and host the client asked for (`X-Forwarded-Proto`,
 * `X-Forwarded-Host`) and the client's address (`X-Forwarded-For`). From any other peer these
 * headers are ignored: anyone can write them, so only the proxy that sets them may be believed.
 * The origin check, the access log and the socket log read it; the REST and WebSocket transports
 * share it.
 */
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

/** The request as its client made it. */
export interface ClientView {
  /** The client's address: the TCP peer's, or from a trusted proxy the right-most untrusted `X-Forwarded-For` entry. */
  client: string | undefined;
  /** The host (and port) the client asked for: `Host`, or a trusted proxy's `X-Forwarded-Host`. */
  host: string | undefined;
  /** `http` or `https` as a trusted proxy says the client used; undefined when no trusted proxy said. */
  proto: 'http' | 'https' | undefined;
}

/** The peers whose X-Forwarded-* headers are believed: IP addresses and CIDR ranges. */
export interface TrustedProxies {
  /** True when `address` (IPv4, IPv6, or IPv4-mapped IPv6) is one of them. */
  has(address: string | undefined): boolean;
  readonly none: boolean;
}

/** IPv4-mapped IPv6 (`::ffff:127.0.0.1`, what a dual-stack socket reports) as the IPv4 address; brackets off. */
function plainAddress(address: string): string {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  return mapped ? mapped[1]! : bare;
}

/**
 * What a `--trusted-proxy` entry must be, or the reason it is not: an IP address or an address
 * range in CIDR notation (`10.0.0.0/8`, `fd00::/8`). Host names are refused: what they resolve to
 * can change under the gateway.
 */
export function trustedProxyProblem(entry: string): string | undefined {
  const [address, bits, extra] = entry.split('/');
  const family = isIP(address ?? '');
  if (!family || extra !== undefined) return `'${entry}' is not an IP address or CIDR range (like 127.0.0.1, ::1 or 10.0.0.0/8)`;
  if (bits === undefined) return undefined;
  const prefix = Number(bits);
  if (!/^\d{1,3}$/.test(bits) || prefix > (family === 4 ? 32 : 128)) return `'${entry}' has a bad prefix length (/${bits})`;
  return undefined;
}

const cache = new WeakMap<readonly string[], TrustedProxies>();

/** The trusted proxies of a checked list (`GatewayOptions.trustedProxies`), made once per list. */
export function trustedProxies(entries: readonly string[]): TrustedProxies {
  const cached = cache.get(entries);
  if (cached) return cached;
  const list = new BlockList();
  for (const entry of entries) {
    const problem = trustedProxyProblem(entry);
    if (problem) throw new Error(`trustedProxies takes IP addresses or CIDR ranges: ${problem}`);
    const [address, bits] = entry.split('/') as [string, string | undefined];
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(bits), family);
  }
  const trusted: TrustedProxies = {
    none: entries.length === 0,
    has(address) {
      if (!address || entries.length === 0) return false;
      const plain = plainAddress(address);
      const family = isIP(plain);
      return family !== 0 && list.check(plain, family === 6 ? 'ipv6' : 'ipv4');
    },
  };
  cache.set(entries, trusted);
  return trusted;
}

/** The last comma-separated entry of a header: what the proxy nearest the gateway wrote. */
function lastEntry(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value.join(',') : value;
  const last = text?.split(',').at(-1)?.trim();
  return last || undefined;
}

/** A host as a Host header carries it (`name`, `name:port`, `[v6]:port`: no path, no user), or undefined. */
function hostOf(value: string | undefined): string | undefined {
  if (!value || !/^[A-Za-z0-9.\-_~%[\]:]+$/.test(value)) return undefined;
  return URL.canParse(`http://${value}`) ? value : undefined;
}

/**
 * The client address from a trusted proxy's `X-Forwarded-For`: walking from the right (the entry
 * the nearest proxy appended), the first entry that is not a trusted proxy. When every entry is a
 * trusted proxy the left-most one is the client; an entry that is no IP address (a port appended,
 * say) ends the walk, and the client is the trusted hop that passed it on.
 */
function forwardedFor(value: string | string[] | undefined, peer: string, trusted: TrustedProxies): string {
  const text = Array.isArray(value) ? value.join(',') : (value ?? '');
  let client = peer;
  for (const raw of text.split(',').reverse()) {
    const entry = plainAddress(raw.trim());
    if (!entry) continue;
    if (!isIP(entry)) return client;
    client = entry;
    if (!trusted.has(entry)) return entry;
  }
  return client;
}

/** The request as its client made it (see ClientView); X-Forwarded-* only from a trusted peer. */
export function clientView(req: IncomingMessage, trusted: TrustedProxies): ClientView {
  const peer = req.socket.remoteAddress;
  const host = req.headers.host;
  if (trusted.none || !trusted.has(peer)) return { client: peer && plainAddress(peer), host, proto: undefined };
  const proto = lastEntry(req.headers['x-forwarded-proto'])?.toLowerCase();
  return {
    client: forwardedFor(req.headers['x-forwarded-for'], plainAddress(peer!), trusted),
    host: hostOf(lastEntry(req.headers['x-forwarded-host'])) ?? host,
    proto: proto === 'http' || proto === 'https' ? proto : undefined,
  };
}
