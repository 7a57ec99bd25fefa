/**
 * What a mounted element shows besides the widget:
 *
 * - the error notice, instead of a blank space (the full error also goes to the console): a
 *   `div.portico-widget-error[role=alert]` placed first in the mounted element, shown until cleared;
 * - a passing notice (`div.portico-widget-notice[role=status]`, also first), which removes itself
 *   after a while: the interface's instance restarted with its Python worker, or the first connect
 *   failed and is retried ("connecting… retrying in 2 s (attempt 3 of 6)"); or that stays until
 *   mounting ends: the connect waits for a Slurm allocation ("connecting… Slurm job 123: PENDING
 *   (Priority)"); or, once mounted, until a request that waits for a new allocation (the state read
 *   again after the instance lost its allocation, a call) is answered ("waiting for the Python
 *   worker… Slurm job 124: PENDING (Resources)").
 *
 * Pages may restyle both through their classes.
 */
import type { WidgetRuntimeError } from '../errors.js';

const CLASS = 'portico-widget-error';
const STYLE =
  'box-sizing:border-box;margin:4px 0;padding:6px 8px;border:1px solid #d93025;border-radius:4px;' +
  'background:#fdecea;color:#a50e0e;font:12px/1.4 system-ui,sans-serif;white-space:pre-wrap;';
const INFO_CLASS = 'portico-widget-notice';
const INFO_STYLE =
  'box-sizing:border-box;margin:4px 0;padding:6px 8px;border:1px solid #e0a800;border-radius:4px;' +
  'background:#fff8e1;color:#6d4c00;font:12px/1.4 system-ui,sans-serif;white-space:pre-wrap;';

const infoTimers = new WeakMap<HTMLElement, ReturnType<typeof setTimeout>>();

export function showNotice(host: HTMLElement, error: WidgetRuntimeError): void {
  const box = noticeBox(host, CLASS, 'alert', STYLE);
  box.textContent = `Portico widget: ${error.message} (${error.code})`;
}

/** Shows `text` (with `detail` as its tooltip) for `ms` milliseconds (Infinity: until cleared or replaced); a newer one replaces it. */
export function flashNotice(host: HTMLElement, text: string, detail: string, ms: number): void {
  if (ms <= 0) return;
  const box = noticeBox(host, INFO_CLASS, 'status', INFO_STYLE);
  box.textContent = `Portico widget: ${text}`;
  box.title = detail;
  clearTimeout(infoTimers.get(host));
  infoTimers.delete(host);
  if (ms === Infinity) return;
  const shown = box;
  infoTimers.set(
    host,
    setTimeout(() => {
      infoTimers.delete(host);
      shown.remove();
    }, ms),
  );
}

/** Removes the error notice. */
export function clearNotice(host: HTMLElement): void {
  findChild(host, CLASS)?.remove();
}

/** Removes the passing notice, if one is shown (a wait it told of is over). */
export function clearPassingNotice(host: HTMLElement): void {
  clearTimeout(infoTimers.get(host));
  infoTimers.delete(host);
  findChild(host, INFO_CLASS)?.remove();
}

/** Removes the error notice and a passing notice still shown (mounting, unmounting). */
export function clearAllNotices(host: HTMLElement): void {
  clearNotice(host);
  clearPassingNotice(host);
}

/** The host's notice box of `className`, made (first in the host) when it has none. */
function noticeBox(host: HTMLElement, className: string, role: string, style: string): HTMLElement {
  let box = findChild(host, className);
  if (!box) {
    box = host.ownerDocument.createElement('div');
    box.className = className;
    box.setAttribute('role', role);
    box.style.cssText = style;
    host.prepend(box);
  }
  return box;
}

function findChild(host: HTMLElement, className: string): HTMLElement | undefined {
  for (const child of Array.from(host.children)) if (child.classList.contains(className)) return child as HTMLElement;
  return undefined;
}
