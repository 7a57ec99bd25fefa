/**
 * The small visible error a mounted element shows instead of a blank space (the full error also
 * goes to the console). It is a `div.portico-widget-error[role=alert]` placed first in the mounted
 * element; pages may restyle it through that class.
 */
import type { WidgetRuntimeError } from '../errors.js';

const CLASS = 'portico-widget-error';
const STYLE =
  'box-sizing:border-box;margin:4px 0;padding:6px 8px;border:1px solid #d93025;border-radius:4px;' +
  'background:#fdecea;color:#a50e0e;font:12px/1.4 system-ui,sans-serif;white-space:pre-wrap;';

export function showNotice(host: HTMLElement, error: WidgetRuntimeError): void {
  let box = findNotice(host);
  if (!box) {
    box = host.ownerDocument.createElement('div');
    box.className = CLASS;
    box.setAttribute('role', 'alert');
    box.style.cssText = STYLE;
    host.prepend(box);
  }
  box.textContent = `Portico widget: ${error.message} (${error.code})`;
}

export function clearNotice(host: HTMLElement): void {
  findNotice(host)?.remove();
}

function findNotice(host: HTMLElement): HTMLElement | undefined {
  for (const child of Array.from(host.children)) if (child.classList.contains(CLASS)) return child as HTMLElement;
  return undefined;
}
