// Inputs built from what the gateway reflects: a JSON Schema property (config fields) or a Python
// annotation (method parameters) says which control to show (checkbox, select, number, text, JSON),
// and each input reads back its value, ABSENT when left empty so that the default applies.
import { Problem } from './api.js';
import { el, toJson } from './dom.js';

export const ABSENT = Symbol('absent');

/** What an input is for, from a JSON Schema property (config fields). */
export function specOfSchema(prop = {}) {
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
export function specOfAnnotation(annotation) {
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

/** A fresh number for an element id of this page (labels point at their inputs by id). */
export const nextFieldId = () => ++fieldIds;

/**
 * One labelled input for a value: `spec` says its type, `field` its name, default, whether it is
 * required and its description. `read()` gives the value, ABSENT when left empty (the default
 * applies), or throws a Problem for JSON that does not parse.
 */
export function inputFor(spec, field) {
  const id = `f${nextFieldId()}`;
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
