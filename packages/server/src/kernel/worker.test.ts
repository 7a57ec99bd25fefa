import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { callHeader, Worker, type CallHandlers, type CallOutcome, type CallRequest } from './worker.js';

const python = process.env.PORTICO_PYTHON || 'python3';

/** A call's outcome as a promise (the service's callForResult is the gateway's own). */
function called(worker: Worker, req: CallRequest, handlers: Partial<CallHandlers> = {}): Promise<CallOutcome> {
  return new Promise((resolve) => worker.call(req, { ...handlers, onSettled: (outcome) => (handlers.onSettled?.(outcome), resolve(outcome)) }));
}

describe('callHeader', () => {
  it('writes exactly what JSON.stringify writes of the call header, whatever the request', () => {
    const json = fc.jsonValue();
    const object = fc.dictionary(fc.string(), json);
    fc.assert(
      fc.property(
        fc.record({ id: fc.nat(), uuid: fc.string(), module: fc.string(), config: object, method: fc.string(), args: fc.array(json), kwargs: object, stream: fc.boolean() }),
        ({ id, uuid, module, config, method, args, kwargs, stream }) => {
          const req: CallRequest = { target: { uuid, module, config }, method, args, kwargs };
          // The reference: the request spread into a header (a field added to CallRequest lands here at once).
          const { target, ...fields } = req;
          expect(callHeader(id, req, stream)).toBe(JSON.stringify({ op: 'call', id, ...target, ...fields, stream }));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('a target given another uuid, module or config after a call is sent with it', () => {
    const target: { uuid: string; module: string; config: Record<string, unknown> } = { uuid: 'u', module: 'm', config: { a: 1 } };
    const header = (id: number) => JSON.parse(callHeader(id, { target, method: 'f', args: [], kwargs: {} }, false)) as Record<string, unknown>;
    expect(header(1)).toMatchObject({ uuid: 'u', module: 'm', config: { a: 1 } });
    target.config = { a: 2 };
    expect(header(2)).toMatchObject({ uuid: 'u', module: 'm', config: { a: 2 } });
    target.uuid = 'v';
    target.module = 'n';
    expect(header(3)).toMatchObject({ uuid: 'v', module: 'n', config: { a: 2 } });
  });
});

describe('worker process', () => {
  let project: string | undefined;
  afterAll(async () => {
    if (project) await rm(project, { recursive: true, force: true });
  });

  it('a worker stopped while its reply channel is still opening spawns nothing and fails with worker_unavailable', async () => {
    project = await mkdtemp(path.join(tmpdir(), 'portico-worker-test-'));
    const worker = new Worker({ project, python });
    const started = worker.start();
    await worker.stop();
    await expect(started).rejects.toMatchObject({ code: 'worker_unavailable' });
    expect(worker.alive).toBe(false);
    expect(worker.pid).toBeUndefined();
  });

  it('a started worker answers through its reply channel, and stops', async () => {
    project ??= await mkdtemp(path.join(tmpdir(), 'portico-worker-test-'));
    const worker = new Worker({ project, python });
    await worker.start();
    expect(worker.alive).toBe(true);
    expect(worker.pid).toBeGreaterThan(0);
    await worker.stop();
    expect(worker.alive).toBe(false);
  });

  it('a resolution is reused for the life of its worker: an edit made outside the gateway shows after invalidate, or in the next worker', async () => {
    project ??= await mkdtemp(path.join(tmpdir(), 'portico-worker-test-'));
    const file = path.join(project, 'tally.py');
    let edits = 0;
    // Each edit changes the file's size and moves its mtime on, so neither Python's import check nor a stale .pyc can hide it.
    const edit = async (start: string) => {
      await writeFile(file, ['from portico import Interface', '', 'class Tally(Interface):', '    class Config:', `        start: int = ${start}`, ''].join('\n'));
      const later = new Date(Date.now() + 10_000 * ++edits);
      await utimes(file, later, later);
    };
    await edit('1');
    const first = new Worker({ project, python });
    await first.start();
    try {
      expect((await first.resolve('tally', [])).config).toEqual({ start: 1 });
      await edit('22');
      expect((await first.resolve('tally', [])).config).toEqual({ start: 1 });
      expect(await first.invalidate(['tally'])).toEqual([]);
      expect((await first.resolve('tally', [])).config).toEqual({ start: 22 });
      await edit('333');
      expect((await first.resolve('tally', [])).config).toEqual({ start: 22 });
    } finally {
      await first.stop();
    }
    const next = new Worker({ project, python });
    await next.start();
    try {
      expect((await next.resolve('tally', [])).config).toEqual({ start: 333 });
    } finally {
      await next.stop();
    }
  });

  it('a lone call is written to the worker in the turn it was made; calls made while others are in flight share one later write, in order', async () => {
    project ??= await mkdtemp(path.join(tmpdir(), 'portico-worker-test-'));
    await writeFile(path.join(project, 'echoer.py'), ['from portico import Interface', '', 'class Echoer(Interface):', '    def echo(self, x):', '        return x', ''].join('\n'));
    const worker = new Worker({ project, python });
    await worker.start();
    try {
      const { config } = await worker.resolve('echoer', []);
      const toWorker = (worker as unknown as { bridge: { toWorker: { write: (chunk: Buffer) => boolean } } }).bridge.toWorker;
      const writes: string[] = [];
      const write = toWorker.write.bind(toWorker);
      toWorker.write = (chunk: Buffer) => {
        writes.push(chunk.toString('latin1'));
        return write(chunk);
      };
      const call = (x: number) => called(worker, { target: { uuid: 'u-echoer', module: 'echoer', config }, method: 'echo', args: [x], kwargs: {} });
      const lone = call(1);
      expect(writes).toHaveLength(1); // before this test yields to the event loop
      expect(writes[0]).toContain('"args":[1]');
      const more = [call(2), call(3)];
      expect(writes).toHaveLength(1); // the worker is busy with call 1: these wait for the turn's end
      const outcomes = await Promise.all([lone, ...more]);
      expect(outcomes.map((o) => o.ok && !o.streamed && o.payload)).toEqual([1, 2, 3]);
      expect(writes).toHaveLength(2);
      expect(writes[1]!.indexOf('"args":[2]')).toBeLessThan(writes[1]!.indexOf('"args":[3]'));
      expect(writes[1]!.indexOf('"args":[2]')).toBeGreaterThanOrEqual(0);

      // A request JSON cannot carry is refused to its caller and leaves nothing in flight: the
      // next call is a lone one again (written at once), and nothing settles the refused one later.
      let settledLater = 0;
      const cyclic: unknown[] = [];
      cyclic.push(cyclic);
      expect(() =>
        worker.call({ target: { uuid: 'u-echoer', module: 'echoer', config }, method: 'echo', args: [cyclic], kwargs: {} }, { onSettled: () => settledLater++, timeoutMs: 50 }),
      ).toThrow(/circular/i);
      const before = writes.length;
      const after = call(4);
      expect(writes).toHaveLength(before + 1);
      expect(await after).toMatchObject({ ok: true, payload: 4 });
      await new Promise((r) => setTimeout(r, 600)); // past the refused call's deadline and a sweep
      expect(settledLater).toBe(0);
    } finally {
      await worker.stop();
    }
  });
});
