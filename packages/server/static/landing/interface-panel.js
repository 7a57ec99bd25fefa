// "Try it", the interface the method forms call: a new one from the config form (a version and the
// changed fields) or an existing one picked by uuid; one socket to it hears its events (listed, and
// progress handed to the latest call's bar); "Run it as an execution" dispatches it as a run.
import { api } from './api.js';
import { progressOf, renderError, renderValue } from './answers.js';
import { el, toJson } from './dom.js';
import { inputFor, nextFieldId, specOfSchema } from './inputs.js';
import { followRun, showRuns } from './runs.js';
import { openSocket } from './sockets.js';

/**
 * The interface the forms call: a new one from the config form (a version and changed fields), or
 * an existing one picked by uuid. One socket to it hears its events; it is opened on the first call
 * and again when the choice changes.
 */
export function interfacePanel(schema) {
  const module = schema.module;
  const existing = el('select', { id: `iface-${nextFieldId()}` }, el('option', { value: '' }, 'new, from the config below'));
  const fields = Object.entries(schema.config_schema?.properties ?? {}).map(([name, prop]) =>
    inputFor(specOfSchema(prop), { name, default: prop.default, hasDefault: 'default' in prop, required: (schema.config_schema.required ?? []).includes(name), description: prop.description }),
  );
  const versions = schema.versions ?? [];
  const versionSelect = versions.length ? el('select', { id: `version-${nextFieldId()}` }, el('option', { value: '' }, 'none'), ...versions.map((v) => el('option', { value: v }, v))) : null;
  const config = el(
    'fieldset',
    { className: 'config' },
    el('legend', {}, 'Config'),
    versionSelect ? el('div', { className: 'field' }, el('label', { htmlFor: versionSelect.id }, 'Version'), versionSelect) : undefined,
    ...fields.map((f) => f.row),
  );
  if (!fields.length && !versionSelect) config.append(el('p', { className: 'muted' }, 'No config.'));
  const status = el('p', { className: 'iface-status muted', 'aria-live': 'polite' }, 'Not connected yet: the first call connects.');
  // Only an interface that defines __call__ can run as an execution (the schema's `runnable`).
  const dispatch = el('button', { type: 'button', className: 'dispatch', hidden: !schema.runnable }, 'Run it as an execution');
  const events = el('ol', { className: 'events' });
  const eventBox = el('details', { className: 'events-box', hidden: true }, el('summary', {}, 'Events'), events);
  const element = el(
    'form',
    { className: 'interface', 'aria-label': `Interface of ${module}` },
    el('div', { className: 'field' }, el('label', { htmlFor: existing.id }, 'Interface'), existing),
    config,
    el('div', { className: 'actions' }, dispatch),
    status,
    eventBox,
  );
  element.addEventListener('submit', (e) => e.preventDefault());
  let sock;
  let sockKey;
  let progressTarget;
  const panel = {
    element,
    /** {target, version} of the chosen interface (throws a Problem for a config field that does not parse). */
    current() {
      if (existing.value) return { target: existing.value, version: [] };
      const version = versionSelect?.value ? [versionSelect.value] : [];
      const changed = {};
      for (const f of fields) if (f.changed()) changed[f.input.name] = f.read();
      if (Object.keys(changed).length) version.push(changed);
      return { target: module, version };
    },
    /** The socket to the chosen interface, connected (the same one while the choice stays). */
    async socket() {
      const { target, version } = panel.current();
      const key = toJson({ target, version });
      if (sock?.open && sockKey === key) return sock;
      sock?.close();
      sockKey = key;
      status.textContent = 'Connecting…';
      try {
        sock = await openSocket('/v1/interfaces/ws', { type: 'connect', target, version });
      } catch (problem) {
        status.textContent = `Cannot connect: ${problem.code}: ${problem.message}`;
        throw problem;
      }
      const info = sock.info;
      status.replaceChildren('Connected to ', el('code', { className: 'uuid' }, info.uuid), ` (${module}, config ${toJson(info.config)})`);
      sock.onPush = (frame) => {
        if (frame.type !== 'event') return;
        const progress = progressOf(frame.payload);
        if (progress) progressTarget?.(progress);
        eventBox.hidden = false;
        events.prepend(el('li', {}, renderValue(frame.payload, frame.display, frame.metadata)));
        while (events.children.length > 20) events.lastElementChild.remove();
      };
      sock.onClose = () => (status.textContent = 'Disconnected: the next call connects again.');
      return sock;
    },
    /** Progress events go to the bar of the latest call. */
    follow(onProgress) {
      progressTarget = onProgress;
    },
  };
  element.addEventListener('change', (e) => {
    if (e.target === existing) config.disabled = Boolean(existing.value);
  });
  panel.loadExisting = async () => {
    try {
      const found = await api('/v1/interfaces/search', { method: 'POST', body: { module, limit: 50 } });
      const chosen = existing.value;
      existing.replaceChildren(existing.firstElementChild);
      for (const item of found.items) existing.append(el('option', { value: item.uuid }, `${item.label ? `${item.label} · ` : ''}${item.uuid.slice(0, 8)} ${toJson(item.config)}`));
      existing.value = chosen;
    } catch {
      // the form works without the list
    }
  };
  dispatch.addEventListener('click', async () => {
    let chosen;
    try {
      chosen = panel.current();
      const run = await api('/v1/executions', { method: 'POST', body: { interfaces: [chosen] } });
      status.textContent = `Dispatched run ${run.uuid}.`;
      await showRuns();
      followRun(run.uuid);
    } catch (problem) {
      status.replaceChildren(renderError(problem));
    }
  });
  return panel;
}
