import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { parseServeArgs } from '../cli/options.js';
import { clientView, trustedProxies, trustedProxyProblem } from './forwarded.js';

/** A request as Node hands it over: the TCP peer and the headers (lower-case names). */
function request(peer: string, headers: Record<string, string> = {}): IncomingMessage {
  return { socket: { remoteAddress: peer }, headers } as unknown as IncomingMessage;
}

const FORWARDED = { host: 'gateway:8000', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'portico.example.org', 'x-forwarded-for': '203.0.113.9' };

describe('X-Forwarded-* from trusted proxies only', () => {
  it('with no trusted proxy the headers are ignored: Host, the peer, no scheme', () => {
    expect(clientView(request('10.0.0.5', FORWARDED), trustedProxies([]))).toEqual({ client: '10.0.0.5', host: 'gateway:8000', proto: undefined });
  });

  it('from an untrusted peer the headers are ignored', () => {
    expect(clientView(request('10.0.0.6', FORWARDED), trustedProxies(['10.0.0.5']))).toEqual({ client: '10.0.0.6', host: 'gateway:8000', proto: undefined });
  });

  it('from a trusted proxy: its scheme, host and the client it forwarded for', () => {
    expect(clientView(request('10.0.0.5', FORWARDED), trustedProxies(['10.0.0.5']))).toEqual({ client: '203.0.113.9', host: 'portico.example.org', proto: 'https' });
  });

  it('a CIDR range and an IPv4-mapped IPv6 peer (a dual-stack socket) match', () => {
    expect(clientView(request('::ffff:10.1.2.3', FORWARDED), trustedProxies(['10.0.0.0/8'])).client).toBe('203.0.113.9');
    expect(clientView(request('fd00::7', FORWARDED), trustedProxies(['fd00::/8'])).proto).toBe('https');
  });

  it('X-Forwarded-For: the right-most entry that is not a trusted proxy, whatever a client wrote before it', () => {
    const trusted = trustedProxies(['10.0.0.5', '10.0.0.6']);
    const via = (xff: string) => clientView(request('10.0.0.5', { 'x-forwarded-for': xff }), trusted).client;
    expect(via('198.51.100.1, 203.0.113.9')).toBe('203.0.113.9');
    expect(via('198.51.100.1, 203.0.113.9, 10.0.0.6')).toBe('203.0.113.9');
    // every hop trusted: the left-most one is the client
    expect(via('10.0.0.6')).toBe('10.0.0.6');
    // an entry that is no address ends the walk at the hop that wrote it
    expect(via('203.0.113.9, not-an-ip, 10.0.0.6')).toBe('10.0.0.6');
    expect(via('')).toBe('10.0.0.5');
  });

  it('a proto other than http or https, or a host with a path, is not believed', () => {
    const view = clientView(request('10.0.0.5', { host: 'gateway:8000', 'x-forwarded-proto': 'gopher', 'x-forwarded-host': 'evil.example/path' }), trustedProxies(['10.0.0.5']));
    expect(view).toMatchObject({ host: 'gateway:8000', proto: undefined });
  });

  it('of comma lists of Proto and Host, the last entry (what the nearest proxy wrote) counts', () => {
    const view = clientView(request('10.0.0.5', { 'x-forwarded-proto': 'http, https', 'x-forwarded-host': 'forged.example, portico.example.org' }), trustedProxies(['10.0.0.5']));
    expect(view).toMatchObject({ host: 'portico.example.org', proto: 'https' });
  });
});

describe('portico serve --trusted-proxy', () => {
  it('is empty by default, repeatable, takes comma lists and PORTICO_TRUSTED_PROXIES', () => {
    expect(parseServeArgs([], {}).trustedProxies).toEqual([]);
    expect(parseServeArgs(['--trusted-proxy', '127.0.0.1', '--trusted-proxy', '10.0.0.0/8,::1'], {}).trustedProxies).toEqual(['127.0.0.1', '10.0.0.0/8', '::1']);
    expect(parseServeArgs([], { PORTICO_TRUSTED_PROXIES: '10.0.0.5, 10.0.0.6' }).trustedProxies).toEqual(['10.0.0.5', '10.0.0.6']);
    // flags win over the environment
    expect(parseServeArgs(['--trusted-proxy', '127.0.0.1'], { PORTICO_TRUSTED_PROXIES: '10.0.0.5' }).trustedProxies).toEqual(['127.0.0.1']);
  });

  it('refuses host names and bad ranges, saying what it takes', () => {
    expect(() => parseServeArgs(['--trusted-proxy', 'proxy.internal'], {})).toThrow("--trusted-proxy takes IP addresses or CIDR ranges: 'proxy.internal' is not an IP address or CIDR range (like 127.0.0.1, ::1 or 10.0.0.0/8)");
    expect(() => parseServeArgs(['--trusted-proxy', '10.0.0.0/33'], {})).toThrow("'10.0.0.0/33' has a bad prefix length (/33)");
    expect(trustedProxyProblem('fd00::/129')).toBe("'fd00::/129' has a bad prefix length (/129)");
    expect(() => trustedProxies(['nope'])).toThrow('not an IP address');
  });
});
