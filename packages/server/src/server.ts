/**
 * Assembles the gateway: the service layer, the Koa app and the WebSocket upgrade handler on
 * one http.Server. `startServer({port: 0})` is what tests and the CLI use, and `close()` is the
 * graceful shutdown: stop accepting, let what is in flight finish within a bounded drain, answer
 * what is still in flight then (503 `shutting_down`, an `error` frame per id), close sockets with
 * 1001 "going away", then flush the index and stop the workers.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { Authenticator } from './auth/credentials.js';
import { defaultOptions, type GatewayOptions } from './config/options.js';
import { LIMITS } from './config/constants.js';
import { PorticoError } from './errors.js';
import { accessLog } from './http/access-log.js';
import { createApp } from './http/app.js';
import { trustedProxies } from './http/forwarded.js';
import { answerRefusals } from './http/refusals.js';
import { createLogger, lineLogger } from './ops/logger.js';
import { checkPortFree, portInUse } from './ops/port.js';
import { Gateway } from './service/gateway.js';
import { isPostgresUrl } from './store/postgres/postgres-store.js';
import { attachWebSockets } from './ws/upgrade.js';
import { Session } from './ws/session.js';

/**
 * How other gateways reach this one when no --advertise-url says: the address it listens on, or
 * this machine's name when that is every interface.
 */
function advertisedUrl(host: string, port: number): string {
  const name = host === '0.0.0.0' || host === '::' ? hostname() : host;
  return `http://${name.includes(':') ? `[${name}]` : name}:${port}`;
}

/** Close code of every socket a shutdown closes (RFC 6455: the endpoint is going away). */
export const CLOSE_GOING_AWAY = 1001;
const DRAIN_POLL_MS = 20;
const CLOSE_HANDSHAKE_MS = 1000;

export interface RunningServer {
  gateway: Gateway;
  server: Server;
  /** e.g. http://127.0.0.1:8000 */
  url: string;
  port: number;
  /**
   * Stops the gateway. Requests, calls and transfers in flight get up to `drainMs` (default the
   * gateway's `drainMs` option, LIMITS.shutdownDrainMs; 0 cuts them at once) to finish; what is
   * still running then is cancelled.
   */
  close(options?: { drainMs?: number }): Promise<void>;
}

export async function startServer(overrides: Partial<GatewayOptions> = {}): Promise<RunningServer> {
  const options = defaultOptions(overrides);
  const logger = options.logger ?? createLogger(options.logLevel);
  const log = options.log ?? lineLogger(logger);
  // Before the gateway: a bad auth or proxy configuration or a taken port must fail before any index is opened.
  const auth = new Authenticator({ ...options, sharedIndex: isPostgresUrl(options.store), log });
  trustedProxies(options.trustedProxies);
  await checkPortFree(options.host, options.port);
  const gateway = await Gateway.create({ ...options, log, logger });
  let stopping = false;
  const access = accessLog(gateway.logger, gateway.metrics, options.trustedProxies, options.accessLog);
  // A request on a kept-alive connection after the shutdown began is answered 503 shutting_down.
  const app = createApp(gateway, auth, log, { access, stopping: () => stopping });
  app.silent = true;
  const handle = app.callback();
  /** The requests whose answer has not gone out yet. */
  const requests = new Set<ServerResponse>();
  const server = createServer(function serveRequest(req, res) {
    requests.add(res);
    res.once('close', () => requests.delete(res));
    void handle(req, res);
  });
  answerRefusals(server, access);
  const sockets = attachWebSockets(server, gateway, auth, log);

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // Node's default backlog (511) dropped connections of a burst of 2,000 sockets at once.
      server.listen({ port: options.port, host: options.host, backlog: LIMITS.listenBacklog }, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    // Taken since the check (a race), or any other listen failure: the gateway stops what it started.
    sockets.stopHeartbeat();
    await gateway.close();
    throw (err as NodeJS.ErrnoException).code === 'EADDRINUSE' ? await portInUse(options.host, options.port) : err;
  }
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `http://${host}:${port}`;
  gateway.projects.holder.url = url;
  gateway.ownership.setAddress(options.advertiseUrl ?? advertisedUrl(options.host, port));

  /** Nothing left that a drain should wait for (followers of executions only watch). */
  const drained = () => requests.size === 0 && [...sockets.sessions].every((s) => !(s instanceof Session) || s.idle);

  let closing: Promise<void> | undefined;
  return {
    gateway,
    server,
    port,
    url,
    close({ drainMs = options.drainMs } = {}) {
      closing ??= (async () => {
        stopping = sockets.stopping = true;
        gateway.projects.holder.stopping = true; // a gateway starting now waits for the index
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const deadline = Date.now() + drainMs;
        while (!drained() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
        // The deadline: whatever is still in flight gets its answer before its connection closes.
        // A request not answered yet gets 503 (one whose answer has begun, a download, is cut);
        // every call, stream, upload and read an error frame for its id, then the 1001.
        const cut = new PorticoError('shutting_down', 'The gateway is shutting down and its drain deadline passed first; retry against the next one');
        const answered = [...requests].filter((res) => access.cutOff(res, cut, { 'retry-after': '1' }));
        for (const session of sockets.sessions) session.end(CLOSE_GOING_AWAY, 'going away', cut);
        sockets.stopHeartbeat();
        sockets.wss.close();
        // The 503s go out before the connections close; a client that never reads them is not waited for.
        const flushed = Date.now() + CLOSE_HANDSHAKE_MS;
        while (answered.some((res) => requests.has(res)) && Date.now() < flushed) await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
        server.closeAllConnections();
        // The closing handshakes get a moment; a client that never answers is not waited for.
        const handshakes = Date.now() + CLOSE_HANDSHAKE_MS;
        while (sockets.wss.clients.size > 0 && Date.now() < handshakes) await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
        for (const client of sockets.wss.clients) client.terminate();
        await closed;
        await gateway.close();
      })();
      return closing;
    },
  };
}
