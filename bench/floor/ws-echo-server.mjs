// Floor: a raw `ws` echo server in its own process (no gateway, no Python).
import { WebSocketServer } from 'ws';

const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
wss.on('connection', (ws) => ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary })));
wss.on('listening', () => process.stdout.write(`${wss.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
