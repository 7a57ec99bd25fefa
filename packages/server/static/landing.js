// The gateway's landing page: what Portico is and how to use it (copyable snippets per module), the
// project's modules with live previews of their widgets, a form for every public method (built from
// the schema the gateway reflects) that calls it and shows the answer (JSON, a display bundle, a
// stream with its progress, an error with its issues), the runs (follow, cancel), and a data panel
// that streams a file up and back with progress. Plain DOM, no HTML parsed from answers into the page.
import { connect, mount, renderDisplay } from '/static/portico-widget.js';

const url = location.origin;
const wsBase = url.replace(/^http/, 'ws');
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

/** A failure as the gateway names it: stable code, message, issues ({path, message}) where given. */
class Problem extends Error {
  constructor(code, message, issues = [], exception = undefined) {
    super(message);
    this.code = code;
    this.issues = issues;
    this.exception = exception;
  }
}

/** The Problem of a REST error body ({detail, code, message}) or of an error frame's payload. */
function problemOf(body, status) {
  const detail = body?.detail;
  const issues = Array.isArray(detail)
    ? detail.map((i) => ({ path: (i.loc ?? []).join('.'), message: i.msg ?? String(i) })) // 422: the validation list
    : (detail?.issues ?? body?.issues ?? []);
  const message = body?.message ?? detail?.message ?? (typeof detail === 'string' ? detail : `HTTP ${status}`);
  return new Problem(body?.code ?? detail?.code ?? `http_${status}`, message, issues, detail?.exception ?? body?.exception);
}

async function api(path, { method = 'GET', body } = {}) {
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = res.status === 204 ? null : await res.json().catch(() => null);
  if (!res.ok) throw Object.assign(problemOf(answer, res.status), { status: res.status });
  return answer;
}

/** `el('p', {className: 'x'}, 'text', child)`: an element with properties and children. */
function el(tag, props = {}, ...children) {
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
function toJson(value, indent) {
  return JSON.stringify(value, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? (Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity') : v), indent);
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


// ---- Answers: JSON, display bundles, errors, progress -------------------------------------------

/** JSON on one line when it is short, indented otherwise. */
function renderJson(value) {
  const line = toJson(value) ?? 'undefined';
  return el('pre', { className: 'json' }, line.length <= 72 ? line : toJson(value, 2));
}

function renderError(problem) {
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
function renderValue(value, display, metadata) {
  return display ? renderBundle(display, metadata, value) : renderJson(value);
}

/** The progress convention: an event payload {progress: 0..1, message?}. */
function progressOf(payload) {
  return payload && typeof payload === 'object' && typeof payload.progress === 'number' && payload.progress >= 0 && payload.progress <= 1 ? payload : null;
}

/** A labelled progress bar with a status line. */
function progressBar(label) {
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

// ---- Sockets: /v1/interfaces/ws and /v1/executions/ws ------------------------------------------

/**
 * One socket, connected: `request(frame, onFrame)` sends a frame with a fresh id and hands every
 * answer carrying it to `onFrame`; frames without an id (events, output, status) go to `onPush`.
 */
function openSocket(path, connectFrame) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsBase + path, token ? ['bearer', token] : []);
    const handlers = new Map();
    let next = 1;
    const sock = {
      info: null,
      open: false,
      onPush: () => undefined,
      onClose: () => undefined,
      request(frame, onFrame) {
        const id = `r${next++}`;
        handlers.set(id, onFrame);
        ws.send(JSON.stringify({ ...frame, id }));
        return id;
      },
      done(id) {
        handlers.delete(id);
      },
      close() {
        if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'close', id: 'close' }));
        ws.close();
      },
    };
    ws.onopen = () => ws.send(JSON.stringify({ ...connectFrame, id: 'connect' }));
    ws.onmessage = ({ data }) => {
      if (typeof data !== 'string') return; // this page asks for no binary buffers
      const frame = JSON.parse(data);
      if (frame.id === 'connect') {
        if (frame.type === 'connected') {
          sock.info = frame.payload;
          sock.open = true;
          resolve(sock);
        } else reject(problemOf(frame.payload));
        return;
      }
      const handler = frame.id !== undefined ? handlers.get(frame.id) : undefined;
      if (handler) handler(frame);
      else sock.onPush(frame);
    };
    ws.onclose = ({ code, reason }) => {
      const wasOpen = sock.open;
      sock.open = false;
      const gone = new Problem('closed', `The connection closed (${code}${reason ? `: ${reason}` : ''}).`);
      if (!wasOpen) reject(gone);
      for (const handler of handlers.values()) handler({ type: 'error', payload: { code: gone.code, message: gone.message } });
      handlers.clear();
      if (wasOpen) sock.onClose();
    };
  });
}


