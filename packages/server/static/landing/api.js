// The gateway this page came from and the API token of this tab (from the URL fragment or the
// token form, kept in sessionStorage), and `api()`: a REST call whose failure throws a Problem,
// the error as the gateway names it (stable code, message, issues).
export const url = location.origin;
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

/** The API token this tab uses, or undefined when the gateway needs none. */
export const apiToken = () => token;

/** Uses `value` as the API token from now on (and for this tab's next loads); empty means none. */
export function useToken(value) {
  token = value || undefined;
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
}

/** A failure as the gateway names it: stable code, message, issues ({path, message}) where given. */
export class Problem extends Error {
  constructor(code, message, issues = [], exception = undefined) {
    super(message);
    this.code = code;
    this.issues = issues;
    this.exception = exception;
  }
}

/** The Problem of a REST error body ({detail, code, message}) or of an error frame's payload. */
export function problemOf(body, status) {
  const detail = body?.detail;
  const issues = Array.isArray(detail)
    ? detail.map((i) => ({ path: (i.loc ?? []).join('.'), message: i.msg ?? String(i) })) // 422: the validation list
    : (detail?.issues ?? body?.issues ?? []);
  const message = body?.message ?? detail?.message ?? (typeof detail === 'string' ? detail : `HTTP ${status}`);
  return new Problem(body?.code ?? detail?.code ?? `http_${status}`, message, issues, detail?.exception ?? body?.exception);
}

/** A REST call with this tab's token: the JSON answer (null for a 204), or it throws the Problem, with `status`. */
export async function api(path, { method = 'GET', body } = {}) {
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = res.status === 204 ? null : await res.json().catch(() => null);
  if (!res.ok) throw Object.assign(problemOf(answer, res.status), { status: res.status });
  return answer;
}
