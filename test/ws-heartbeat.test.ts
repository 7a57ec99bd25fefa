/** WebSocket heartbeats: the gateway pings every socket; a dead peer is closed, a live one is never touched. */
import { afterAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { cleanup, Client, gateway } from './helpers.js';

afterAll(cleanup);

/** A socket whose peer stops answering pings (a laptop gone to sleep): ws's automatic pong is off. */
function silentPeer(url: string): Promise<WebSocket> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/interfaces/ws`, { autoPong: false });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

const closed = (ws: WebSocket) => new Promise<number>((resolve) => (ws.readyState === WebSocket.CLOSED ? resolve(1006) : ws.once('close', (code) => resolve(code))));
const pings = (ws: WebSocket, n: number) =>
  new Promise<void>((resolve) => {
    let seen = 0;
    ws.on('ping', () => ++seen === n && resolve());
  });

describe('heartbeats', () => {
  it('a peer that stops answering pings is closed; a live one stays connected and keeps calling', async () => {
    const g = await gateway({ wsHeartbeatMs: 100 });
    const live = await Client.open(g.url);
    await live.connect('counter');
    const livePings = pings(live.ws, 4);
    const dead = await silentPeer(g.url);

    expect(await closed(dead)).toBe(1006); // terminated: no closing handshake with a dead peer
    await livePings; // pinged again after the dead one went: every ping was answered
    expect(live.ws.readyState).toBe(WebSocket.OPEN);
    expect((await live.request({ type: 'call', method: 'value' })).type).toBe('result');
  });

});
