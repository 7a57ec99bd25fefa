import { describe, expect, it } from 'vitest';
import { withLocks } from './locks.js';

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

describe('source locks', () => {
  it('tasks on one key run one at a time, in arrival order', async () => {
    const log: string[] = [];
    const task = (name: string) => withLocks(['k'], async () => {
      log.push(`${name} in`);
      await tick();
      log.push(`${name} out`);
    });
    await Promise.all([task('a'), task('b'), task('c')]);
    expect(log).toEqual(['a in', 'a out', 'b in', 'b out', 'c in', 'c out']);
  });

  it('tasks on different keys overlap; two keys in either order never deadlock', async () => {
    const log: string[] = [];
    await Promise.all([
      withLocks(['x'], async () => { log.push('x in'); await tick(); log.push('x out'); }),
      withLocks(['y'], async () => { log.push('y in'); await tick(); log.push('y out'); }),
    ]);
    expect(log.slice(0, 2).sort()).toEqual(['x in', 'y in']);
    const both = await Promise.all([withLocks(['p', 'q'], async () => 1), withLocks(['q', 'p'], async () => 2)]);
    expect(both).toEqual([1, 2]);
  });

  it('a failing task releases its locks', async () => {
    await expect(withLocks(['f'], async () => { throw new Error('boom'); })).rejects.toThrow('boom');
    expect(await withLocks(['f'], async () => 'next')).toBe('next');
  });
});
