import { describe, expect, it } from 'vitest';
import { PorticoError } from '../errors.js';
import { checkPreconditions, notModified, quoted, sourceEtag } from './etag.js';

const TAG = sourceEtag(Buffer.from('hello'));

function refusal(fn: () => void): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return (err as PorticoError).code;
  }
}

describe('source ETags', () => {
  it('are the MD5 hex of the bytes, quoted in headers', () => {
    expect(TAG).toBe('5d41402abc4b2a76b9719d911017c592');
    expect(quoted(TAG)).toBe('"5d41402abc4b2a76b9719d911017c592"');
  });

  it('If-Match: the current tag (quoted, bare or in a list) or * passes; anything else, a weak tag or a missing file is 412', () => {
    for (const ifMatch of [quoted(TAG), TAG, `"a", ${quoted(TAG)}`, '*', ' * ']) expect(refusal(() => checkPreconditions({ ifMatch }, TAG, 'f'))).toBeUndefined();
    for (const ifMatch of ['"other"', `W/${quoted(TAG)}`, '"a", "b"']) expect(refusal(() => checkPreconditions({ ifMatch }, TAG, 'f'))).toBe('precondition_failed');
    for (const ifMatch of ['*', quoted(TAG)]) expect(refusal(() => checkPreconditions({ ifMatch }, null, 'f'))).toBe('precondition_failed');
  });

  it('If-None-Match: * passes only for a missing file; a list fails when it holds the current tag (weak comparison)', () => {
    expect(refusal(() => checkPreconditions({ ifNoneMatch: '*' }, null, 'f'))).toBeUndefined();
    expect(refusal(() => checkPreconditions({ ifNoneMatch: '*' }, TAG, 'f'))).toBe('precondition_failed');
    expect(refusal(() => checkPreconditions({ ifNoneMatch: `W/${quoted(TAG)}` }, TAG, 'f'))).toBe('precondition_failed');
    expect(refusal(() => checkPreconditions({ ifNoneMatch: '"other"' }, TAG, 'f'))).toBeUndefined();
  });

  it('empty headers are no condition', () => {
    expect(refusal(() => checkPreconditions({ ifMatch: '', ifNoneMatch: ' ' }, null, 'f'))).toBeUndefined();
  });

  it('a GET is not modified when If-None-Match names the current tag', () => {
    expect(notModified(quoted(TAG), TAG)).toBe(true);
    expect(notModified(`W/${quoted(TAG)}, "x"`, TAG)).toBe(true);
    expect(notModified('"x"', TAG)).toBe(false);
    expect(notModified(undefined, TAG)).toBe(false);
  });
});
