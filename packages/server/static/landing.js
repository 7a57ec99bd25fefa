// The gateway's landing page: the project's modules with live previews of their widgets, and a
// data panel that streams a file up and back with progress. Uses only the public runtime.
import { connect, mount } from '/static/portico-widget.js';

const url = location.origin;
const TOKEN_KEY = 'portico.token';

function takeToken() {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromHash) {
    sessionStorage.setItem(TOKEN_KEY, fromHash);
    history.replaceState(null, '', location.pathname + location.search); // keep it out of the address bar
  }
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

let token = takeToken();
const $ = (id) => document.getElementById(id);

async function api(path) {
  const res = await fetch(url + path, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw Object.assign(new Error(body?.detail?.message ?? res.statusText), { status: res.status });
  return body;
}

function card(module) {
  const el = document.createElement('article');
  el.className = 'module';
  el.dataset.module = module.module;
  const title = document.createElement('h3');
  title.textContent = module.module;
  const doc = document.createElement('p');
  doc.className = module.error ? 'error' : 'muted';
  doc.textContent = module.error ? (module.error.message ?? String(module.error)) : (module.doc ?? '');
  el.append(title, doc);
  if (module.widget && !module.error) {
    const host = document.createElement('div');
    host.className = 'widget';
    el.append(host);
    mount(host, { url, token, target: module.module }).catch((err) => {
      host.textContent = `Widget failed: ${err.message}`;
    });
  }
  return el;
}

async function showProject() {
  let index;
  try {
    index = await api('/v1/project');
  } catch (err) {
    if (err.status === 401) {
      $('token-form').hidden = false;
      $('project').textContent = 'Enter the API token to continue.';
      return;
    }
    $('project').textContent = `Cannot load the project: ${err.message}`;
    return;
  }
  $('token-form').hidden = true;
  $('project').textContent = `Project ${index.project}`;
  $('modules').replaceChildren(...index.modules.map(card));
  if (index.modules.some((m) => m.module === 'files' && !m.error)) setUpData();
}

function setUpData() {
  $('data').hidden = false;
  const progress = $('progress');
  const status = $('transfer-status');
  const show = (done, total, verb) => {
    progress.max = total || 1;
    progress.value = done;
    status.textContent = `${verb} ${done.toLocaleString()}${total ? ` of ${total.toLocaleString()}` : ''} bytes`;
  };
  let files;
  let uploaded;
  $('file').addEventListener('change', () => ($('upload').disabled = !$('file').files.length));
  $('upload').addEventListener('click', async () => {
    const file = $('file').files[0];
    $('upload').disabled = true;
    try {
      files ??= await connect({ url, token, target: 'files' });
      const done = await files.upload(file.name, file, { onProgress: (sent, total) => show(sent, total, 'Uploaded') });
      uploaded = { name: done.path, size: file.size };
      status.textContent = `Uploaded ${done.bytes_written.toLocaleString()} bytes to ${done.path}`;
      $('readback').disabled = false;
    } catch (err) {
      status.textContent = `Upload failed: ${err.message}`;
    } finally {
      $('upload').disabled = false;
    }
  });
  $('readback').addEventListener('click', async () => {
    try {
      const blob = await files.read({ name: uploaded.name }, { onProgress: (received) => show(received, uploaded.size, 'Read') });
      status.textContent = `Read back ${blob.size.toLocaleString()} bytes${blob.size === uploaded.size ? ' (sizes match)' : ' (SIZE MISMATCH)'}`;
    } catch (err) {
      status.textContent = `Read failed: ${err.message}`;
    }
  });
}

$('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  token = $('token').value || undefined;
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  showProject();
});

showProject();
