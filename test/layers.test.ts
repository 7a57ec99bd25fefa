/**
 * The layering of ../shared/DESIGN.md §2, enforced: every import of packages/server/src (type-only
 * imports too, since they couple as much) is checked against the rules below. A new door around
 * the service layer fails here with the file, the line and the rule it breaks.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(__dirname, '../packages/server/src');

/** Folder → folders of src it must not import (a rule of DESIGN.md §2 each). */
const FORBIDDEN: Record<string, { folders: string[]; why: string }> = {
  http: { folders: ['kernel', 'store', 'executors', 'source'], why: 'a transport calls services only' },
  ws: { folders: ['kernel', 'store', 'executors', 'source'], why: 'a transport calls services only' },
  source: { folders: ['service', 'http', 'ws', 'kernel', 'executors'], why: 'source/ keeps resources and imports no service' },
  store: { folders: ['service', 'http', 'ws', 'executors', 'kernel'], why: 'store/ imports no service and no executor' },
  executors: { folders: ['service', 'http', 'ws'], why: 'executors/ run runs; services call them' },
  kernel: { folders: ['service', 'http', 'ws', 'store', 'executors', 'source'], why: 'kernel/ knows workers only' },
};
/** Packages a folder must not import. */
const FORBIDDEN_PACKAGES: Record<string, { packages: RegExp; why: string }> = {
  service: { packages: /^(koa|@koa\/|ws$)/, why: 'service/ is transport-free' },
  store: { packages: /^(koa|@koa\/|ws$)/, why: 'store/ is transport-free' },
  kernel: { packages: /^(koa|@koa\/|ws$)/, why: 'kernel/ is transport-free' },
};

interface Import {
  file: string;
  line: number;
  specifier: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

const IMPORT = /^\s*(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/;

function importsOf(file: string): Import[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const found: Import[] = [];
  // Multi-line import lists: join a statement until its `from '…'` before matching.
  let pending = '';
  let start = 0;
  lines.forEach((text, index) => {
    if (pending === '' && !/^\s*(import|export)\b|\bimport\(/.test(text)) return;
    if (pending === '') start = index + 1;
    pending += ` ${text}`;
    const match = IMPORT.exec(pending);
    if (match) {
      found.push({ file, line: start, specifier: match[1] ?? match[2] ?? match[3] });
      pending = '';
    } else if (/;\s*$/.test(text) || !/^\s*(import|export)\b/.test(pending.trim())) pending = '';
  });
  return found;
}

/** The top folder of src a file is in ('' for src's own files). */
function folderOf(file: string): string {
  const relative = path.relative(SRC, file).split(path.sep);
  return relative.length > 1 ? relative[0] : '';
}

function violations(): string[] {
  const found: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const from = folderOf(file);
    for (const { line, specifier } of importsOf(file)) {
      const where = `${path.relative(SRC, file)}:${line} imports ${specifier}`;
      if (specifier.startsWith('.')) {
        const target = folderOf(path.resolve(path.dirname(file), specifier));
        const rule = FORBIDDEN[from];
        if (target !== from && rule?.folders.includes(target)) found.push(`${where} (${rule.why})`);
      } else {
        const rule = FORBIDDEN_PACKAGES[from];
        if (rule?.packages.test(specifier)) found.push(`${where} (${rule.why})`);
      }
    }
  }
  return found;
}

/** Every import cycle between files of src, each as the list of files around it (Tarjan's strongly connected components). */
function cycles(): string[][] {
  const files = sourceFiles(SRC);
  const edges = new Map<string, string[]>();
  for (const file of files) {
    edges.set(
      file,
      importsOf(file)
        .filter(({ specifier }) => specifier.startsWith('.'))
        .map(({ specifier }) => path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts')),
    );
  }
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, counter);
    low.set(file, counter++);
    stack.push(file);
    onStack.add(file);
    for (const next of edges.get(file) ?? []) {
      if (!edges.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(path.relative(SRC, member));
    } while (member !== file);
    if (component.length > 1) found.push(component.sort());
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return found;
}

describe('the layering of DESIGN.md §2', () => {
  it('reads the imports it checks (a checker that finds none could not fail)', () => {
    const all = sourceFiles(SRC).flatMap(importsOf);
    expect(all.length).toBeGreaterThan(300);
    // A multi-line import list is seen too.
    expect(all.some((entry) => entry.file.endsWith(path.join('http', 'app.ts')) && entry.specifier.startsWith('../service/'))).toBe(true);
  });

  it('every import keeps to the rules', () => {
    expect(violations()).toEqual([]);
  });

  it('transports reach the store and the run folders only through services (not through a bound project)', () => {
    const found: string[] = [];
    for (const file of sourceFiles(SRC).filter((f) => ['http', 'ws'].includes(folderOf(f)))) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((text, index) => {
          if (/\.project\.(store|runs)\b/.test(text)) found.push(`${path.relative(SRC, file)}:${index + 1}: ${text.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });

  it('no file imports itself back through others (no import cycle)', () => {
    expect(cycles()).toEqual([]);
  });
});
