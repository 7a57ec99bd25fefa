/**
 * Answers for what never becomes a Koa request, each with the JSON error body every other error
 * has, `Connection: close`, and an access line: a request Node's HTTP parser refuses
 * (`clientError`: 431 `headers_too_large` past 16 KiB of request line and headers, 413
 * `payload_too_large` for chunk extensions past 16 KiB, 408 `request_timeout`, 501
 * `not_implemented` for a method HTTP does not know, else 400 `bad_request`), and CONNECT (501
 * `not_implemented`: the gateway is no proxy; without a listener Node drops the connection).
 */
import type { Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { PorticoError } from '../errors.js';
import type { AccessLog } from './access-log.js';

/** How long what a client still sends after a refusal is read and dropped, so that it reads the answer rather than a reset. */
const LINGER_MS = 2000;

/** `HTTP/1.1 <status> <code>` with the error's JSON body, written straight to `socket`, which then closes. */
export function writeRefusal(socket: Duplex, error: PorticoError, headers: string[] = []): void {
  // A connection Node handed over (CONNECT, an upgrade) has no error listener left: a reset must not throw.
  socket.on('error', () => socket.destroy());
  const body = JSON.stringify(error.toBody());
  const head = [
    `HTTP/1.1 ${error.status} ${error.code}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...headers,
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  socket.on('data', () => undefined);
  socket.once('end', () => socket.destroy());
  const linger = setTimeout(() => socket.destroy(), LINGER_MS);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
}

/** The refusal of a request Node's parser gave up on (`err.code` is llhttp's). */
function parserRefusal(err: Error & { code?: string }, method: string | undefined): PorticoError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new PorticoError('headers_too_large', 'The request line and header fields exceed 16 KiB');
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new PorticoError('payload_too_large', 'The chunk extensions of the request body exceed 16 KiB');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new PorticoError('request_timeout', 'The request did not arrive in time');
    case 'HPE_INVALID_METHOD':
      return new PorticoError('not_implemented', `The gateway does not implement the method${method ? ` '${method}'` : ''}`);
    default:
      return new PorticoError('bad_request', `The HTTP request cannot be parsed: ${err.message.replace(/^Parse Error: /, '')}`);
  }
}

/** Method and path from the start of what the parser was reading, for the access line (nothing when it is not a request line). */
function requestLine(packet: unknown): { method?: string; path?: string } {
  if (!Buffer.isBuffer(packet)) return {};
  const match = /^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}) ([^\s?#]{1,2048})/.exec(packet.subarray(0, 2100).toString('latin1'));
  return match ? { method: match[1]!, path: match[2]! } : {};
}

export function answerRefusals(server: Server, access: AccessLog): void {
  const answered = new WeakSet<Duplex>();
  server.on('clientError', function refuseUnparsable(err: Error & { code?: string; rawPacket?: unknown }, socket: Duplex) {
    // The parser is fed what still comes and fails again: the first answer is the one.
    if (answered.has(socket)) return;
    answered.add(socket);
    // A response under way on this connection (its request's body was malformed or too slow):
    // the refusal is its answer, unless that has begun, and then only closing is left.
    const response = (socket as { _httpMessage?: ServerResponse })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || response?.headersSent) {
      socket.destroy();
      return;
    }
    const { method, path } = requestLine(err.rawPacket);
    const error = parserRefusal(err, method);
    if (response && access.cutOff(response, error)) return;
    writeRefusal(socket, error, [`X-Request-Id: ${access.refused({ method, path }, error)}`]);
  });
  server.on('connect', function refuseTunnel(req, socket: Duplex) {
    const error = new PorticoError('not_implemented', 'The gateway is no proxy: CONNECT is not implemented');
    writeRefusal(socket, error, [`X-Request-Id: ${access.refused({ method: req.method, path: req.url, headers: req.headers }, error)}`]);
  });
}
