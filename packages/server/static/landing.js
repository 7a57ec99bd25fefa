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

// Docstrings as authors write them: reStructuredText or Markdown, a small safe subset (literals,
// emphasis, lists, `:param x:` fields), built as DOM nodes; nothing is parsed as HTML.
const INLINE = /``(.+?)``|`([^`]+)`|\*\*(.+?)\*\*|\*([^*\s](?:[^*]*[^*\s])?)\*/g;

function inline(text) {
  const out = document.createDocumentFragment();
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    out.append(text.slice(last, m.index));
    const [tag, body] = m[1] ?? m[2] ? ['code', m[1] ?? m[2]] : m[3] ? ['strong', m[3]] : ['em', m[4]];
    const el = document.createElement(tag);
    el.textContent = body;
    out.append(el);
    last = m.index + m[0].length;
  }
  out.append(text.slice(last));
  return out;
}

function dedent(text) {
  const lines = text.replace(/\t/g, '    ').split('\n');
  const indents = lines.slice(1).filter((l) => l.trim()).map((l) => l.match(/^ */)[0].length);
  const cut = indents.length ? Math.min(...indents) : 0;
  return [lines[0].trim(), ...lines.slice(1).map((l) => l.slice(cut))].join('\n').trim();
}

const FIELD = /^:(param|parameter|arg|argument|key|keyword|returns?|raises?|yields?)\s*([^:]*):\s*(.*)$/;
const BULLET = /^(?:[-*+]|\d+[.)])\s+/;

function renderDoc(text) {
  const out = document.createDocumentFragment();
  let fields;
  for (const block of dedent(text).split(/\n\s*\n/)) {
    const lines = block.split('\n').map((l) => l.trim()).filter(Boolean);
    if (!lines.length) continue;
    if (FIELD.test(lines[0])) {
      if (!fields) {
        fields = document.createElement('dl');
        fields.className = 'fields';
      }
      for (const line of lines) {
        const m = FIELD.exec(line);
        if (!m) {
          fields.lastElementChild?.append(' ', inline(line)); // a field's continuation line
          continue;
        }
        const [, kind, name, desc] = m;
        const dt = document.createElement('dt');
        const label = /^ret/.test(kind) ? 'returns' : /^rai/.test(kind) ? 'raises' : /^yield/.test(kind) ? 'yields' : '';
        dt.append(label || inline(`\`\`${name.trim().split(/\s+/).pop()}\`\``));
        const dd = document.createElement('dd');
        dd.append(inline(desc));
        fields.append(dt, dd);
      }
      out.append(fields);
      continue;
    }
    if (lines.every((l) => BULLET.test(l))) {
      const list = document.createElement(/^\d/.test(lines[0]) ? 'ol' : 'ul');
      for (const line of lines) {
        const li = document.createElement('li');
        li.append(inline(line.replace(BULLET, '')));
        list.append(li);
      }
      out.append(list);
      continue;
    }
    const p = document.createElement('p');
    p.append(inline(lines.join(' ')));
    out.append(p);
  }
  return out;
}

function card(module) {
  const el = document.createElement('article');
  el.className = 'module';
  el.dataset.module = module.module;
  const title = document.createElement('h3');
  title.textContent = module.module;
  const doc = document.createElement('div');
  doc.className = module.error ? 'error' : 'doc';
  if (module.error) doc.textContent = module.error.message ?? String(module.error);
  else doc.append(renderDoc(module.doc ?? ''));
  el.append(title, doc);
  if (module.widget && !module.error) {
    const host = document.createElement('div');
    host.className = 'widget';
    el.append(host);
    // On failure the runtime shows why inside `host` (the same notice as in notebooks and embeds).
    mount(host, { url, token, target: module.module }).catch(() => undefined);
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
