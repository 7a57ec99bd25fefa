/**
 * The bundled Python package (`packages/server/python`: `portico`, with `portico.client`) as a
 * wheel pip installs, built by its own build backend (`portico_build.py`, the same one
 * `pip install packages/server/python` runs) with the gateway's interpreter, so one builder makes
 * both. The wheel is reproducible: a version has one sha256 wherever it is built.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PorticoError } from '../errors.js';
import { PYTHON_DIR } from './worker.js';

export interface Wheel {
  /** `portico-<version>-py3-none-any.whl`. */
  filename: string;
  bytes: Buffer;
  /** Hex SHA-256 of the bytes. */
  sha256: string;
}

/** How long building the wheel may take (it reads and zips some 60 files). */
const BUILD_TIMEOUT_MS = 60_000;

/** Builds the wheel with `python`; `worker_unavailable` when that interpreter cannot. */
export async function buildWheel(python: string): Promise<Wheel> {
  const dir = await mkdtemp(path.join(tmpdir(), 'portico-wheel-'));
  try {
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(python, [path.join(PYTHON_DIR, 'portico_build.py'), dir], { timeout: BUILD_TIMEOUT_MS, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } }, (err, out, errOut) =>
        err ? reject(new PorticoError('worker_unavailable', 'The Python package could not be built', { internal: `${python} portico_build.py: ${err.message}\n${errOut}` })) : resolve(out),
      );
    });
    const filename = stdout.trim().split('\n').pop() ?? '';
    const bytes = await readFile(path.join(dir, filename));
    return { filename, bytes, sha256: createHash('sha256').update(bytes).digest('hex') };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
