// "Use it": for each module, the three ways in as snippets to copy, built from its reflected
// schema with an example call: curl (REST), a notebook (portico.client), and a web page (the widget
// runtime's <portico-widget> or connect()).
import { apiToken, url } from './api.js';
import { el } from './dom.js';
import { specOfAnnotation } from './inputs.js';

/** JSON as a Python literal. */
function py(value) {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (Array.isArray(value)) return `[${value.map(py).join(', ')}]`;
  if (typeof value === 'object') return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${py(v)}`).join(', ')}}`;
  return JSON.stringify(value);
}

/** Whether a method streams (a generator): its items come one by one. */
export const isStream = (method) => /generator/.test(method.kind ?? '');

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

/**
 * The notebook's first line: the Python client installed with pip from this gateway (`wheel`, of
 * GET /v1/python). pip sends no bearer token, so a gateway that needs one gets the wheel with curl.
 */
function installLines(wheel, token) {
  if (!wheel) return ['# the Python client: pip install <portico>/packages/server/python'];
  if (!token) return [`%pip install ${wheel.url}`];
  return [`!curl -fsS -H "authorization: Bearer $PORTICO_TOKEN" -o /tmp/${wheel.filename} ${wheel.url}`, `%pip install /tmp/${wheel.filename}`];
}

/** The "Use it" box of a module: its curl, notebook and embed snippets, each with a Copy button. */
export function snippets(schema, wheel) {
  const module = schema.module;
  const methods = schema.methods ?? [];
  const plain = methods.find((m) => !isStream(m) && (m.parameters ?? []).every((p) => 'default' in p)) ?? methods.find((m) => !isStream(m));
  const streaming = methods.find(isStream);
  const token = apiToken();
  const auth = token ? ` \\\n     -H "authorization: Bearer $PORTICO_TOKEN"` : '';
  const quoted = (value) => `'${JSON.stringify(value).replaceAll("'", "'\\''")}'`; // one shell word, whatever the JSON holds
  const curl = plain
    ? `curl -s ${url}/v1/interfaces/call -H 'content-type: application/json'${auth} \\\n     -d ${quoted({ target: module, method: plain.name, kwargs: exampleKwargs(plain) })}`
    : `curl -s ${url}/v1/interfaces -H 'content-type: application/json'${auth} \\\n     -d ${quoted({ target: module })}`;
  let name = module.split('.').pop().replace(/\W/g, '_');
  if (/^\d/.test(name)) name = `_${name}`;
  const kw = (m) => Object.entries(exampleKwargs(m)).map(([k, v]) => `${k}=${py(v)}`).join(', ');
  const lines = [
    ...installLines(wheel, token),
    ...(token ? ['import os'] : []),
    'from portico.client import Gateway',
    '',
    token ? `g = Gateway(${JSON.stringify(url)}, token=os.environ["PORTICO_TOKEN"])` : `g = Gateway(${JSON.stringify(url)})`,
    `${name} = g.interface(${JSON.stringify(module)})`,
  ];
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
