// How the page shows what the gateway answers: JSON, display bundles (by the widget runtime's
// renderer), errors with their code and issues, and progress bars fed by progress events.
import { renderDisplay } from '/static/portico-widget.js';
import { Problem } from './api.js';
import { el, toJson } from './dom.js';

/** JSON on one line when it is short, indented otherwise. */
function renderJson(value) {
  const line = toJson(value) ?? 'undefined';
  return el('pre', { className: 'json' }, line.length <= 72 ? line : toJson(value, 2));
}

/** An error as an alert: its stable code, its message, and its issues (path: message) as a list. */
export function renderError(problem) {
  const box = el('div', { className: 'error', role: 'alert' }, el('strong', { className: 'code' }, problem.code ?? 'error'), ' ', problem.message);
  if (problem.issues?.length) {
    box.append(el('ul', { className: 'issues' }, ...problem.issues.map((i) => el('li', {}, i.path ? el('code', {}, String(i.path)) : '', i.path ? ': ' : '', String(i.message ?? toJson(i))))));
  }
  return box;
}

/**
 * A MIME bundle as a notebook shows it, by the widget runtime's renderDisplay (the one renderer of
 * the project's pages): its richest safe representation, images as <img> (an SVG too, so nothing
 * in it runs), HTML in a frame sandboxed without scripts, image bytes that are not what their MIME
 * type says as an error notice; the JSON payload beside it when there is one.
 */
function renderBundle(bundle, metadata = {}, payload = null) {
  const shown = el('div');
  const box = el('div', { className: 'display' }, shown);
  renderDisplay(shown, { display: bundle, metadata }).catch((err) => shown.replaceChildren(renderError(new Problem(err.code ?? 'invalid_display', err.message))));
  if (payload !== null && payload !== undefined) box.append(el('details', { className: 'payload' }, el('summary', {}, 'JSON payload'), renderJson(payload)));
  return box;
}

/** A result, stream item or event: its bundle when it carries one, else its JSON. */
export function renderValue(value, display, metadata) {
  return display ? renderBundle(display, metadata, value) : renderJson(value);
}

/** The progress convention: an event payload {progress: 0..1, message?}. */
export function progressOf(payload) {
  return payload && typeof payload === 'object' && typeof payload.progress === 'number' && payload.progress >= 0 && payload.progress <= 1 ? payload : null;
}

/** A labelled progress bar with a status line. */
export function progressBar(label) {
  const bar = el('progress', { max: 1, value: 0, 'aria-label': label });
  const status = el('span', { className: 'progress-status' });
  const box = el('div', { className: 'progress', hidden: true }, bar, ' ', status);
  return {
    box,
    show(fraction, message) {
      box.hidden = false;
      bar.value = fraction;
      status.textContent = `${Math.round(fraction * 100)}%${message ? ` · ${message}` : ''}`;
    },
    count(n, done) {
      box.hidden = false;
      if (done) bar.value = bar.max;
      else bar.removeAttribute('value'); // indeterminate: the stream says no fraction
      status.textContent = `${n} item${n === 1 ? '' : 's'}${done ? ', done' : '…'}`;
    },
  };
}
