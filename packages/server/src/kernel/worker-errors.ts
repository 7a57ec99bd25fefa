/**
 * The worker's refusals as the gateway's errors (README.md in this folder, "Errors"), their texts
 * without the absolute path of the project.
 */
import path from 'node:path';
import { PorticoError, type ErrorCode, type Issue } from '../errors.js';

/**
 * The gateway code of each code the worker refuses with (README.md "Errors"). Every refusal has
 * one; `internal` is kept for the worker failing on a request (a bug in it, logged with its
 * traceback), and any code missing here becomes `internal` too (frame-answers.test.ts holds this
 * table to the worker's sources and README).
 */
const FROM_WORKER: Record<string, ErrorCode> = {
  // Like every failure to resolve, a 400 with issues (service/project.ts names the modules that exist).
  module_not_found: 'unknown_module',
  module_error: 'module_error',
  invalid_config: 'invalid_config',
  method_not_found: 'not_found',
  method_forbidden: 'forbidden',
  invalid_argument: 'invalid_argument',
  call_failed: 'call_failed',
  unserializable_result: 'unserializable_result',
  streaming_unsupported: 'streaming_unsupported',
  cancelled: 'cancelled',
  not_found: 'not_found',
  read_unsupported: 'read_unsupported',
  read_only: 'read_only',
  forbidden: 'forbidden',
  payload_too_large: 'payload_too_large',
  // A request the worker could not take apart (a header it cannot decode, a missing field).
  bad_request: 'invalid_argument',
  internal: 'internal',
};

/**
 * The worker's `error` frame as the gateway's error, its texts without the absolute path of
 * `project` (the worker's folder), which is none of a client's business: a path inside it is
 * made relative to it (`.portico/interfaces/<uuid>/x`), the folder itself is "the project" (or
 * "the project folder"). The gateway log keeps the worker's tracebacks whole.
 */
export function errorFromWorker(header: Record<string, unknown>, project: string): PorticoError {
  const code = FROM_WORKER[String(header.code)] ?? 'internal';
  const message = withoutProjectPath(String(header.message ?? header.code), project);
  const extra: { issues?: Issue[]; exception?: string } = {};
  if (Array.isArray(header.issues)) extra.issues = (header.issues as Issue[]).map((issue) => ({ ...issue, message: withoutProjectPath(String(issue.message), project) }));
  else if (code === 'unknown_module') extra.issues = [{ path: null, message }];
  if (typeof header.exception === 'string') extra.exception = header.exception;
  return new PorticoError(code, message, extra);
}

/** Not followed by what continues a file name: `/srv/p` ends in "/srv/p." but not in "/srv/p2" or "/srv/p.bak". */
const NAME_ENDS = String.raw`(?![\w-]|\.\w)`;

/** `text` with the absolute path of `project` rewritten as errorFromWorker does (for other texts the worker reports to clients). */
export function withoutProjectPath(text: string, project: string): string {
  if (!project || !text.includes(project)) return text;
  const folder = project.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return text
    .replaceAll(project + path.sep, '')
    .replace(new RegExp(`\\bproject ${folder}${NAME_ENDS}`, 'g'), 'the project')
    .replace(new RegExp(`${folder}${NAME_ENDS}`, 'g'), 'the project folder');
}