// ---- Inputs from the reflected schema ------------------------------------------------------------

const ABSENT = Symbol('absent');

/** What an input is for, from a JSON Schema property (config fields). */
function specOfSchema(prop = {}) {
  let nullable = false;
  let type = prop.type;
  const alternatives = prop.anyOf ?? prop.oneOf;
  if (Array.isArray(alternatives)) {
    const kept = alternatives.filter((a) => a.type !== 'null');
    nullable = kept.length < alternatives.length;
    if (kept.length === 1) return { ...specOfSchema(kept[0]), nullable };
    return { type: 'json', nullable };
  }
  if (Array.isArray(type)) {
    nullable = type.includes('null');
    const kept = type.filter((t) => t !== 'null');
    type = kept.length === 1 ? kept[0] : 'json';
  }
  if (Array.isArray(prop.enum)) return { type: 'enum', options: prop.enum, nullable };
  if (prop.const !== undefined) return { type: 'enum', options: [prop.const], nullable };
  return { type: ['integer', 'number', 'string', 'boolean'].includes(type) ? type : 'json', nullable };
}

/** Splits `a, b[c, d], 'e,f'` at top-level commas (or bars). */
function splitTop(text, sep) {
  const parts = [];
  let depth = 0;
  let quote = '';
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if ('[({'.includes(c)) depth++;
    else if ('])}'.includes(c)) depth--;
    else if (c === sep && depth === 0) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts;
}

