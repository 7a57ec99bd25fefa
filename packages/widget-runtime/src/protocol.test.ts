import { describe, expect, it } from 'vitest';
import { parseServerFrame } from './protocol.js';

describe('parseServerFrame', () => {
  it('accepts the frames the runtime handles', () => {
    for (const frame of [
      { type: 'connected', id: 1, payload: { uuid: 'u', module: 'm', config: {} } },
      { type: 'widget_state', id: 2, payload: { state: { a: 1 } } },
      { type: 'widget_change', payload: { changes: {} } },
      { type: 'widget_msg', payload: { content: null, buffers: [] } },
      { type: 'widget_reload', payload: { asset: 'esm', etag: '"1"' } },
      { type: 'instance_restarted', payload: { uuid: 'u', reason: 'worker_crashed', message: 'exited with SIGKILL' } },
      { type: 'error', id: 3, payload: { code: 'read_only', message: 'no' } },
      { type: 'event', payload: [1] },
      { type: 'pong', id: 4 },
      { type: 'result', id: 5, payload: null },
      { type: 'stream', id: 6, payload: 1, final: false },
      { type: 'chunk_done', id: 7, payload: { path: 'a/b.bin', bytes_written: 3, mode: 'write' } },
      { type: 'chunk_done', id: 8, payload: { bytes_sent: 0 } },
      { type: 'waiting', id: 9, payload: { job: '123', state: 'PENDING', reason: 'Priority', message: 'Slurm job 123: PENDING (Priority)' } },
    ]) {
      expect(parseServerFrame(JSON.stringify(frame))).toEqual(frame);
    }
  });

  it('ignores unknown types, malformed payloads and non-JSON text', () => {
    expect(parseServerFrame('{"type":"output","payload":1}')).toBeUndefined();
    expect(parseServerFrame('{"type":"chunk_done","id":1,"payload":{}}')).toBeUndefined();
    expect(parseServerFrame('{"type":"stream","id":1,"payload":1}')).toBeUndefined();
    expect(parseServerFrame('{"type":"widget_change","payload":{"changes":[]}}')).toBeUndefined();
    expect(parseServerFrame('{"type":"widget_reload","payload":{"asset":"html"}}')).toBeUndefined();
    expect(parseServerFrame('{"type":"instance_restarted","payload":{"reason":"worker_crashed"}}')).toBeUndefined();
    expect(parseServerFrame('{"type":"waiting","id":1,"payload":{"state":"PENDING"}}')).toBeUndefined();
    expect(parseServerFrame('not json')).toBeUndefined();
    expect(parseServerFrame('[1]')).toBeUndefined();
  });
});
