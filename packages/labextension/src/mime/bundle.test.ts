import { describe, expect, it } from 'vitest';
import { parseBundle } from './bundle.js';

describe('parseBundle', () => {
  it('accepts what portico.client writes', () => {
    const data = { url: 'http://127.0.0.1:8000', uuid: 'abc', module: 'counter', project: null, version: 1 };
    expect(parseBundle(data)).toEqual({ bundle: { ...data } });
  });

  it('an empty project means none', () => {
    expect(parseBundle({ url: 'https://gw', uuid: 'u', project: '' })).toMatchObject({ bundle: { project: null, module: null, version: 1 } });
  });

  it('explains what is missing', () => {
    expect(parseBundle(null)).toEqual({ error: expect.stringMatching(/no data/) });
    expect(parseBundle({ uuid: 'u' })).toEqual({ error: expect.stringMatching(/gateway URL/) });
    expect(parseBundle({ url: 'javascript:alert(1)', uuid: 'u' })).toEqual({ error: expect.stringMatching(/gateway URL/) });
    expect(parseBundle({ url: 'http://gw' })).toEqual({ error: expect.stringMatching(/uuid/) });
  });

  it('a newer format asks for an update instead of guessing', () => {
    expect(parseBundle({ url: 'http://gw', uuid: 'u', version: 2 })).toEqual({ error: expect.stringMatching(/newer Portico client \(format 2\)/) });
  });
});
