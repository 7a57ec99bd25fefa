/**
 * Group commit for the PostgreSQL store: calls that arrive while a statement is running are
 * queued and sent together as one statement once it returns. An idle gateway sends what one
 * turn of the event loop submitted at that turn's end (no added wait); a busy one sends one round
 * trip and one commit (one WAL flush) for many calls instead of one each. Profiling REST creates
 * with 16 in flight showed the gateway's per-statement work (socket writes, result parsing) and
 * PostgreSQL's commit per create as the cost that batching removes.
 */

interface Pending<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
}

export class Batcher<T, R> {
  private readonly queue: Array<Pending<T, R>> = [];
  private running = 0;

  /**
   * `run` answers a batch with one result per item, in order. At most `statements` batches run at
   * once, each of at most `rows` items. When a batch of several fails with an error for which
   * `perItem` holds (one item may be its cause), each of its items runs again on its own, so
   * that only the items that fail alone fail.
   */
  constructor(
    private readonly run: (items: T[]) => Promise<R[]>,
    private readonly rows: number,
    private readonly statements: number,
    private readonly perItem: (err: unknown) => boolean,
  ) {}

  /**
   * Resolves with the item's result once the statement that carried it returned. The items
   * submitted in one synchronous turn (a call's lookups of its target and of its record, say) go
   * in one statement even when the pool is idle: the pump waits for the turn's end, a microtask.
   */
  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.queue.length === 1) queueMicrotask(() => this.pump());
    });
  }

  private pump(): void {
    while (this.running < this.statements && this.queue.length) {
      const batch = this.queue.splice(0, this.rows);
      this.running++;
      this.run(batch.map(({ item }) => item))
        .then(
          (results) => batch.forEach(({ resolve }, i) => resolve(results[i]!)),
          async (err: unknown) => {
            if (batch.length === 1 || !this.perItem(err)) {
              batch.forEach(({ reject }) => reject(err));
              return;
            }
            // One by one, and within this batch's slot: a failed batch of hundreds must not
            // become hundreds of statements at once, queued ahead of every other query on the pool.
            for (const { item, resolve, reject } of batch) await this.run([item]).then((results) => resolve(results[0]!), reject);
          },
        )
        .finally(() => {
          this.running--;
          this.pump();
        });
    }
  }
}
