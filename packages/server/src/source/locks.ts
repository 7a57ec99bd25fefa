/**
 * Per-file async locks: a source write compares the current ETag and replaces the file as one
 * step, so that of concurrent writes with the same If-Match exactly one wins. Locks are keyed by
 * the file's real path and shared by every gateway in the process; they order this process's
 * writes only (an editor writing the same file is not held back).
 */

/** The tail of each key's queue: it settles when the last holder releases. */
const tails = new Map<string, Promise<void>>();

/**
 * Runs `task` holding every key in `keys` (taken in sorted order, so two tasks over the same
 * keys never wait for each other in a cycle), then releases them, whether it succeeded or not.
 */
export async function withLocks<T>(keys: string[], task: () => Promise<T>): Promise<T> {
  const unique = [...new Set(keys)].sort();
  const releases: Array<() => void> = [];
  try {
    for (const key of unique) releases.push(await acquire(key));
    return await task();
  } finally {
    for (const release of releases.reverse()) release();
  }
}

async function acquire(key: string): Promise<() => void> {
  const previous = tails.get(key) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tail = previous.then(() => mine);
  tails.set(key, tail);
  await previous;
  return () => {
    release();
    // The last holder leaves no entry behind.
    if (tails.get(key) === tail) tails.delete(key);
  };
}
