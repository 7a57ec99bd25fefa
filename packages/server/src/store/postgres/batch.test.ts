import { describe, expect, it } from 'vitest';
import { Batcher } from './batch.js';

/** A batcher whose statements are recorded and answered when the test says so. */
function recording() {
  const statements: string[][] = [];
  const answers: Array<() => void> = [];
  const batcher = new Batcher<string, string>(
    (items) => {
      statements.push(items);
      return new Promise((resolve) => answers.push(() => resolve(items.map((item) => `${item}!`))));
    },
    3,
    1,
    () => false,
  );
  return { batcher, statements, answer: () => answers.shift()!() };
}

describe('Batcher', () => {
  it('sends what one turn submits as one statement, even when idle, each caller getting its own answer', async () => {
    const { batcher, statements, answer } = recording();
    const both = Promise.all([batcher.submit('target'), batcher.submit('record')]);
    await Promise.resolve();
    expect(statements).toEqual([['target', 'record']]);
    answer();
    expect(await both).toEqual(['target!', 'record!']);
  });

  it('queues what comes while a statement runs, and sends it in batches of at most its rows once that returns', async () => {
    const { batcher, statements, answer } = recording();
    const first = batcher.submit('a');
    await Promise.resolve();
    const later = ['b', 'c', 'd', 'e'].map((item) => batcher.submit(item));
    await Promise.resolve();
    expect(statements).toEqual([['a']]);
    answer();
    expect(await first).toBe('a!');
    await expect.poll(() => statements).toEqual([['a'], ['b', 'c', 'd']]);
    answer();
    await expect.poll(() => statements).toEqual([['a'], ['b', 'c', 'd'], ['e']]);
    answer();
    expect(await Promise.all(later)).toEqual(['b!', 'c!', 'd!', 'e!']);
  });
});
