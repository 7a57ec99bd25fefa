import { describe, expect, it } from 'vitest';
import { gatewayUrls, stylesheetLinks } from './urls.js';

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

describe('stylesheetLinks (the Link header of the module response)', () => {
  it("finds the gateway's link", () => {
    expect(stylesheetLinks('</v1/project/counter/widget/css?project=%2Fsrv%2Fp>; rel="stylesheet"')).toEqual(['/v1/project/counter/widget/css?project=%2Fsrv%2Fp']);
  });

  it('no header, an empty one or links of other relations give none', () => {
    expect(stylesheetLinks(null)).toEqual([]);
    expect(stylesheetLinks('')).toEqual([]);
    expect(stylesheetLinks('</next>; rel="next", </a.css>; rel="preload"; as="style"')).toEqual([]);
    expect(stylesheetLinks('</a.css>')).toEqual([]);
    expect(stylesheetLinks('not a link header')).toEqual([]);
  });

  it('accepts bare and mixed-case rel values, rel lists, spacing, and several links', () => {
    expect(stylesheetLinks('</a.css>;rel=stylesheet')).toEqual(['/a.css']);
    expect(stylesheetLinks('</a.css> ; REL = "alternate  StyleSheet" ; title="x, y; z"')).toEqual(['/a.css']);
    expect(stylesheetLinks('</n>; rel="next"; title="a,b", </b.css>; title="t"; rel="stylesheet", </c.css>; rel=stylesheet')).toEqual(['/b.css', '/c.css']);
  });

  it('only the first rel parameter counts', () => {
    expect(stylesheetLinks('</a.css>; rel="next"; rel="stylesheet"')).toEqual([]);
  });
});

describe('GatewayUrls.resolve', () => {
  const module = (urls: ReturnType<typeof gatewayUrls>) => urls.asset('counter', 'esm');

  it('resolves an absolute path against the gateway, below its path prefix', () => {
    const plain = gatewayUrls('http://gw:8000');
    expect(plain.resolve('/v1/project/counter/widget/css', module(plain))).toBe('http://gw:8000/v1/project/counter/widget/css');
    const prefixed = gatewayUrls('https://example.org/portico/');
    expect(prefixed.resolve('/v1/project/counter/widget/css', module(prefixed))).toBe('https://example.org/portico/v1/project/counter/widget/css');
    // A gateway that knows its prefix is not prefixed twice.
    expect(prefixed.resolve('/portico/v1/x.css', module(prefixed))).toBe('https://example.org/portico/v1/x.css');
  });

  it("keeps the link's ?project= and adds the binding when it has none (same origin only)", () => {
    const urls = gatewayUrls('http://gw', '/srv/p');
    expect(urls.resolve('/v1/project/counter/widget/css?project=%2Fsrv%2Fp', module(urls))).toBe('http://gw/v1/project/counter/widget/css?project=%2Fsrv%2Fp');
    expect(urls.resolve('/v1/project/counter/widget/css', module(urls))).toBe('http://gw/v1/project/counter/widget/css?project=%2Fsrv%2Fp');
    expect(urls.resolve('https://cdn.example/w.css', module(urls))).toBe('https://cdn.example/w.css');
  });

  it('resolves a relative reference against the module URL', () => {
    const urls = gatewayUrls('http://gw/base');
    expect(urls.resolve('css', module(urls))).toBe('http://gw/base/v1/project/counter/widget/css');
  });
});
