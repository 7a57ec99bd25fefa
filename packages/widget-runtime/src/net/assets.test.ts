import { describe, expect, it, vi } from 'vitest';
import { fetchStylesheet, fetchWidgetModule, type FetchLike } from './assets.js';

/** A fetch that answers from a table of URL → [status, body, headers], recording every request. */
function fakeFetch(routes: Record<string, [number, string, Record<string, string>?]>) {
  const requests: Array<{ url: string; authorization: string | undefined }> = [];
  const impl: FetchLike = async (url, init) => {
    requests.push({ url, authorization: (init?.headers as Record<string, string> | undefined)?.Authorization });
    const [status, body, headers] = routes[url] ?? [404, '{"detail":"nope","code":"not_found","message":"nope"}'];
    return new Response(status === 304 ? null : body, { status, headers });
  };
  return { impl, requests };
}

const ESM = 'http://gw/v1/project/counter/widget/esm?project=p';
const CSS = 'http://gw/v1/project/counter/widget/css?project=p';
const gateway = { url: 'http://gw', project: 'p', token: 'tok' };

describe('widget assets', () => {
  it('fetches the stylesheet named by the Link header, with the token', async () => {
    const { impl, requests } = fakeFetch({
      [ESM]: [200, 'export default {}', { Link: '</v1/project/counter/widget/css?project=p>; rel="stylesheet"' }],
      [CSS]: [200, '.a{}'],
    });
    const source = await fetchWidgetModule(gateway, 'counter', impl);
    expect(source).toEqual({ esm: 'export default {}', stylesheet: CSS });
    expect(await fetchStylesheet(gateway, source!, impl)).toBe('.a{}');
    expect(requests).toEqual([
      { url: ESM, authorization: 'Bearer tok' },
      { url: CSS, authorization: 'Bearer tok' },
    ]);
  });

  it('without a Link header there is no stylesheet and no request for one', async () => {
    const { impl, requests } = fakeFetch({ [ESM]: [200, 'export default {}', { Link: '</next>; rel="next"' }] });
    const source = await fetchWidgetModule(gateway, 'counter', impl);
    expect(source).toEqual({ esm: 'export default {}', stylesheet: undefined });
    expect(await fetchStylesheet(gateway, source!, impl)).toBeNull();
    expect(requests.map((r) => r.url)).toEqual([ESM]);
  });

  it('a module without a widget is null (404); other failures carry the gateway code', async () => {
    const missing = fakeFetch({});
    expect(await fetchWidgetModule(gateway, 'counter', missing.impl)).toBeNull();
    const refused = fakeFetch({ [ESM]: [403, '{"detail":"no access","code":"forbidden","message":"no access"}'] });
    await expect(fetchWidgetModule(gateway, 'counter', refused.impl)).rejects.toMatchObject({ code: 'forbidden', message: 'no access' });
    // A 400 carries the structured detail; an older gateway sent the code in detail only.
    const unknown = fakeFetch({ [ESM]: [400, '{"detail":{"code":"unknown_module","message":"Unknown module"},"code":"unknown_module","message":"Unknown module"}'] });
    await expect(fetchWidgetModule(gateway, 'counter', unknown.impl)).rejects.toMatchObject({ code: 'unknown_module', message: 'Unknown module' });
    const older = fakeFetch({ [ESM]: [403, '{"detail":{"code":"forbidden","message":"no access"}}'] });
    await expect(fetchWidgetModule(gateway, 'counter', older.impl)).rejects.toMatchObject({ code: 'forbidden', message: 'no access' });
    const offline = vi.fn<FetchLike>().mockRejectedValue(new TypeError('Failed to fetch'));
    await expect(fetchWidgetModule(gateway, 'counter', offline)).rejects.toMatchObject({ code: 'load_failed' });
  });

  it('keeps the path prefix of the gateway URL for the stylesheet', async () => {
    const base = 'https://example.org/portico';
    const { impl, requests } = fakeFetch({
      [`${base}/v1/project/counter/widget/esm`]: [200, 'x', { Link: '</v1/project/counter/widget/css>; rel=stylesheet' }],
    });
    const source = await fetchWidgetModule({ url: `${base}/` }, 'counter', impl);
    expect(source?.stylesheet).toBe(`${base}/v1/project/counter/widget/css`);
    expect(await fetchStylesheet({ url: base }, source!, impl)).toBeNull(); // 404 there: no stylesheet after all
    expect(requests.map((r) => r.url)).toEqual([`${base}/v1/project/counter/widget/esm`, `${base}/v1/project/counter/widget/css`]);
  });

  it('never sends the token to a stylesheet on another origin', async () => {
    const { impl, requests } = fakeFetch({ 'https://cdn.example/w.css': [200, '.w{}'] });
    expect(await fetchStylesheet(gateway, { esm: '', stylesheet: 'https://cdn.example/w.css' }, impl)).toBe('.w{}');
    expect(requests).toEqual([{ url: 'https://cdn.example/w.css', authorization: undefined }]);
  });
});
