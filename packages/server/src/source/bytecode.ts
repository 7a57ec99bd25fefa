/** Cached bytecode of a project's Python files: dropped when a source changes so no interpreter runs a stale .pyc. */
import { readdir, unlink } from 'node:fs/promises';
import path from 'node:path';

/** Removes the cached bytecode of a `.py` file (every interpreter's `<stem>.*.pyc`). */
export async function dropBytecode(file: string): Promise<void> {
  const cache = path.join(path.dirname(file), '__pycache__');
  const stem = path.basename(file, '.py');
  const names = await readdir(cache).catch(() => [] as string[]);
  await Promise.all(
    names.filter((name) => name.startsWith(`${stem}.`) && name.endsWith('.pyc')).map((name) => unlink(path.join(cache, name)).catch(() => undefined)),
  );
}
