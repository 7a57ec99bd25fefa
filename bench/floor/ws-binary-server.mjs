// Floor for the data plane: a raw `ws` server in its own process (no gateway, no disk, no Python).
// Text `expect <n>`: count binary bytes and answer `got <n>` once n arrived (client → server).
// Text `send <n> <frame>`: send n bytes as binary frames of `frame` bytes, pacing on the
// socket's buffer like the gateway does, then `done` (server → client).
import { WebSocketServer } from 'ws';

const HIGH_WATER = 4 * 1024 * 1024;
const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
wss.on('connection', (ws) => {
  let expected = 0;
  let received = 0;
  ws.on('message', async (data, isBinary) => {
    if (isBinary) {
      received += data.length;
      if (received >= expected) ws.send(`got ${received}`);
      return;
    }
    const [command, a, b] = String(data).split(' ');
    if (command === 'expect') {
      expected = Number(a);
      received = 0;
    } else if (command === 'send') {
      const total = Number(a);
      const block = Buffer.alloc(Number(b), 7);
      for (let sent = 0; sent < total; sent += block.length) {
        const part = block.subarray(0, Math.min(block.length, total - sent));
        if (ws.bufferedAmount < HIGH_WATER) ws.send(part);
        else await new Promise((resolve) => ws.send(part, resolve));
      }
      ws.send('done');
    }
  });
});
wss.on('listening', () => process.stdout.write(`${wss.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
