// A module's card: its name and docstring (or why it failed to load), a live preview of its widget
// (the widget runtime's mount), and, from its reflected schema, the "Use it" snippets and "Try it".
import { mount } from '/static/portico-widget.js';
import { api, apiToken, url } from './api.js';
import { el } from './dom.js';
import { renderDoc } from './docstrings.js';
import { tryPanel } from './method-forms.js';
import { snippets } from './snippets.js';

/** The card of one module of the project index ({module, doc, widget, error}). */
export function moduleCard(module) {
  const el_ = document.createElement('article');
  el_.className = 'module';
  el_.dataset.module = module.module;
  const title = document.createElement('h3');
  title.textContent = module.module;
  const doc = document.createElement('div');
  doc.className = module.error ? 'error' : 'doc';
  if (module.error) doc.textContent = module.error.message ?? String(module.error);
  else doc.append(renderDoc(module.doc ?? ''));
  el_.append(title, doc);
  if (module.widget && !module.error) {
    const host = document.createElement('div');
    host.className = 'widget';
    el_.append(host);
    // On failure the runtime shows why inside `host` (the same notice as in notebooks and embeds).
    mount(host, { url, token: apiToken(), target: module.module }).catch(() => undefined);
  }
  if (!module.error) {
    // Snippets and forms come from the module's reflected schema.
    Promise.all([api(`/v1/project/${encodeURIComponent(module.module)}`), pythonWheel()])
      .then(([schema, wheel]) => el_.append(snippets(schema, wheel), tryPanel(schema)))
      .catch((problem) => el_.append(el('p', { className: 'error' }, `Cannot read its schema: ${problem.message}`)));
  }
  return el_;
}

let wheel;
/** The Python client's wheel on this gateway (GET /v1/python), asked once; null when it cannot be built. */
function pythonWheel() {
  wheel ??= api('/v1/python').then((index) => index.wheels[0] ?? null, () => null);
  return wheel;
}
