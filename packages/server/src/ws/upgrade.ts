/**
 * WebSocket upgrades on the shared http.Server. An upgrade is authenticated like a REST request
 * (Authorization header, or `Sec-WebSocket-Protocol: bearer, <token>`, answered with `bearer`),
 * its Origin is checked, and unknown paths are refused before any socket exists. A socket
 * admitted by an expiring credential (OIDC or session token) is closed with 4401 at its expiry.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type PerMessageDeflateOptions, type WebSocket } from 'ws';
import { BEARER_SUBPROTOCOL, bearerFromHeader, bearerFromSubprotocol, peerOf, type Authenticator } from '../auth/credentials.js';
import { originAllowed, originRefusal } from '../auth/origin.js';
import { LIMITS } from '../config/constants.js';
import { PorticoError, toPorticoError } from '../errors.js';
import { clientView, trustedProxies } from '../http/forwarded.js';
import { writeRefusal } from '../http/refusals.js';
import type { Gateway } from '../service/gateway.js';
import { ExecutionSession } from './execution-session.js';
import { Session } from './session.js';

export const WS_PATHS = { interfaces: '/v1/interfaces/ws', executions: '/v1/executions/ws' } as const;

/** Close code of a socket whose credential expired (spec: Errors); the client re-authenticates and reconnects. */
export const CLOSE_TOKEN_EXPIRED = 4401;

/** setTimeout's longest delay; later deadlines are reached in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Runs `fn` at `deadline` (ms since the epoch), however far away; returns the cancel function. */
function at(deadline: number, fn: () => void): () => void {
  let timer: NodeJS.Timeout;
  const arm = () => {
    const wait = deadline - Date.now();
    timer = wait > MAX_TIMER_MS ? setTimeout(arm, MAX_TIMER_MS) : setTimeout(fn, Math.max(0, wait));
  };
  arm();
  return () => clearTimeout(timer);
}

function refuse(socket: Duplex, error: PorticoError): void {
  writeRefusal(socket, error, error.code === 'unauthorized' ? ['WWW-Authenticate: Bearer'] : []);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * permessage-deflate as negotiated with --ws-compression on. Without context takeover a socket
 * keeps no zlib history between messages, so a client cannot make it hold more than one
 * message's window; small text frames skip compression (ws's threshold) and binary frames are
 * sent with `compress: false` by the data plane (their bytes are the user's, usually compressed
 * already). The window also caps what a compressing client may make the gateway inflate with.
 */
const DEFLATE: PerMessageDeflateOptions = {
  threshold: LIMITS.wsDeflateThresholdBytes,
  concurrencyLimit: LIMITS.wsDeflateConcurrency,
  serverNoContextTakeover: true,
  clientNoContextTakeover: true,
  serverMaxWindowBits: LIMITS.wsDeflateWindowBits,
  clientMaxWindowBits: LIMITS.wsDeflateWindowBits,
  zlibDeflateOptions: { memLevel: LIMITS.wsDeflateMemLevel, level: 1 },
};

/**
 * Pings every socket each `intervalMs`; a socket that has not answered the previous ping by then
 * is terminated (its close runs the session's teardown like any other). One timer for all
 * sockets, so an idle socket costs no timer of its own. `watch` each new socket; `stop` at shutdown.
 */
function heartbeat(wss: WebSocketServer, intervalMs: number, gateway: Gateway): { watch: (ws: WebSocket) => void; stop: () => void } {
  const awaitingPong = new WeakSet<WebSocket>();
  if (!(intervalMs > 0)) return { watch: () => undefined, stop: () => undefined };
  const timer = setInterval(function pingEverySocket() {
    for (const ws of wss.clients) {
      if (awaitingPong.has(ws)) {
        gateway.logger.info({ close_code: 1006 }, 'socket closed: no pong to the last heartbeat ping');
        ws.terminate();
        continue;
      }
      awaitingPong.add(ws);
      ws.ping();
    }
  }, intervalMs);
  timer.unref();
  return {
    watch: (ws) => ws.on('pong', () => awaitingPong.delete(ws)),
    stop: () => clearInterval(timer),
  };
}

