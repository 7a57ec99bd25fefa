import { describe, expect, it } from 'vitest';
import { PorticoError } from '../errors.js';
import { moduleOf, sourceSegments } from './paths.js';

function code(relative: string): string | undefined {
  try {
    sourceSegments(relative);
    return undefined;
  } catch (err) {
    return (err as PorticoError).code;
  }
}

describe('source paths', () => {
  it('plain relative paths to source files pass, backslashes counting as separators', () => {
    expect(sourceSegments('counter.py')).toEqual(['counter.py']);
    expect(sourceSegments('pkg\\sub\\mod.py')).toEqual(['pkg', 'sub', 'mod.py']);
    for (const ok of ['a/b/c.JS', 'w.mjs', 's.css', 'portico.json', 'README.md', 'notes.txt']) expect(code(ok), ok).toBeUndefined();
  });

  it('.., absolute paths, drive letters, empty and . segments and NUL are forbidden', () => {
    for (const bad of ['../x.py', 'a/../x.py', '/etc/x.py', '\\\\server\\x.py', 'C:/x.py', 'c:x.py', 'a//b.py', './a.py', 'a/./b.py', 'a/', 'x\0.py', '']) {
      expect(code(bad), JSON.stringify(bad)).toBe('forbidden');
    }
  });

  it('hidden, cache and environment folders and hidden files are forbidden', () => {
    for (const bad of ['.portico/x.py', '.git/config.txt', 'a/.venv/b.py', '__pycache__/x.py', 'node_modules/x.js', 'venv/x.py', 'lib/site-packages/x.py', '.hidden.py']) {
      expect(code(bad), bad).toBe('forbidden');
    }
  });

  it('other extensions are not_source_file', () => {
    for (const bad of ['x.pyc', 'x.sh', 'Makefile', 'data/blob.bin', 'x.py.bak']) expect(code(bad), bad).toBe('not_source_file');
  });

  it('moduleOf names the module a .py file defines', () => {
    expect(moduleOf('counter.py')).toBe('counter');
    expect(moduleOf('pkg/sub/mod.py')).toBe('pkg.sub.mod');
    expect(moduleOf('pkg/__init__.py')).toBe('pkg');
    expect(moduleOf('__init__.py')).toBeNull();
    expect(moduleOf('my-script.py')).toBeNull();
    expect(moduleOf('counter.widget.js')).toBeNull();
  });
});
