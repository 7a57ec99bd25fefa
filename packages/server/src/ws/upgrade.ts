/**
 * WebSocket upgrades on the shared http.Server. An upgrade is authenticated like a REST request
 * (Authorization header, or `Sec-WebSocket-Protocol: bearer, <token>`, answered with `bearer`),
 * its Origin is checked, and unknown paths are refused before any socket exists.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { BEARER_SUBPROTOCOL, bearerFromHeader, bearerFromSubprotocol, type Authenticator } from '../auth/credentials.js';
import { originAllowed } from '../auth/origin.js';
import { LIMITS } from '../config/constants.js';
import { PorticoError, toPorticoError } from '../errors.js';
import type { Gateway } from '../service/gateway.js';
import { ExecutionSession } from './execution-session.js';
import { Session } from './session.js';

export const WS_PATHS = { interfaces: '/v1/interfaces/ws', executions: '/v1/executions/ws' } as const;

function refuse(socket: Duplex, error: PorticoError): void {
  const body = JSON.stringify({ detail: error.toDetail() });
  const lines = [
    `HTTP/1.1 ${error.status} ${error.code}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
  ];
  if (error.code === 'unauthorized') lines.push('WWW-Authenticate: Bearer');
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function attachWebSockets(server: Server, gateway: Gateway, auth: Authenticator, log: (line: string) => void): WebSocketServer {
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: LIMITS.maxMessageBytes,
    perMessageDeflate: false,
    handleProtocols: (offered) => (offered.has(BEARER_SUBPROTOCOL) ? BEARER_SUBPROTOCOL : false),
  });

  server.on('upgrade', function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    socket.on('error', () => socket.destroy());
    try {
      const url = new URL(req.url ?? '/', 'http://gateway');
      const Endpoint = url.pathname === WS_PATHS.interfaces ? Session : url.pathname === WS_PATHS.executions ? ExecutionSession : undefined;
      if (!Endpoint) throw new PorticoError('not_found', `No WebSocket endpoint at ${url.pathname}`);
      if (!originAllowed(header(req, 'origin'), header(req, 'host'), gateway.options.allowOrigins)) {
        throw new PorticoError('forbidden', `Origin '${header(req, 'origin')}' is not allowed`);
      }
      const token = bearerFromHeader(header(req, 'authorization')) ?? bearerFromSubprotocol(header(req, 'sec-websocket-protocol'));
      const principal = auth.authenticate(token);
      const binding = {
        project: url.searchParams.get('project') ?? header(req, 'x-service-project'),
        python: url.searchParams.get('python') ?? header(req, 'x-service-python'),
        user: principal.subject ?? header(req, 'x-service-user'),
      };
      wss.handleUpgrade(req, socket, head, (ws) => {
        new Endpoint(ws, gateway, binding, log);
      });
    } catch (err) {
      refuse(socket, toPorticoError(err));
    }
  });
  return wss;
}
