/** Packages the tests use that ship no types of their own. */
declare module 'oidc-provider' {
  const Provider: new (issuer: string, configuration?: Record<string, unknown>) => {
    listen(...args: unknown[]): import('node:http').Server;
    callback(): (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void;
    [key: string]: unknown;
  };
  export default Provider;
}
