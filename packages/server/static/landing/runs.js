// The runs view: the project's executions newest first (module, status, Follow, Cancel), and the
// one followed over /v1/executions/ws, its output as it grows, its status and its events.
import { api } from './api.js';
import { progressBar, progressOf, renderError, renderValue } from './answers.js';
import { $, el } from './dom.js';
import { openSocket } from './sockets.js';

const moduleOfInterface = new Map();
const ENDED = new Set(['finished', 'failed', 'interrupted']);
let following;

async function moduleOf(uuid) {
  if (!uuid) return '';
  if (!moduleOfInterface.has(uuid)) moduleOfInterface.set(uuid, api(`/v1/interfaces/${uuid}`).then((i) => i.module, () => uuid.slice(0, 8)));
  return moduleOfInterface.get(uuid);
}

const statusBadge = (status) => el('span', { className: `status status-${status}` }, status);

async function runRow(run) {
  const module = await moduleOf(run.interfaces[0]);
  const follow = el('button', { type: 'button', className: 'follow' }, 'Follow');
  const cancel = el('button', { type: 'button', className: 'cancel', disabled: ENDED.has(run.status) }, 'Cancel');
  follow.addEventListener('click', () => followRun(run.uuid));
  cancel.addEventListener('click', () => cancelRun(run.uuid));
  return el(
    'li',
    { className: 'run', 'data-run': run.uuid, 'data-status': run.status },
    el('code', { className: 'uuid', title: run.uuid }, run.uuid.slice(0, 12)),
    ' ',
    el('span', { className: 'run-module' }, module),
    ' ',
    statusBadge(run.status),
    ' ',
    el('time', { className: 'muted', dateTime: run.created_at }, new Date(run.created_at).toLocaleString()),
    el('span', { className: 'run-actions' }, follow, cancel),
    run.error ? el('div', { className: 'error' }, `${run.error.exception}: ${run.error.message}`) : undefined,
  );
}

/** Lists the project's runs, newest first (the 30 latest), each with Follow and Cancel. */
export async function showRuns() {
  const list = $('runs-list');
  try {
    const runs = await api('/v1/executions?limit=30');
    runs.sort((a, b) => b.created_at.localeCompare(a.created_at));
    const rows = await Promise.all(runs.map(runRow));
    list.replaceChildren(...rows);
    $('runs-empty').hidden = rows.length > 0;
  } catch (problem) {
    list.replaceChildren(el('li', {}, renderError(problem)));
  }
}

function updateRunRow(info) {
  const row = document.querySelector(`#runs-list li[data-run="${info.uuid}"]`);
  if (!row) return;
  row.dataset.status = info.status;
  row.querySelector('.status').replaceWith(statusBadge(info.status));
  row.querySelector('.cancel').disabled = ENDED.has(info.status);
}

async function cancelRun(uuid) {
  try {
    await api(`/v1/executions/${uuid}/cancel`, { method: 'POST' });
    // Follow it, so that its end (interrupted) shows where the person looks.
    if (following?.uuid !== uuid) await followRun(uuid);
  } catch (problem) {
    $('run-view').hidden = false;
    $('run-events').prepend(el('li', {}, renderError(problem)));
  }
}

/** Follows one run over /v1/executions/ws: its output as it grows, its status, its events. */
export async function followRun(uuid) {
  following?.sock?.close();
  const view = $('run-view');
  const output = $('run-output');
  const events = $('run-events');
  const bar = progressBar('Progress of the run');
  view.hidden = false;
  $('run-title').textContent = `Run ${uuid}`;
  $('run-progress').replaceChildren(bar.box);
  output.textContent = '';
  events.replaceChildren();
  const status = $('run-status');
  status.textContent = 'Connecting…';
  const me = { uuid };
  following = me;
  $('run-cancel').onclick = () => cancelRun(uuid);
  $('run-title').focus();
  const showStatus = (info) => {
    status.replaceChildren(statusBadge(info.status), info.error ? ` ${info.error.exception}: ${info.error.message}` : '', info.cancelled ? ' (cancelled)' : '');
    $('run-cancel').disabled = ENDED.has(info.status);
    updateRunRow(info);
  };
  try {
    me.sock = await openSocket('/v1/executions/ws', { type: 'connect', target: uuid });
  } catch (problem) {
    status.replaceChildren(renderError(problem));
    return;
  }
  if (following !== me) return me.sock.close();
  showStatus(me.sock.info);
  me.sock.onPush = (frame) => {
    if (frame.type === 'output') output.textContent += frame.payload.output;
    else if (frame.type === 'status') showStatus(frame.payload);
    else if (frame.type === 'event') {
      // an events.jsonl line: {at, interface, payload, display?, metadata?}
      const line = frame.payload ?? {};
      const progress = progressOf(line.payload);
      if (progress) bar.show(progress.progress, progress.message);
      events.prepend(el('li', {}, renderValue(line.payload, line.display ?? frame.display, line.metadata ?? frame.metadata)));
    }
  };
}

/** Stops following the run and hides its view. */
export function stopFollowing() {
  following?.sock?.close();
  following = undefined;
  $('run-view').hidden = true;
}
