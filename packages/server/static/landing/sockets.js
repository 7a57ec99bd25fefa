// The page's WebSocket client, for /v1/interfaces/ws (calls, streams, events of an interface) and
// /v1/executions/ws (a run's output, status and events): connect, request/answer by id, pushes.
import { apiToken, Problem, problemOf, url } from './api.js';

const wsBase = url.replace(/^http/, 'ws');

/**
 * One socket, connected: `request(frame, onFrame)` sends a frame with a fresh id and hands every
 * answer carrying it to `onFrame`; frames without an id (events, output, status) go to `onPush`.
 */
export function openSocket(path, connectFrame) {
  return new Promise((resolve, reject) => {
    const token = apiToken();
    const ws = new WebSocket(wsBase + path, token ? ['bearer', token] : []);
    const handlers = new Map();
    let next = 1;
    const sock = {
      info: null,
      open: false,
      onPush: () => undefined,
      onClose: () => undefined,
      request(frame, onFrame) {
        const id = `r${next++}`;
        handlers.set(id, onFrame);
        ws.send(JSON.stringify({ ...frame, id }));
        return id;
      },
      done(id) {
        handlers.delete(id);
      },
      close() {
        if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'close', id: 'close' }));
        ws.close();
      },
    };
    ws.onopen = () => ws.send(JSON.stringify({ ...connectFrame, id: 'connect' }));
    ws.onmessage = ({ data }) => {
      if (typeof data !== 'string') return; // this page asks for no binary buffers
      const frame = JSON.parse(data);
      if (frame.id === 'connect') {
        if (frame.type === 'connected') {
          sock.info = frame.payload;
          sock.open = true;
          resolve(sock);
        } else reject(problemOf(frame.payload));
        return;
      }
      const handler = frame.id !== undefined ? handlers.get(frame.id) : undefined;
      if (handler) handler(frame);
      else sock.onPush(frame);
    };
    ws.onclose = ({ code, reason }) => {
      const wasOpen = sock.open;
      sock.open = false;
      const gone = new Problem('closed', `The connection closed (${code}${reason ? `: ${reason}` : ''}).`);
      if (!wasOpen) reject(gone);
      for (const handler of handlers.values()) handler({ type: 'error', payload: { code: gone.code, message: gone.message } });
      handlers.clear();
      if (wasOpen) sock.onClose();
    };
  });
}

