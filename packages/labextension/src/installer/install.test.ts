import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main, type Io } from './cli.js';
import { extensionDir, INSTALL_INFO, install, MANIFEST, uninstall } from './install.js';
import { systemEnvironment } from './paths.js';

let tmp: string;

/** A prebuilt folder as the builder writes it: package.json with jupyterlab._build, static/, schemas/. */
function prebuilt(dir: string, build = 'static/remoteEntry.aaa.js'): string {
  mkdirSync(path.join(dir, 'static'), { recursive: true });
  mkdirSync(path.join(dir, 'schemas', '@portico', 'labextension'), { recursive: true });
  const pkg = { name: '@portico/labextension', version: '0.1.0', jupyterlab: { _build: { load: build, extension: './extension' } } };
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify(pkg));
  writeFileSync(path.join(dir, build), '// entry');
  writeFileSync(path.join(dir, 'static', 'style.js'), '// style');
  writeFileSync(path.join(dir, 'schemas', '@portico', 'labextension', 'settings.json'), '{}');
  return dir;
}

/** Runs the CLI against the real file system with JUPYTER_DATA_DIR = dataDir and no jupyter on PATH. */
function cli(argv: string[], source: string, dataDir: string) {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = {
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    environment: systemEnvironment({ JUPYTER_DATA_DIR: dataDir, PATH: '', HOME: path.join(tmp, 'home') }),
    source,
  };
  const code = main(argv, io);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** Every path under dir, relative, sorted. */
function tree(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
}

beforeEach(() => {
  tmp = mkdtempSync(path.join(tmpdir(), 'portico-lab-test-'));
});

afterEach(() => {
  rmSync(tmp, { recursive: true, force: true });
});

describe('portico-lab install / uninstall', () => {
  it('round trip: install lays out the folder JupyterLab expects, uninstall leaves no trace', () => {
    const source = prebuilt(path.join(tmp, 'build'));
    const dataDir = path.join(tmp, 'jupyter-data'); // does not exist yet

    const installed = cli(['install'], source, dataDir);
    expect(installed.code).toBe(0);
    expect(installed.out).toContain('(from JUPYTER_DATA_DIR)');
    const target = path.join(dataDir, 'labextensions', '@portico', 'labextension');
    expect(tree(target)).toEqual(
      [
        MANIFEST,
        'install.json',
        'package.json',
        'schemas',
        'schemas/@portico',
        'schemas/@portico/labextension',
        'schemas/@portico/labextension/settings.json',
        'static',
        'static/remoteEntry.aaa.js',
        'static/style.js',
      ].sort(),
    );
    expect(JSON.parse(readFileSync(path.join(target, 'install.json'), 'utf8'))).toEqual(INSTALL_INFO);
    expect(JSON.parse(readFileSync(path.join(target, 'package.json'), 'utf8')).jupyterlab._build.load).toBe('static/remoteEntry.aaa.js');

    const status = cli(['status'], source, dataDir);
    expect(status.code).toBe(0);
    expect(status.out).toMatch(/labextension {2}0\.1\.0 {2}current {2}\(portico-lab\)/);

    const removed = cli(['uninstall'], source, dataDir);
    expect(removed.code).toBe(0);
    expect(existsSync(dataDir)).toBe(false); // install created it, uninstall took it away again
    expect(tree(tmp)).toEqual(['build', ...tree(source).map((entry) => `build/${entry}`)].sort());
  });

  it('a source that is a link (./labextension, swapped by each build) is copied from the build it names, which stays untouched', () => {
    const build = prebuilt(path.join(tmp, '.builds', 'build-1', 'labextension'));
    const before = tree(build);
    const link = path.join(tmp, 'labextension');
    symlinkSync(path.join('.builds', 'build-1', 'labextension'), link, 'dir');
    const dataDir = path.join(tmp, 'jupyter-data');
    expect(cli(['install'], link, dataDir).code).toBe(0);
    const target = path.join(dataDir, 'labextensions', '@portico', 'labextension');
    expect(lstatSync(target).isSymbolicLink()).toBe(false);
    expect(tree(target)).toEqual([...before, MANIFEST, 'install.json'].sort());
    expect(tree(build)).toEqual(before); // nothing written into the build through the link
  });

  it('uninstall keeps what was there before: the data dir, labextensions and other extensions', () => {
    const source = prebuilt(path.join(tmp, 'build'));
    const dataDir = path.join(tmp, 'data');
    const other = path.join(dataDir, 'labextensions', '@portico', 'other');
    mkdirSync(other, { recursive: true });
    writeFileSync(path.join(other, 'package.json'), '{}');
    const before = tree(dataDir);

    expect(cli(['install', '--user'], source, dataDir).code).toBe(0);
    expect(cli(['uninstall', '--user'], source, dataDir).code).toBe(0);
    expect(tree(dataDir)).toEqual(before);
  });

  it('a reinstall replaces the files and still removes the directories the first install created', () => {
    const dataDir = path.join(tmp, 'fresh', 'data');
    install(prebuilt(path.join(tmp, 'v1'), 'static/remoteEntry.one.js'), dataDir);
    const second = install(prebuilt(path.join(tmp, 'v2'), 'static/remoteEntry.two.js'), dataDir);
    expect(second.replaced).toBe(true);
    const target = extensionDir(dataDir);
    expect(tree(path.join(target, 'static'))).toEqual(['remoteEntry.two.js', 'style.js']);
    expect(readdirSync(path.dirname(target))).toEqual(['labextension']); // no staging folder left behind

    const result = uninstall(dataDir);
    expect(result?.removedDirs).toEqual([path.dirname(target), path.join(dataDir, 'labextensions'), dataDir, path.join(tmp, 'fresh')]);
    expect(existsSync(path.join(tmp, 'fresh'))).toBe(false);
  });

  it('status tells an outdated copy from a current one', () => {
    const dataDir = path.join(tmp, 'data');
    install(prebuilt(path.join(tmp, 'old'), 'static/remoteEntry.old.js'), dataDir);
    const status = cli(['status'], prebuilt(path.join(tmp, 'new'), 'static/remoteEntry.new.js'), dataDir);
    expect(status.code).toBe(1);
    expect(status.out).toContain('outdated');
  });

  it('does not overwrite or remove a copy it did not make, unless forced', () => {
    const source = prebuilt(path.join(tmp, 'build'));
    const dataDir = path.join(tmp, 'data');
    const manual = prebuilt(extensionDir(dataDir), 'static/remoteEntry.manual.js'); // a manual copy

    const refused = cli(['install'], source, dataDir);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/was not installed by portico-lab.*--force/);
    expect(cli(['uninstall'], source, dataDir).out).toContain('not installed by portico-lab');
    expect(existsSync(path.join(manual, 'static', 'remoteEntry.manual.js'))).toBe(true);

    expect(cli(['install', '--force'], source, dataDir).code).toBe(0);
    expect(existsSync(path.join(manual, 'static', 'remoteEntry.manual.js'))).toBe(false);
    expect(cli(['uninstall'], source, dataDir).code).toBe(0);
    expect(existsSync(extensionDir(dataDir))).toBe(false);
    expect(existsSync(dataDir)).toBe(true); // it was there before the install
  });

  it('uninstall leaves files it did not install in place, and says so', () => {
    const dataDir = path.join(tmp, 'data');
    install(prebuilt(path.join(tmp, 'build')), dataDir);
    writeFileSync(path.join(extensionDir(dataDir), 'notes.txt'), 'mine');
    const result = uninstall(dataDir);
    expect(result?.leftovers).toEqual(['notes.txt']);
    expect(tree(extensionDir(dataDir))).toEqual(['notes.txt']);
  });

  it('refuses to install a folder that was not built', () => {
    const empty = path.join(tmp, 'empty');
    mkdirSync(empty);
    const result = cli(['install'], empty, path.join(tmp, 'data'));
    expect(result.code).toBe(1);
    expect(result.err).toContain('build it first');
    expect(existsSync(path.join(tmp, 'data'))).toBe(false);
  });

  it('usage errors exit 2', () => {
    const source = prebuilt(path.join(tmp, 'build'));
    expect(cli(['install', '--user', '--prefix', '/x'], source, tmp).code).toBe(2);
    expect(cli(['frobnicate'], source, tmp).code).toBe(2);
    expect(cli(['install', '--bogus'], source, tmp).code).toBe(2);
    expect(cli(['--help'], source, tmp).code).toBe(0);
  });
});
