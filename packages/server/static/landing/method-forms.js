// "Try it", the methods: a form for every public method (inputs from its parameters), which calls
// it through the chosen interface and shows its answer: a result, a stream's items as they come
// (with a count or the progress its events report), or an error with its issues.
import { Problem, problemOf } from './api.js';
import { progressBar, renderError, renderValue } from './answers.js';
import { el } from './dom.js';
import { renderDoc } from './docstrings.js';
import { ABSENT, inputFor, specOfAnnotation } from './inputs.js';
import { interfacePanel } from './interface-panel.js';
import { isStream } from './snippets.js';

/** Builds args and kwargs from the method's inputs, by parameter kind. */
function argumentsOf(method, inputs) {
  const args = [];
  const kwargs = {};
  const params = method.parameters ?? [];
  const positional = params.some((p) => p.kind === 'positional_only' || p.kind === 'var_positional');
  for (const [i, p] of params.entries()) {
    const value = inputs[i].read();
    if (p.kind === 'var_positional') {
      if (value === ABSENT) continue;
      if (!Array.isArray(value)) throw new Problem('invalid_argument', `*${p.name}: a JSON array of the extra positional arguments`);
      args.push(...value);
    } else if (p.kind === 'var_keyword') {
      if (value === ABSENT) continue;
      if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Problem('invalid_argument', `**${p.name}: a JSON object of the extra keyword arguments`);
      Object.assign(kwargs, value);
    } else if (p.kind === 'positional_only' || (positional && p.kind === 'positional_or_keyword')) {
      // positionally, in order: an empty one takes its default so that later ones keep their place
      if (value !== ABSENT) args.push(value);
      else if ('default' in p) args.push(p.default);
      else throw new Problem('invalid_argument', `${p.name} is required`, [{ path: p.name, message: 'required' }]);
    } else if (value !== ABSENT) kwargs[p.name] = value;
  }
  return { args, kwargs };
}

/** A method's form: its signature, docstring and inputs; submitting it calls the method. */
function methodForm(panel, method) {
  const stream = isStream(method);
  const params = method.parameters ?? [];
  const inputs = params.map((p) => {
    const starred = p.kind === 'var_positional' ? '*' : p.kind === 'var_keyword' ? '**' : '';
    const spec = starred ? { type: 'json' } : specOfAnnotation(p.annotation);
    return inputFor(spec, { name: `${starred}${p.name}`, default: p.default, hasDefault: 'default' in p, required: !starred && !('default' in p), hint: p.annotation ?? undefined });
  });
  const answer = el('div', { className: 'answer', 'aria-live': 'polite' });
  const button = el('button', { type: 'submit' }, stream ? 'Stream' : 'Call');
  const form = el(
    'form',
    { className: 'method', 'data-method': method.name, 'aria-label': `${method.name}${method.signature}` },
    el('h4', {}, el('code', {}, `${method.name}${method.signature}`), stream ? el('span', { className: 'badge' }, 'streams') : undefined),
    method.doc ? el('div', { className: 'method-doc' }, renderDoc(method.doc)) : undefined,
    ...inputs.map((i) => i.row),
    el('div', { className: 'actions' }, button),
    answer,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    button.disabled = true;
    try {
      await callInto(panel, method, inputs, answer, stream);
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

/** Calls the method and shows what it answers, with progress from the interface's events. */
async function callInto(panel, method, inputs, answer, stream) {
  const bar = progressBar(`Progress of ${method.name}`);
  let sawProgress = false;
  const result = el('div', { className: 'result' });
  answer.replaceChildren(bar.box, result);
  result.append(el('p', { className: 'muted calling' }, stream ? 'Streaming…' : 'Calling…'));
  try {
    const { args, kwargs } = argumentsOf(method, inputs);
    const { target, version } = panel.current();
    const sock = await panel.socket(); // attached first, so that events emitted during the call reach this page
    panel.follow((p) => {
      sawProgress = true;
      bar.show(p.progress, p.message);
    });
    // Calls and streams alike over the socket: what the method prints shows under the form as it runs.
    const items = el('ol', { className: 'items' });
    const printed = el('pre', { className: 'output', hidden: true, 'aria-label': `What ${method.name} printed` });
    result.replaceChildren(printed, ...(stream ? [items] : [el('p', { className: 'muted calling' }, 'Calling…')]));
    let count = 0;
    await new Promise((resolve) => {
      const id = sock.request({ type: 'call', method: method.name, args, kwargs }, (frame) => {
        if (frame.type === 'output') {
          printed.hidden = false;
          printed.append(el('span', { className: frame.payload.stream }, frame.payload.text));
          return;
        }
        if (frame.type === 'stream' && !frame.final) {
          count++;
          items.append(el('li', {}, renderValue(frame.payload, frame.display, frame.metadata)));
          if (!sawProgress) bar.count(count, false);
          return;
        }
        sock.done(id);
        if (frame.type === 'stream') {
          if (!sawProgress) bar.count(count, true);
          result.append(el('p', { className: 'muted stream-end' }, `Stream ended after ${count} item${count === 1 ? '' : 's'}.`));
        } else if (frame.type === 'result') result.replaceChildren(printed, renderValue(frame.payload, frame.display, frame.metadata));
        else result.replaceChildren(printed, renderError(problemOf(frame.payload)));
        resolve();
      });
    });
  } catch (problem) {
    result.replaceChildren(renderError(problem instanceof Problem ? problem : new Problem('error', String(problem?.message ?? problem))));
  }
}

/** The "Try it" box of a module: the interface panel, then a form for every public method. */
export function tryPanel(schema) {
  const panel = interfacePanel(schema);
  const methods = schema.methods ?? [];
  const details = el(
    'details',
    { className: 'try' },
    el('summary', {}, `Try it: ${methods.length} method${methods.length === 1 ? '' : 's'}`),
    panel.element,
    ...methods.map((m) => methodForm(panel, m)),
  );
  if (!methods.length) details.append(el('p', { className: 'muted' }, 'No public methods.'));
  details.addEventListener('toggle', () => details.open && panel.loadExisting());
  return details;
}
