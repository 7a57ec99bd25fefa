import { describe, expect, it } from 'vitest';
import { resolveDataDir, searchDataDirs, userDataDir, type Environment } from './paths.js';

function fakeEnvironment(overrides: Partial<Environment> = {}): Environment {
  return {
    env: {},
    platform: 'linux',
    homedir: '/home/ada',
    jupyterDataPaths: () => null,
    which: () => null,
    isWritable: () => true,
    ...overrides,
  };
}

describe('userDataDir', () => {
  it('JUPYTER_DATA_DIR wins on every platform', () => {
    for (const platform of ['linux', 'darwin'] as const) {
      expect(userDataDir({ env: { JUPYTER_DATA_DIR: '/data/j' }, platform, homedir: '/home/ada' })).toBe('/data/j');
    }
  });

  it('follows XDG_DATA_HOME on Linux, else ~/.local/share/jupyter', () => {
    expect(userDataDir({ env: { XDG_DATA_HOME: '/xdg' }, platform: 'linux', homedir: '/home/ada' })).toBe('/xdg/jupyter');
    expect(userDataDir({ env: {}, platform: 'linux', homedir: '/home/ada' })).toBe('/home/ada/.local/share/jupyter');
  });

  it('uses ~/Library/Jupyter on macOS and %APPDATA%\\jupyter on Windows', () => {
    expect(userDataDir({ env: {}, platform: 'darwin', homedir: '/Users/ada' })).toBe('/Users/ada/Library/Jupyter');
    expect(userDataDir({ env: { APPDATA: 'C:\\Users\\ada\\AppData\\Roaming' }, platform: 'win32', homedir: 'C:\\Users\\ada' })).toBe(
      'C:\\Users\\ada\\AppData\\Roaming\\jupyter',
    );
  });
});

describe('resolveDataDir', () => {
  it('auto: the first writable entry of jupyter --paths --json', () => {
    const environment = fakeEnvironment({
      env: { JUPYTER_DATA_DIR: '/ignored' },
      jupyterDataPaths: () => ['/usr/share/jupyter-ro', '/venv/share/jupyter', '/home/ada/.local/share/jupyter'],
      isWritable: (dir) => dir !== '/usr/share/jupyter-ro',
    });
    expect(resolveDataDir({ kind: 'auto' }, environment)).toEqual({ dir: '/venv/share/jupyter', how: '`jupyter --paths --json`' });
  });

  it('auto without jupyter: JUPYTER_DATA_DIR, then the active environment, then the user directory', () => {
    expect(resolveDataDir({ kind: 'auto' }, fakeEnvironment({ env: { JUPYTER_DATA_DIR: '/data/j', VIRTUAL_ENV: '/venv' } })).dir).toBe('/data/j');
    expect(resolveDataDir({ kind: 'auto' }, fakeEnvironment({ env: { VIRTUAL_ENV: '/venv' } })).dir).toBe('/venv/share/jupyter');
    expect(resolveDataDir({ kind: 'auto' }, fakeEnvironment({ env: { CONDA_PREFIX: '/conda' } })).dir).toBe('/conda/share/jupyter');
    expect(resolveDataDir({ kind: 'auto' }, fakeEnvironment()).dir).toBe('/home/ada/.local/share/jupyter');
  });

  it('auto: jupyter listing only unwritable directories falls back like no jupyter', () => {
    const environment = fakeEnvironment({ env: { JUPYTER_DATA_DIR: '/data/j' }, jupyterDataPaths: () => ['/usr/share/jupyter'], isWritable: () => false });
    expect(resolveDataDir({ kind: 'auto' }, environment).dir).toBe('/data/j');
  });

  it('--prefix P is P/share/jupyter; --data-dir D is D', () => {
    expect(resolveDataDir({ kind: 'prefix', prefix: '/opt/env' }, fakeEnvironment()).dir).toBe('/opt/env/share/jupyter');
    expect(resolveDataDir({ kind: 'data-dir', dir: '/x/y' }, fakeEnvironment()).dir).toBe('/x/y');
  });

  it('--sys-prefix: VIRTUAL_ENV, CONDA_PREFIX, else the environment of the jupyter on PATH', () => {
    expect(resolveDataDir({ kind: 'sys-prefix' }, fakeEnvironment({ env: { VIRTUAL_ENV: '/venv' } })).dir).toBe('/venv/share/jupyter');
    expect(resolveDataDir({ kind: 'sys-prefix' }, fakeEnvironment({ env: { CONDA_PREFIX: '/conda' } })).dir).toBe('/conda/share/jupyter');
    const onPath = fakeEnvironment({ which: (name) => (name === 'jupyter' ? '/opt/py/bin/jupyter' : null) });
    expect(resolveDataDir({ kind: 'sys-prefix' }, onPath).dir).toBe('/opt/py/share/jupyter');
  });

  it('--sys-prefix without any Python environment is an error', () => {
    expect(() => resolveDataDir({ kind: 'sys-prefix' }, fakeEnvironment())).toThrow(/No Python environment/);
  });

  it('--user is the user directory even inside a virtualenv', () => {
    expect(resolveDataDir({ kind: 'user' }, fakeEnvironment({ env: { VIRTUAL_ENV: '/venv' } })).dir).toBe('/home/ada/.local/share/jupyter');
  });
});

describe('searchDataDirs', () => {
  it('is jupyter’s own list when jupyter runs', () => {
    expect(searchDataDirs(fakeEnvironment({ jupyterDataPaths: () => ['/a', '/b', '/a'] }))).toEqual(['/a', '/b']);
  });

  it('without jupyter: JUPYTER_PATH, the environment, the user and the system directories, in that order', () => {
    const environment = fakeEnvironment({ env: { JUPYTER_PATH: '/p1:/p2', VIRTUAL_ENV: '/venv' } });
    expect(searchDataDirs(environment)).toEqual([
      '/p1',
      '/p2',
      '/venv/share/jupyter',
      '/home/ada/.local/share/jupyter',
      '/usr/local/share/jupyter',
      '/usr/share/jupyter',
    ]);
  });
});
