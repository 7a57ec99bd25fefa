/**
 * Published anywidgets (wigglystuff, drawdata, quak) served unchanged by portico.widgets.serve and
 * shown on a plain web page through the widget runtime, in Debian Chromium: the user's mouse
 * reaches Python, and what Python answers shows on the page.
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { embed, embedSuite } from '../browser.js';
import { api, fixtureFiles, gateway, tempProject } from '../helpers.js';
import { TEST_PYTHON } from '../notebook.js';
import { drawScatter, isDrawdataOwnWarning, PUBLISHED_WIDGETS, type ServedWidget } from './anywidget-actions.js';

const E2E_TIMEOUT = 120_000;

const suite = embedSuite(
  async (origin) => gateway({ project: await tempProject(await fixtureFiles('anywidgets')), allowOrigins: [origin], python: TEST_PYTHON }),
  E2E_TIMEOUT,
);

/** A page of the static site showing the fixture module `target` (or the instance `uuid="…"`), and how to read its Python state. */
async function show(target: string, attributes = `target="${target}"`): Promise<ServedWidget & { errors: string[]; uuid: string }> {
  const { page, errors } = await suite.open(`${target}-${Object.keys(suite.pages).length}.html`, embed(suite.running.url, attributes));
  const uuid = await uuidOf(page);
  const call = async (method: string, args: unknown[] = []) => (await api(suite.running, 'POST', '/v1/interfaces/call', { target: uuid, method, args })).body.payload;
  const python = () => call('widget_state');
  return { page, root: page.locator('portico-widget'), python, call, errors, uuid };
}

async function uuidOf(page: Page): Promise<string> {
  await page.waitForFunction(() => (document.querySelector('portico-widget') as any)?.handle?.uuid, null, { timeout: 30_000 });
  return page.evaluate(() => (document.querySelector('portico-widget') as any).handle.uuid as string);
}

describe('published anywidgets on a plain page', { timeout: E2E_TIMEOUT }, () => {
  for (const { target, story, act } of PUBLISHED_WIDGETS) {
    it(story, async () => {
      const served = await show(target);
      await act(served);
      expect(served.errors.filter((error) => !isDrawdataOwnWarning(error))).toEqual([]);
      await served.page.close();
    });
  }

  it('a page opened later on the same drawing shows the points Python holds', async () => {
    const first = await show('scatter');
    await drawScatter(first);
    const drawn = (await first.python()).data.length;
    const later = await show('scatter', `uuid="${first.uuid}"`);
    await expect.poll(() => later.root.locator('svg circle.drawn').count(), { timeout: 30_000 }).toBe(drawn);
    await first.page.close();
    await later.page.close();
  });
});
