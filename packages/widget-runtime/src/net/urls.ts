/**
 * Where things are on a gateway given its base URL (`http(s)://host[:port][/prefix]`, a `ws(s)://`
 * base is accepted too): the interfaces socket and a module's widget assets, each with the
 * `?project=<dir>` binding when a project is given.
 */

export type WidgetAsset = 'esm' | 'css';

export interface GatewayUrls {
  socket: string;
  asset(module: string, asset: WidgetAsset): string;
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
    socket: at('/v1/interfaces/ws', root.protocol === 'https:' ? 'wss:' : 'ws:'),
    asset: (module, asset) => at(`/v1/project/${encodeURIComponent(module)}/widget/${asset}`),
  };
}
