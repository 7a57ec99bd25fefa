import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { batchingChild, createLogger, lineLogger } from './logger.js';

/** A destination that keeps each write it is given. */
function writes(): { stream: Writable; chunks: string[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return { stream, chunks };
}

describe('batchingChild', () => {
  it('holds its lines until flush, then writes them all in one write, each line intact', async () => {
    const { stream, chunks } = writes();
    const logger = createLogger('info', stream);
    const batch = batchingChild(logger, {});
    batch.logger.info({ req_id: 'a', status: 200 }, 'http');
    batch.logger.debug({ req_id: 'hidden' }, 'below the level');
    batch.logger.info({ req_id: 'b', status: 404 }, 'http');
    await new Promise((resolve) => setImmediate(resolve));
    expect(chunks).toEqual([]);
    batch.flush();
    batch.flush(); // nothing held: nothing written
    await new Promise((resolve) => setImmediate(resolve));
    expect(chunks).toHaveLength(1);
    const lines = chunks[0]!.split('\n').filter(Boolean).map((line) => JSON.parse(line));
    expect(lines).toMatchObject([
      { level: 30, msg: 'http', req_id: 'a', status: 200, pid: process.pid },
      { level: 30, msg: 'http', req_id: 'b', status: 404, pid: process.pid },
    ]);
  });

  it('writes line by line to a destination that takes each line with its metadata', () => {
    const { stream, chunks } = writes();
    const batch = batchingChild(pino({}, pino.multistream([{ stream }])), {});
    batch.logger.info('one');
    batch.logger.info('two');
    expect(chunks.map((chunk) => JSON.parse(chunk).msg)).toEqual(['one', 'two']);
  });
});

describe('lineLogger', () => {
  it('writes each plain line at its level (info by default) as a JSON line', async () => {
    const { stream, chunks } = writes();
    const log = lineLogger(createLogger('info', stream));
    log('worker started');
    log('GET /x failed: TypeError: boom\n    at f (x.ts:1:1)', 'error');
    log('slow disk', 'warn');
    await new Promise((resolve) => setImmediate(resolve));
    const lines = chunks.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line));
    expect(lines.map((line) => [line.level, line.msg])).toEqual([
      [30, 'worker started'],
      [50, 'GET /x failed: TypeError: boom\n    at f (x.ts:1:1)'],
      [40, 'slow disk'],
    ]);
  });
});