export interface AttachedSockets {
  wss: WebSocketServer;
  /** Stops pinging (the gateway is stopping). */
  stopHeartbeat: () => void;
  /** The live sessions (a shutdown drains and closes them). */
  sessions: Set<Session | ExecutionSession>;
  /** Set when the gateway stops: new upgrades are refused with 503 shutting_down. */
  stopping: boolean;
}

export function attachWebSockets(server: Server, gateway: Gateway, auth: Authenticator, log: (line: string) => void): AttachedSockets {
  const attached: AttachedSockets = { wss: undefined as unknown as WebSocketServer, stopHeartbeat: () => undefined, sessions: new Set(), stopping: false };
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: LIMITS.maxMessageBytes,
    perMessageDeflate: gateway.options.wsCompression ? DEFLATE : false,
    handleProtocols: (offered) => (offered.has(BEARER_SUBPROTOCOL) ? BEARER_SUBPROTOCOL : false),
  });

  attached.wss = wss;
  const trusted = trustedProxies(gateway.options.trustedProxies);
  const heartbeats = heartbeat(wss, gateway.options.wsHeartbeatMs, gateway);
  attached.stopHeartbeat = heartbeats.stop;
  server.on('upgrade', async function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    socket.on('error', () => socket.destroy());
    const opened = performance.now();
    const given = header(req, 'x-request-id') ?? '';
    const requestId = /^[A-Za-z0-9._-]{1,64}$/.test(given) ? given : randomUUID();
    const path = (req.url ?? '/').split('?')[0];
    const { client, host, proto } = clientView(req, trusted);
    try {
      if (attached.stopping) throw new PorticoError('shutting_down', 'The gateway is shutting down');
      const url = new URL(req.url ?? '/', 'http://gateway');
      const Endpoint = url.pathname === WS_PATHS.interfaces ? Session : url.pathname === WS_PATHS.executions ? ExecutionSession : undefined;
      const endpoint = Endpoint === Session ? 'interfaces' : 'executions';
      if (!Endpoint) throw new PorticoError('not_found', `No WebSocket endpoint at ${url.pathname}`);
      if (!originAllowed(header(req, 'origin'), host, gateway.options.allowOrigins, proto)) {
        throw new PorticoError('forbidden', originRefusal(header(req, 'origin')));
      }
      const token = bearerFromHeader(header(req, 'authorization')) ?? bearerFromSubprotocol(header(req, 'sec-websocket-protocol'));
      const principal = await auth.authenticate(token, peerOf((name) => header(req, name)));
      // Admitted only by the clock-skew tolerance: a socket that would close at once is refused instead.
      if (principal.expiresAt !== undefined && principal.expiresAt <= Date.now()) throw new PorticoError('unauthorized', 'Token expired');
      const binding = {
        project: url.searchParams.get('project') ?? header(req, 'x-service-project'),
        python: url.searchParams.get('python') ?? header(req, 'x-service-python'),
        user: header(req, 'x-service-user'),
        principal,
      };
      wss.handleUpgrade(req, socket, head, (ws) => {
        heartbeats.watch(ws);
        const session = new Endpoint(ws, gateway, binding, log);
        attached.sessions.add(session);
        gateway.metrics.sockets.inc({ endpoint });
        ws.once('close', (code) => {
          attached.sessions.delete(session);
          gateway.metrics.sockets.dec({ endpoint });
          const user = principal.subject ?? binding.user;
          if (gateway.options.accessLog) gateway.logger.info({ req_id: requestId, client, socket: url.pathname, status: 101, close_code: code, frames: session.frames, duration_ms: Math.round(performance.now() - opened), user, auth: principal.kind }, 'socket');
        });
        if (principal.expiresAt !== undefined) {
          const cancel = at(principal.expiresAt, () => session.end(CLOSE_TOKEN_EXPIRED, 'token expired'));
          ws.once('close', cancel);
        }
      });
    } catch (err) {
      const error = toPorticoError(err);
      gateway.logger.info({ req_id: requestId, client, socket: path, status: error.status, code: error.code, duration_ms: Math.round(performance.now() - opened) }, 'socket refused');
      refuse(socket, error);
    }
  });
  return attached;
}
