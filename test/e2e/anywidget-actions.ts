/**
 * What a user does with each published anywidget of the fixture project (test/fixtures/anywidgets),
 * and what they then see, shared by the plain-page and the JupyterLab suites: each action drives the
 * widget with the mouse inside `root` and checks the page and the widget's Python state.
 */
import { expect } from 'vitest';
import type { Locator, Page } from 'playwright-core';

export interface ServedWidget {
  page: Page;
  /** The element the widget rendered into. */
  root: Locator;
  /** The widget's state as Python holds it now (a remote call of its widget_state hook). */
  python: () => Promise<Record<string, any>>;
  /** Calls a remote method of the interface and answers its result. */
  call: (method: string, args?: unknown[]) => Promise<unknown>;
}

const RENDER_TIMEOUT = 60_000;

async function boxOf(target: Locator): Promise<{ x: number; y: number; width: number; height: number }> {
  await target.waitFor({ timeout: RENDER_TIMEOUT });
  await target.scrollIntoViewIfNeeded();
  const box = await target.boundingBox();
  if (!box) throw new Error('the element has no box on the page');
  return box;
}

/** The alpha of the pixel at (x, y) of a 2D canvas: 0 where nothing is drawn. */
async function alphaAt(canvas: Locator, x: number, y: number): Promise<number> {
  return canvas.evaluate((el, [x, y]) => (el as HTMLCanvasElement).getContext('2d')!.getImageData(x, y, 1, 1).data[3]!, [x, y] as const);
}

/**
 * wigglystuff Slider2D: drag the handle from the centre to 90 px right and 90 px up; x and y read
 * 0.5 on the page and in Python. Then Python moves it (a trait set in a method): the text and the
 * handle drawn on the canvas follow.
 */
export async function dragSlider2D({ page, root, python, call }: ServedWidget): Promise<void> {
  const canvas = root.locator('canvas#sliderCanvas');
  const box = await boxOf(canvas);
  const border = 1; // the widget draws a 1px border; its handle follows offsetX/Y inside it
  const centre = { x: box.x + border + 200, y: box.y + border + 200 };
  await page.mouse.move(centre.x, centre.y);
  await page.mouse.down();
  await page.mouse.move(centre.x + 90, centre.y - 90, { steps: 6 });
  await page.mouse.up();
  await expect.poll(() => root.locator('#sliderValues').textContent()).toBe('X: 0.50, Y: 0.50');
  await expect.poll(async () => { const s = await python(); return [s.x, s.y].map((v: number) => v.toFixed(2)); }).toEqual(['0.50', '0.50']);

  await call('move_to', [-0.5, 0.25]);
  await expect.poll(() => root.locator('#sliderValues').textContent()).toBe('X: -0.50, Y: 0.25');
  // The handle is a ring of radius 10 around its centre: (200 - 90, 200 - 45) for (-0.5, 0.25) on
  // a 400 px canvas whose track has radius 180; the old one at (290, 110) is erased.
  expect(await alphaAt(canvas, 110 + 10, 155)).toBeGreaterThan(128);
  expect(await alphaAt(canvas, 290 + 10, 110)).toBe(0);
}

/** wigglystuff Matrix: drag cell (0, 1) 8 px right (4 steps of 1); the cell and Python read 4. */
export async function editMatrix({ page, root, python }: ServedWidget): Promise<void> {
  const cell = root.locator('.matrix-element[data-row="0"][data-col="1"]');
  const box = await boxOf(cell);
  expect(await cell.textContent()).toBe('0.0');
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width / 2 + 8, box.y + box.height / 2, { steps: 4 });
  await page.mouse.up();
  await expect.poll(() => root.locator('.matrix-element[data-row="0"][data-col="1"]').textContent()).toBe('4.0');
  await expect.poll(async () => (await python()).matrix).toEqual([[0, 4], [0, 0]]);
}

/** drawdata's own module sets height="auto" on its <svg>, which Chromium reports as an error wherever it runs (JupyterLab too). */
export function isDrawdataOwnWarning(error: string): boolean {
  return error.includes('<svg> attribute height: Expected length, "auto"');
}

