import { describe, expect, it } from 'vitest';
import { gatewayUrls } from './urls.js';

describe('gatewayUrls', () => {
  it('maps http to ws and https to wss, keeping a path prefix', () => {
    expect(gatewayUrls('http://gw:8000').socket).toBe('ws://gw:8000/v1/interfaces/ws');
    expect(gatewayUrls('https://example.org/portico/').socket).toBe('wss://example.org/portico/v1/interfaces/ws');
  });

  it('accepts a ws(s) base and serves assets over http(s)', () => {
    expect(gatewayUrls('wss://example.org').asset('counter', 'esm')).toBe('https://example.org/v1/project/counter/widget/esm');
  });

  it('adds ?project= to the socket and asset URLs, and escapes the module name', () => {
    const urls = gatewayUrls('http://gw', '/srv/my project');
    expect(urls.socket).toBe('ws://gw/v1/interfaces/ws?project=%2Fsrv%2Fmy+project');
    expect(urls.asset('pkg/mod', 'css')).toBe('http://gw/v1/project/pkg%2Fmod/widget/css?project=%2Fsrv%2Fmy+project');
  });

  it('drops a query or fragment of the base URL', () => {
    expect(gatewayUrls('http://gw/?x=1#y').socket).toBe('ws://gw/v1/interfaces/ws');
  });
});
