import { describe, expect, it } from 'vitest';
import { WidgetRuntimeError } from '../errors.js';
import { explainFailure } from './diagnose.js';

const refused = new WidgetRuntimeError('connection_failed', 'The connection to ws://gw.test/v1/interfaces/ws closed (1006)');

function answering(body: unknown, status = 200) {
  const asked: string[] = [];
  const fetchImpl = async (url: string) => {
    asked.push(url);
    return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  };
  return { asked, fetchImpl };
}

describe('explainFailure: why a page could not reach its gateway', () => {
  it('a refused origin becomes origin_refused with the gateway\'s own words', async () => {
    const { asked, fetchImpl } = answering({ origin: 'http://page.test', allowed: false, message: 'This gateway does not accept pages from http://page.test. Allow it with: portico serve --allow-origin http://page.test' });
    const error = await explainFailure('http://gw.test/base', refused, fetchImpl);
    expect(asked).toEqual(['http://gw.test/base/v1/origin']);
    expect(error.code).toBe('origin_refused');
    expect(error.message).toContain('--allow-origin http://page.test');
  });

  it('a gateway that does not answer at all is unreachable, naming its URL', async () => {
    const error = await explainFailure('http://gw.test', refused, async () => {
      throw new TypeError('Failed to fetch');
    });
    expect(error.code).toBe('unreachable');
    expect(error.message).toContain('http://gw.test');
  });

  it('an allowed origin, or a gateway without /v1/origin, keeps the original error', async () => {
    expect(await explainFailure('http://gw.test', refused, answering({ allowed: true, message: null }).fetchImpl)).toBe(refused);
    expect(await explainFailure('http://gw.test', refused, answering({ detail: 'nope' }, 404).fetchImpl)).toBe(refused);
  });

  it('errors the gateway explained itself are not second-guessed', async () => {
    const { asked, fetchImpl } = answering({ allowed: false, message: 'x' });
    const unauthorized = new WidgetRuntimeError('unauthorized', 'Missing bearer token');
    expect(await explainFailure('http://gw.test', unauthorized, fetchImpl)).toBe(unauthorized);
    expect(asked).toEqual([]);
  });
});
