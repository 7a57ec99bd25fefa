/** A tiny element builder for the sidebar's plain-DOM views. */

type Child = Node | string | number | null | undefined | false;

export interface ElementProps {
  className?: string;
  /** Sets `data-testid`, the selectors end-to-end tests use. */
  testid?: string;
  dataset?: Record<string, string>;
  attrs?: Record<string, string>;
  text?: string;
  on?: Partial<{ [K in keyof HTMLElementEventMap]: (event: HTMLElementEventMap[K]) => void }>;
}

/** `h('button', {className: 'x', on: {click}}, 'Save')`. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: ElementProps = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props.className) el.className = props.className;
  if (props.testid) el.dataset.testid = props.testid;
  for (const [key, value] of Object.entries(props.dataset ?? {})) el.dataset[key] = value;
  for (const [key, value] of Object.entries(props.attrs ?? {})) el.setAttribute(key, value);
  if (props.text !== undefined) el.textContent = props.text;
  for (const [type, listener] of Object.entries(props.on ?? {})) el.addEventListener(type, listener as EventListener);
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'number' ? String(child) : child);
  }
  return el;
}

/** A date as `2026-03-01 14:05` in local time; the ISO text stays in the title. */
export function shortDate(iso: string | null): string {
  if (!iso) return '–';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** The first 8 characters of a uuid. */
export function shortId(uuid: string): string {
  return uuid.length > 12 ? uuid.slice(0, 8) : uuid;
}

/** The interface class name: `class_name`, or `kind` from a gateway older than class_name (where kind held it). */
export const classNameOf = (info: { class_name?: string; kind: string }): string => info.class_name ?? info.kind;
