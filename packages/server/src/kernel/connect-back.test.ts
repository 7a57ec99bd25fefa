import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectBack } from './connect-back.js';

function frame(header: object): Buffer {
  const json = Buffer.from(JSON.stringify(header));
  const prefix = Buffer.alloc(8);
  prefix.writeUInt32BE(json.length, 0);
  return Buffer.concat([prefix, json]);
}

/** Connects, writes `bytes`, and resolves with whether the listener closed the connection on it. */
async function attempt(address: string, bytes: Buffer): Promise<{ socket: net.Socket; closed: Promise<boolean> }> {
  const [host, port] = address.split(':');
  const socket = net.connect({ host, port: Number(port) });
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(bytes);
  const closed = new Promise<boolean>((resolve) => {
    socket.once('close', () => resolve(true));
    setTimeout(() => resolve(false), 500);
  });
  return { socket, closed };
}

const open: ConnectBack[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

describe('the connect-back listener', () => {
  it('a worker with its id and secret attaches once, with what it sent after its hello; a replay, a wrong secret and garbage are refused and logged', async () => {
    const logs: string[] = [];
    const listener = new ConnectBack('127.0.0.1', 0, (line) => logs.push(line));
    open.push(listener);
    const address = await listener.address();
    expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
    const expected = listener.expect();
    const [id, secret] = expected.token.split('.');
    const hello = frame({ op: 'hello', worker: id, secret, host: 'node1', job: '42' });
    const ready = frame({ op: 'ready', pid: 7 });

    const good = await attempt(address, Buffer.concat([hello, ready]));
    const worker = await expected.connected;
    expect([worker.host, worker.job]).toEqual(['node1', '42']);
    expect(worker.leftover).toEqual(ready);
    expect(await good.closed).toBe(false);

    expect(await (await attempt(address, hello)).closed).toBe(true); // the secret was good once
    const other = listener.expect();
    expect(await (await attempt(address, frame({ op: 'hello', worker: other.token.split('.')[0], secret: 'x'.repeat(43) }))).closed).toBe(true);
    expect(await (await attempt(address, Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'))).closed).toBe(true);
    expect(logs.filter((l) => l.startsWith('refused a worker connecting back from 127.0.0.1:'))).toHaveLength(3);
    expect(logs.some((l) => l.endsWith('wrong secret'))).toBe(true);
    expect(listener.refused).toBe(3);
    good.socket.destroy();
    worker.socket.destroy();
  });
});
