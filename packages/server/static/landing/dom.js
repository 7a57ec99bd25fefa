// DOM and JSON helpers every room of the landing page uses: an element by id, an element built
// with properties and children (text stays text: nothing is parsed as HTML), and JSON as the
// gateway writes it.

/** The page's element with this id. */
export const $ = (id) => document.getElementById(id);

/** `el('p', {className: 'x'}, 'text', child)`: an element with properties and children. */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key in node && !key.includes('-')) node[key] = value;
    else node.setAttribute(key, value === true ? '' : value);
  }
  node.append(...children.filter((c) => c !== undefined && c !== null));
  return node;
}

/** JSON as the gateway writes it: NaN and ±Infinity as the strings it documents. */
export function toJson(value, indent) {
  return JSON.stringify(value, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? (Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity') : v), indent);
}
