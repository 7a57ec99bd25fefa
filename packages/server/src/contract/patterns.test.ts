/**
 * Rules that /openapi.json states as patterns beside the code that enforces them: each pattern
 * answers exactly as its rule, for generated inputs over the alphabet that matters.
 */
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SOURCE_EXTENSIONS } from '../source/paths.js';
import { isSafeName } from '../store/files.js';
import { CLIENT_UUID } from './common.js';
import { ProvenanceQuery } from './rest.js';
import { SOURCE_FILE_EXTENSIONS, SOURCE_FILE_PATTERN } from './source.js';
import { FindRequest, parseRecordPath, RECORD_PATH, RECORD_SORT_PATH } from './search.js';

const text = (alphabet: string[], maxLength: number) => fc.array(fc.constantFrom(...alphabet), { maxLength }).map((chars) => chars.join(''));
/** Record paths: the field names cut in pieces, separators, indexes, and a few strangers. */
const pathish = fc.oneof(
  text(['config', 'uuid', 'label', 'created_at', 'created_at_ns', 'archived', 'con', 'fig', '.', '[', ']', '0', '7', 'a', '_', '-', ' '], 8),
  fc.string({ maxLength: 12 }),
);

describe('patterns in /openapi.json', () => {
  it('RECORD_PATH matches exactly the paths parseRecordPath takes', () => {
    fc.assert(fc.property(pathish, (path) => {
        expect(RECORD_PATH.test(path)).toBe(Array.isArray(parseRecordPath(path)));
      }), { numRuns: 3000 });
  });

  it('RECORD_SORT_PATH matches exactly the sort keys a search takes without config_layer', () => {
    fc.assert(
      fc.property(pathish, (by) => {
        const taken = FindRequest.safeParse({ sort: [{ by }] }).success;
        expect(RECORD_SORT_PATH.test(by)).toBe(taken);
      }),
      { numRuns: 3000 },
    );
  });

  it('CLIENT_UUID matches exactly the names the store accepts for an interface folder', () => {
    const names = fc.oneof(text(['.', 'a', 'Z', '0', '_', '-', '/', ' ', 'é'], 6), fc.string({ minLength: 120, maxLength: 135, unit: fc.constantFrom('a', '.') }));
    fc.assert(fc.property(names, (name) => {
        expect(CLIENT_UUID.test(name)).toBe(isSafeName(name));
      }), { numRuns: 3000 });
    for (const name of ['.', '..', '...', '.a', '..a', 'a'.repeat(128), 'a'.repeat(129)]) expect(CLIENT_UUID.test(name), name).toBe(isSafeName(name));
  });

  it('SOURCE_FILE_PATTERN matches exactly the paths whose file has an extension the source API edits', () => {
    expect([...SOURCE_EXTENSIONS]).toEqual([...SOURCE_FILE_EXTENSIONS]);
    const pattern = new RegExp(SOURCE_FILE_PATTERN);
    const paths = text(['a', 'dir/', '.', 'py', 'PY', 'Js', 'mjs', 'css', 'json', 'md', 'txt', 'x', 'sj'], 6).filter((p) => !path.basename(p).startsWith('.'));
    fc.assert(
      fc.property(paths, (p) => {
        expect(pattern.test(p), p).toBe(SOURCE_EXTENSIONS.has(path.extname(p).toLowerCase()));
      }),
      { numRuns: 3000 },
    );
  });

  it('provenance rels: the pattern is the rule, and what it lets through is the list of labels', () => {
    const rels = text(['derivation', 'runs', 'context', 'manifest', 'run', ',', ' ', '\t', 'x'], 6);
    fc.assert(
      fc.property(rels, (value) => {
        const parsed = ProvenanceQuery.safeParse({ rels: value });
        const labels = value.split(',').map((s) => s.trim()).filter(Boolean);
        const expected = !value.includes('\t') && labels.every((label) => ['derivation', 'context', 'runs', 'manifest'].includes(label));
        expect(parsed.success, value).toBe(expected);
        if (parsed.success) expect(parsed.data.rels).toEqual(labels);
      }),
      { numRuns: 2000 },
    );
  });
});