/** drawdata ScatterWidget: a stroke across the canvas draws points; Python holds the same points. */
export async function drawScatter({ page, root, python }: ServedWidget): Promise<void> {
  const svg = root.locator('svg:has(circle.brush-indicator)'); // the drawing area, not a toolbar icon
  const box = await boxOf(svg);
  const from = { x: box.x + box.width * 0.25, y: box.y + box.height * 0.5 };
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  await page.mouse.move(from.x + box.width * 0.5, from.y, { steps: 25 });
  await page.mouse.up();
  const drawn = root.locator('svg circle.drawn');
  await expect.poll(() => drawn.count()).toBeGreaterThan(5);
  const onPage = await drawn.count();
  const data: Array<{ x: number; y: number; color: string }> = await expect
    .poll(async () => (await python()).data, { timeout: 20_000 })
    .toHaveLength(onPage)
    .then(async () => (await python()).data);
  // The points lie along the stroke: drawdata's own coordinates (x right, y up from the bottom).
  const xs = data.map((point) => point.x);
  expect(Math.max(...xs) - Math.min(...xs)).toBeGreaterThan(200);
  expect(new Set(data.map((point) => point.color)).size).toBe(1);
}

/** The id in the first data cell of each row quak shows now. */
async function shownIds(table: Locator): Promise<number[]> {
  return table.locator('tbody tr').evaluateAll((rows) => rows.map((row) => Number(row.querySelectorAll('td')[1]?.textContent)).filter(Number.isFinite));
}

/**
 * quak over the fixture's 100,000-row DuckDB table: the first rows and the row count show;
 * scrolling to the bottom shows rows quak fetched from Python; brushing the `id` histogram
 * filters the rows, and the query in Python (quak's `sql` trait) says so.
 */
export async function exploreQuak({ page, root, python }: ServedWidget): Promise<void> {
  const table = root.locator('.quak .table-container');
  await table.locator('tbody tr').first().waitFor({ timeout: RENDER_TIMEOUT });
  const footer = root.locator('.quak').getByText(/rows$/);
  await expect.poll(() => footer.textContent()).toBe('100,000 rows');
  await expect.poll(() => shownIds(table)).toEqual(expect.arrayContaining([0, 1, 2]));
  expect(await table.locator('tbody tr').first().textContent()).toContain('row 0');

  // Scrolling: quak asks Python for the next rows (SQL with an offset) as the end comes into view.
  const loaded = Math.max(...(await shownIds(table)));
  for (let i = 0; i < 3; i++) await table.evaluate((el) => el.scrollTo(0, el.scrollHeight));
  await expect.poll(async () => Math.max(...(await shownIds(table))), { timeout: 30_000 }).toBeGreaterThan(loaded);
  await table.evaluate((el) => el.scrollTo(0, 0));

  // Filtering: brush the right half of the id histogram; the rows shown and the count follow.
  const overlay = table.locator('thead th').nth(1).locator('.interval-x rect.overlay');
  const box = await boxOf(overlay);
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width - 1, box.y + box.height / 2, { steps: 8 });
  await page.mouse.up();
  await expect.poll(() => footer.textContent(), { timeout: 30_000 }).toMatch(/^[\d,]+ of 100,000 rows$/);
  await expect.poll(async () => Math.min(...(await shownIds(table))), { timeout: 30_000 }).toBeGreaterThan(40_000);
  await expect.poll(async () => (await python()).sql).toMatch(/WHERE/i);
}

/** Each fixture module, a selector found only in its widget, and what a user does with it. */
export const PUBLISHED_WIDGETS: Array<{ target: string; marker: string; story: string; act: (widget: ServedWidget) => Promise<void> }> = [
  { target: 'slider', marker: 'canvas#sliderCanvas', story: 'wigglystuff Slider2D: a drag of the handle reaches Python', act: dragSlider2D },
  { target: 'matrix', marker: '.matrix-element', story: 'wigglystuff Matrix: a drag on a cell edits the matrix in Python', act: editMatrix },
  { target: 'scatter', marker: 'circle.brush-indicator', story: 'drawdata ScatterWidget: points drawn with the mouse arrive in Python as data', act: drawScatter },
  {
    target: 'table',
    marker: '.quak .table-container',
    story: 'quak: the rows of a 100k-row table show; scrolling and filtering query Python and update the page',
    act: exploreQuak,
  },
];
