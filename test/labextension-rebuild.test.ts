/**
 * A build never replaces files a running command is reading (issue 43): `npm test` (and `npm
 * install`, `npm start`) rebuild the lab extension, and a `portico-lab install` run meanwhile must
 * still copy one whole build. The builder writes beside the current build and swaps the
 * `labextension` link when it is done (packages/labextension/scripts/build-labextension.js); the
 * installer resolves the link once. Here the real builder runs while the real installer copies
 * the extension again and again, and every copy is checked whole.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { ROOT } from './helpers.js';

const PACKAGE = path.join(ROOT, 'packages/labextension');
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** Every file under dir, relative, sorted. */
async function files(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name))).sort();
}

it('portico-lab install run during a rebuild copies one whole build, every time', { timeout: 240_000 }, async () => {
  const before = await realpath(path.join(PACKAGE, 'labextension'));
  const build = spawn(process.execPath, ['scripts/build-labextension.js'], { cwd: PACKAGE, stdio: 'ignore' });
  const built = new Promise<number | null>((resolve) => build.on('exit', (code) => resolve(code)));
  let done = false;
  void built.then(() => (done = true));
  const copies: string[] = [];
  // Bounded: until the build ends, at most 200 installs.
  while (!done && copies.length < 200) {
    const prefix = await mkdtemp(path.join(tmpdir(), 'portico-lab-during-build-'));
    dirs.push(prefix);
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(PACKAGE, 'bin/portico-lab.js'), 'install', '--prefix', prefix], { cwd: ROOT });
    expect(stdout).toContain('Installed');
    copies.push(path.join(prefix, 'share/jupyter/labextensions/@portico/labextension'));
  }
  expect(await built).toBe(0);
  expect(copies.length).toBeGreaterThan(2);
  const after = await realpath(path.join(PACKAGE, 'labextension'));
  expect(after, 'the build swapped the link to a new build').not.toBe(before);
  // Each copy is the build before or the build after, whole (the previous build is kept until the
  // next one, for the readers that started on it); never a mixture or a part.
  const builds = [await files(before), await files(after)].map((list) => JSON.stringify(list));
  expect(JSON.parse(builds[1]!)).toContain('package.json');
  for (const copy of copies) {
    const pkg = JSON.parse(await readFile(path.join(copy, 'package.json'), 'utf8'));
    const copied = (await files(copy)).filter((f) => f !== 'install.json' && f !== '.portico-lab.json');
    expect(builds, copy).toContain(JSON.stringify(copied));
    expect(copied).toContain(pkg.jupyterlab._build.load.replace(/^\.\//, ''));
  }
});