/** A Python literal of a Literal[...] annotation as JSON, or ABSENT. */
function pyLiteral(text) {
  if (text === 'True' || text === 'False') return text === 'True';
  if (text === 'None') return null;
  if (/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(text)) return Number(text);
  const m = /^(['"])(.*)\1$/s.exec(text);
  return m ? m[2].replace(/\\(['"\\])/g, '$1') : ABSENT;
}

/** What an input is for, from a parameter's annotation as Python writes it (`int`, `str | None`, `Literal['a', 'b']`). */
function specOfAnnotation(annotation) {
  let text = (annotation ?? '').trim().replace(/^typing\./, '');
  let nullable = false;
  const optional = /^Optional\[(.*)\]$/s.exec(text);
  if (optional) {
    text = optional[1].trim();
    nullable = true;
  }
  let parts = splitTop(text, '|').map((p) => p.replace(/^typing\./, ''));
  if (parts.includes('None')) {
    nullable = true;
    parts = parts.filter((p) => p !== 'None');
  }
  const one = parts.length === 1 ? parts[0] : parts.sort().join('|');
  const literal = /^Literal\[(.*)\]$/s.exec(one);
  if (literal) {
    const options = splitTop(literal[1], ',').map(pyLiteral);
    if (!options.includes(ABSENT)) return { type: 'enum', options, nullable };
  }
  const simple = { int: 'integer', float: 'number', 'float|int': 'number', str: 'string', bool: 'boolean' }[one];
  return { type: simple ?? 'json', nullable };
}

let fieldIds = 0;

/**
 * One labelled input for a value: `spec` says its type, `field` its name, default, whether it is
 * required and its description. `read()` gives the value, ABSENT when left empty (the default
 * applies), or throws a Problem for JSON that does not parse.
 */
function inputFor(spec, field) {
  const id = `f${++fieldIds}`;
  const hasDefault = field.hasDefault && field.default !== null && field.default !== undefined;
  let input;
  let read;
  if (spec.type === 'boolean' && !spec.nullable) {
    input = el('input', { type: 'checkbox', id, checked: hasDefault && field.default === true });
    read = () => input.checked;
  } else if (spec.type === 'enum' || spec.type === 'boolean') {
    const options = spec.type === 'boolean' ? [true, false] : spec.options;
    input = el('select', { id, required: field.required }, el('option', { value: '' }, field.required ? 'choose…' : hasDefault ? `default (${toJson(field.default)})` : '—'));
    for (const option of options) input.append(el('option', { value: toJson(option) }, typeof option === 'string' ? option : toJson(option)));
    read = () => (input.value === '' ? ABSENT : JSON.parse(input.value));
  } else if (spec.type === 'integer' || spec.type === 'number') {
    input = el('input', { type: 'number', id, step: spec.type === 'integer' ? '1' : 'any', required: field.required, inputMode: spec.type === 'integer' ? 'numeric' : 'decimal' });
    if (hasDefault && typeof field.default === 'number') input.value = String(field.default);
    read = () => (input.value === '' ? ABSENT : Number(input.value));
  } else if (spec.type === 'string') {
    input = el('input', { type: 'text', id, required: field.required, autocomplete: 'off' });
    if (hasDefault) input.value = String(field.default);
    read = () => (input.value === '' && !hasDefault ? ABSENT : input.value);
  } else {
    input = el('textarea', { id, rows: 2, required: field.required, placeholder: 'JSON, e.g. [1, 2] or {"a": 1}' });
    input.spellcheck = false;
    if (hasDefault) input.value = toJson(field.default);
    read = () => {
      if (input.value.trim() === '') return ABSENT;
      try {
        return JSON.parse(input.value);
      } catch (err) {
        throw new Problem('invalid_json', `${field.name}: not JSON (${err.message})`, [{ path: field.name, message: 'not JSON' }]);
      }
    };
  }
  input.name = field.name;
  const label = el('label', { htmlFor: id }, el('code', {}, field.name), field.hint ? el('span', { className: 'muted' }, ` ${field.hint}`) : undefined);
  const row = el('div', { className: `field${input.type === 'checkbox' ? ' check' : ''}` }, label, input);
  if (field.description) row.append(el('small', { className: 'muted' }, field.description));
  return { row, input, read, changed: () => toJson(read()) !== toJson(hasDefault ? field.default : ABSENT) && read() !== ABSENT };
}

// ---- Snippets: curl, notebook, embed --------------------------------------------------------------

/** JSON as a Python literal. */
function py(value) {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (Array.isArray(value)) return `[${value.map(py).join(', ')}]`;
  if (typeof value === 'object') return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${py(v)}`).join(', ')}}`;
  return JSON.stringify(value);
}

const isStream = (method) => /generator/.test(method.kind ?? '');

/** An example call: the method's defaults, and a plain value for what has none. */
function exampleKwargs(method) {
  const kwargs = {};
  for (const p of method.parameters ?? []) {
    if (p.kind === 'var_positional' || p.kind === 'var_keyword' || p.kind === 'positional_only') continue;
    if ('default' in p) kwargs[p.name] = p.default;
    else kwargs[p.name] = { integer: 1, number: 1.5, string: 'text', boolean: true }[specOfAnnotation(p.annotation).type] ?? null;
  }
  return kwargs;
}

function snippets(schema) {
  const module = schema.module;
  const methods = schema.methods ?? [];
  const plain = methods.find((m) => !isStream(m) && (m.parameters ?? []).every((p) => 'default' in p)) ?? methods.find((m) => !isStream(m));
  const streaming = methods.find(isStream);
  const auth = token ? ` \\\n     -H "authorization: Bearer $PORTICO_TOKEN"` : '';
  const quoted = (value) => `'${JSON.stringify(value).replaceAll("'", "'\\''")}'`; // one shell word, whatever the JSON holds
  const curl = plain
    ? `curl -s ${url}/v1/interfaces/call -H 'content-type: application/json'${auth} \\\n     -d ${quoted({ target: module, method: plain.name, kwargs: exampleKwargs(plain) })}`
    : `curl -s ${url}/v1/interfaces -H 'content-type: application/json'${auth} \\\n     -d ${quoted({ target: module })}`;
  let name = module.split('.').pop().replace(/\W/g, '_');
  if (/^\d/.test(name)) name = `_${name}`;
  const kw = (m) => Object.entries(exampleKwargs(m)).map(([k, v]) => `${k}=${py(v)}`).join(', ');
  const lines = [
    'from portico.client import Gateway   # PYTHONPATH=<portico>/packages/server/python',
    '',
    token ? `g = Gateway(${JSON.stringify(url)}, token=os.environ["PORTICO_TOKEN"])` : `g = Gateway(${JSON.stringify(url)})`,
    `${name} = g.interface(${JSON.stringify(module)})`,
  ];
  if (token) lines.unshift('import os');
  if (plain) lines.push(`${name}.${plain.name}(${kw(plain)})   # the answer shows in the cell (a figure or a table as a picture)`);
  if (streaming) lines.push(`for item in ${name}.${streaming.name}(${kw(streaming)}):   # items as they are yielded`, '    print(item)');
  const embed = schema.widget
    ? `<script type="module" src="${url}/static/portico-widget.js"></script>\n<portico-widget url="${url}" target="${module}"></portico-widget>${token ? "\n<!-- this gateway needs its API token: set the element's token property (el.token = '…') -->" : ''}`
    : `<script type="module">\n  import { connect } from '${url}/static/portico-widget.js';\n  const ${name} = await connect({ url: '${url}', target: '${module}'${token ? ", token: '<the API token>'" : ''} });\n${plain ? `  console.log(await ${name}.call('${plain.name}', [], ${JSON.stringify(exampleKwargs(plain))}));\n` : ''}</script>`;
  const block = (kind, title, text) => {
    const code = el('pre', { className: 'snippet', tabIndex: 0, 'aria-label': `${title} for ${module}` }, el('code', {}, text));
    const status = el('span', { className: 'copy-status', 'aria-live': 'polite' });
    const button = el('button', { type: 'button', className: 'copy', 'aria-label': `Copy the ${title.toLowerCase()} for ${module}` }, 'Copy');
    button.addEventListener('click', () => copyText(text, code).then((ok) => (status.textContent = ok ? 'Copied' : 'Select the text and copy it (Ctrl+C)')));
    return el('div', { className: 'snippet-block', 'data-snippet': kind }, el('div', { className: 'snippet-head' }, el('strong', {}, title), button, status), code);
  };
  return el(
    'details',
    { className: 'use' },
    el('summary', {}, 'Use it: curl · notebook · embed'),
    block('curl', 'curl (REST)', curl),
    block('notebook', 'Notebook (portico.client)', lines.join('\n')),
    block('embed', 'Embed in a page (widget runtime)', embed),
    el('p', { className: 'muted' }, 'An embedding page must be on an origin the gateway allows (', el('code', {}, '--allow-origin'), ').'),
  );
}

/** The clipboard where the page may use it; else the text selected for Ctrl+C. */
async function copyText(text, pre) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const range = document.createRange();
    range.selectNodeContents(pre);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    return false;
  }
}

// ---- Try it: an interface, its methods, their answers ---------------------------------------------

/**
 * The interface the forms call: a new one from the config form (a version and changed fields), or
 * an existing one picked by uuid. One socket to it hears its events; it is opened on the first call
 * and again when the choice changes.
 */
function interfacePanel(schema) {
  const module = schema.module;
  const existing = el('select', { id: `iface-${++fieldIds}` }, el('option', { value: '' }, 'new, from the config below'));
  const fields = Object.entries(schema.config_schema?.properties ?? {}).map(([name, prop]) =>
    inputFor(specOfSchema(prop), { name, default: prop.default, hasDefault: 'default' in prop, required: (schema.config_schema.required ?? []).includes(name), description: prop.description }),
  );
  const versions = schema.versions ?? [];
  const versionSelect = versions.length ? el('select', { id: `version-${++fieldIds}` }, el('option', { value: '' }, 'none'), ...versions.map((v) => el('option', { value: v }, v))) : null;
  const config = el(
    'fieldset',
    { className: 'config' },
    el('legend', {}, 'Config'),
    versionSelect ? el('div', { className: 'field' }, el('label', { htmlFor: versionSelect.id }, 'Version'), versionSelect) : undefined,
    ...fields.map((f) => f.row),
  );
  if (!fields.length && !versionSelect) config.append(el('p', { className: 'muted' }, 'No config.'));
  const status = el('p', { className: 'iface-status muted', 'aria-live': 'polite' }, 'Not connected yet: the first call connects.');
  const dispatch = el('button', { type: 'button', className: 'dispatch' }, 'Run it as an execution');
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
    if (!stream) {
      const res = await api('/v1/interfaces/call', { method: 'POST', body: { target: sock.info.uuid ?? target, version: sock.info.uuid ? [] : version, method: method.name, args, kwargs } });
      result.replaceChildren(renderValue(res.payload, res.display, res.metadata));
      return;
    }
    const items = el('ol', { className: 'items' });
    result.replaceChildren(items);
    let count = 0;
    await new Promise((resolve) => {
      const id = sock.request({ type: 'call', method: method.name, args, kwargs }, (frame) => {
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
        } else if (frame.type === 'result') result.replaceChildren(renderValue(frame.payload, frame.display, frame.metadata));
        else result.append(renderError(problemOf(frame.payload)));
        resolve();
      });
    });
  } catch (problem) {
    result.replaceChildren(renderError(problem instanceof Problem ? problem : new Problem('error', String(problem?.message ?? problem))));
  }
}

function tryPanel(schema) {
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

function card(module) {
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
    mount(host, { url, token, target: module.module }).catch(() => undefined);
  }
  if (!module.error) {
    // Snippets and forms come from the module's reflected schema.
    api(`/v1/project/${encodeURIComponent(module.module)}`)
      .then((schema) => el_.append(snippets(schema), tryPanel(schema)))
      .catch((problem) => el_.append(el('p', { className: 'error' }, `Cannot read its schema: ${problem.message}`)));
  }
  return el_;
}

// ---- Runs: list, follow, cancel -------------------------------------------------------------------

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

async function showRuns() {
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
async function followRun(uuid) {
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
  $('runs').hidden = false;
  showRuns();
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
$('runs-refresh').addEventListener('click', showRuns);
$('run-close').addEventListener('click', () => {
  following?.sock?.close();
  following = undefined;
  $('run-view').hidden = true;
});

showProject();
