/**
 * The `portico get …` line that reproduces a resolved interface: the module, then each version
 * item as one shell word. Dicts are flattened to dotted `key=<Python literal>` assignments, so
 * that the worker's literal parser reads back exactly the value that was resolved (a string
 * `"1"` stays a string, `true` becomes `True`).
 */

/** A JSON value as a Python literal (what `ast.literal_eval` reads back to the same value). */
export function pythonLiteral(value: unknown): string {
  if (value === null) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'None';
  // JSON string syntax (double quotes, \n, \uXXXX escapes) is valid Python string syntax.
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(pythonLiteral).join(', ')}]`;
  const entries = Object.entries(value as Record<string, unknown>).map(([k, v]) => `${JSON.stringify(k)}: ${pythonLiteral(v)}`);
  return `{${entries.join(', ')}}`;
}

/** Flattens nested dicts into dotted keys; empty dicts and non-dict values are leaves. */
function flatten(value: Record<string, unknown>, prefix = ''): Array<[string, unknown]> {
  return Object.entries(value).flatMap(([key, v]) => {
    const dotted = prefix ? `${prefix}.${key}` : key;
    return v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length
      ? flatten(v as Record<string, unknown>, dotted)
      : [[dotted, v] as [string, unknown]];
  });
}

/** Quotes one word for a POSIX shell (only when it needs it). */
export function shellQuote(word: string): string {
  // No '~' (tilde expansion) and no shell metacharacters unquoted.
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The version items as CLI words. */
export function versionWords(version: unknown[]): string[] {
  return version.flatMap((item) =>
    typeof item === 'string' ? [item] : flatten(item as Record<string, unknown>).map(([k, v]) => `${k}=${pythonLiteral(v)}`),
  );
}

export function cliLine(module: string, version: unknown[], project?: string): string {
  const words = ['portico', 'get', module, ...versionWords(version)];
  if (project) words.push('--project', project);
  return words.map(shellQuote).join(' ');
}
