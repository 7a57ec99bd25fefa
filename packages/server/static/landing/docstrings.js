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

export function renderDoc(text) {
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

