/**
 * Where things are on a gateway given its base URL (`http(s)://host[:port][/prefix]`, a `ws(s)://`
 * base is accepted too): the interfaces socket and a module's widget assets, each with the
 * `?project=<dir>` binding when a project is given; and the stylesheet a module response points
 * to with its `Link: <…>; rel="stylesheet"` header.
 */

export type WidgetAsset = 'esm' | 'css';

export interface GatewayUrls {
  /** The gateway's http(s) origin. */
  origin: string;
  socket: string;
  asset(module: string, asset: WidgetAsset): string;
  /**
   * A URL the gateway gave (e.g. in a Link header), made absolute. The gateway does not know
   * the path prefix a proxy serves it under, so an absolute path (`/v1/…`) is taken below this
   * base's prefix; full URLs are kept, other references resolve against `from`.
   */
  resolve(reference: string, from: string): string;
}

export function gatewayUrls(base: string, project?: string): GatewayUrls {
  const root = new URL(base, globalThis.location?.href);
  if (root.protocol === 'ws:') root.protocol = 'http:';
  if (root.protocol === 'wss:') root.protocol = 'https:';
  root.search = '';
  root.hash = '';
  const prefix = root.pathname.replace(/\/+$/, '');
  const at = (path: string, protocol?: string) => {
    const url = new URL(root.href);
    url.pathname = prefix + path;
    if (protocol) url.protocol = protocol;
    if (project) url.searchParams.set('project', project);
    return url.href;
  };
  return {
    origin: root.origin,
    socket: at('/v1/interfaces/ws', root.protocol === 'https:' ? 'wss:' : 'ws:'),
    asset: (module, asset) => at(`/v1/project/${encodeURIComponent(module)}/widget/${asset}`),
    resolve(reference, from) {
      const rooted = reference.startsWith('/') && !reference.startsWith('//');
      const underPrefix = !prefix || reference === prefix || reference.startsWith(`${prefix}/`) || reference.startsWith(`${prefix}?`);
      const url = new URL(rooted && !underPrefix ? prefix + reference : reference, rooted ? root.href : from);
      if (project && url.origin === root.origin && !url.searchParams.has('project')) url.searchParams.set('project', project);
      return url.href;
    },
  };
}

/**
 * The targets of the links with `rel="stylesheet"` in a Link header (RFC 8288), in order:
 * `<url>; rel="stylesheet"`, several links comma-separated, rel quoted or not, possibly a
 * space-separated list, any case.
 */
export function stylesheetLinks(header: string | null | undefined): string[] {
  if (!header) return [];
  const found: string[] = [];
  // <target> then its parameters up to the next link; a quoted value may contain , and ;
  const link = /<([^>]*)>((?:\s*;\s*[^\s;,=]+(?:\s*=\s*(?:"(?:[^"\\]|\\.)*"|[^;,]*))?)*)/g;
  const param = /;\s*([^\s;,=]+)(?:\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;,]*)))?/g;
  for (const [, target, params] of header.matchAll(link)) {
    for (const [, name, quoted, bare] of params!.matchAll(param)) {
      if (name!.toLowerCase() !== 'rel') continue;
      const rels = (quoted ?? bare ?? '').trim().toLowerCase().split(/\s+/);
      if (rels.includes('stylesheet')) found.push(target!.trim());
      break; // only the first rel counts (RFC 8288 §3.3)
    }
  }
  return found;
}
