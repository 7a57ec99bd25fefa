/**
 * Assembles the gateway: the service layer, the Koa app and the WebSocket upgrade handler on
 * one http.Server. `startServer({port: 0})` is what tests and the CLI use.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Authenticator } from './auth/credentials.js';
import { defaultOptions, type GatewayOptions } from './config/options.js';
import { createApp } from './http/app.js';
import { Gateway } from './service/gateway.js';
import { attachWebSockets } from './ws/upgrade.js';

export interface RunningServer {
  gateway: Gateway;
  server: Server;
  /** e.g. http://127.0.0.1:8000 */
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function startServer(overrides: Partial<GatewayOptions> = {}): Promise<RunningServer> {
  const options = defaultOptions(overrides);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  // Before the gateway: a bad auth configuration must fail before any index is opened.
  const auth = new Authenticator({ ...options, log });
  const gateway = await Gateway.create({ ...options, log });
  const app = createApp(gateway, auth, log);
  app.silent = true;
  const server = createServer(app.callback());
  const wss = attachWebSockets(server, gateway, auth, log);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;

  let closing: Promise<void> | undefined;
  return {
    gateway,
    server,
    port,
    url: `http://${host}:${port}`,
    close() {
      closing ??= (async () => {
        for (const client of wss.clients) client.terminate();
        wss.close();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await gateway.close();
      })();
      return closing;
    },
  };
}
