/**
 * The one error type of the gateway. Every failure that reaches a client is a PorticoError with
 * a stable `code`; the code fixes the HTTP status, and the same error is rendered once as an HTTP
 * body (`http/errors.ts`) and once as a WebSocket `error` frame (`ws/socket-session.ts`). What only
 * the gateway's operator may read (database hosts, driver messages, interpreter paths) travels
 * apart, as `internal`: logged and printed by the CLI, never sent to a client.
 */

/** Stable error codes, each with its one HTTP status and meaning (listed in /v1/protocol). */
export const ERROR_CODES = {
  invalid_argument: { status: 400, meaning: 'The arguments do not fit the method or request, or the request JSON nests deeper than limits.jsonDepthMax.' },
  invalid_config: { status: 400, meaning: 'The version cannot be resolved against the Config; see issues.' },
  invalid_frame: { status: 400, meaning: 'A WebSocket frame is not valid JSON or misses required fields, or its numeric id is one JSON cannot carry exactly (the answer names it as a string).' },
  unknown_frame: { status: 400, meaning: 'A WebSocket frame has an unknown type.' },
  not_connected: { status: 409, meaning: 'The frame needs a connected interface; send connect first.' },
  already_connected: { status: 409, meaning: 'The socket is already connected to an interface.' },
  transfer_active: { status: 409, meaning: 'A binary upload or read is active on this socket; finish it (chunk_end) before starting another or connecting.' },
  no_active_upload: { status: 409, meaning: 'A binary frame or chunk_end arrived with no upload active (send chunk_start first).' },
  upload_id_mismatch: { status: 409, meaning: 'chunk_end names another id than the active upload; the upload stays active.' },
  read_unsupported: { status: 400, meaning: 'The interface defines no read(params) hook.' },
  read_only: { status: 409, meaning: 'The widget does not accept changes (its widget_update rejected them).' },
  call_failed: { status: 400, meaning: 'The method raised; `exception` names its class.' },
  unserializable_result: { status: 400, meaning: 'The method returned a value that is not JSON.' },
  streaming_unsupported: {
    status: 400,
    meaning: 'A generator was called over REST with a plain JSON answer asked for: stream it with Accept: application/x-ndjson (or text/event-stream), or over the WebSocket.',
  },
  module_error: { status: 400, meaning: 'The module fails to import, or has no single interface class.' },
  unknown_module: {
    status: 400,
    meaning:
      'The target names no module of the project: in a body or frame, like every resolve failure, a 400 with issues; in a path (GET /v1/project/{module}, its widget assets), a missing resource, 404. Either way the message and issue name the nearest and the existing interface modules.',
  },
  unauthorized: { status: 401, meaning: 'Missing, invalid, tampered or expired bearer credential.' },
  forbidden: { status: 403, meaning: 'The request is outside what this gateway allows (project roots, interpreter allowlist, origins, private methods).' },
  mint_refused: { status: 403, meaning: 'Only the api token itself may mint a session token; a session or OIDC token cannot.' },
  not_found: { status: 404, meaning: 'No such interface, method or file.' },
  method_not_allowed: { status: 405, meaning: 'The path exists but not with this HTTP method; the Allow header lists the methods it has.' },
  not_implemented: { status: 501, meaning: 'CONNECT (the gateway is no proxy), or a method HTTP does not know; the connection closes.' },
  bad_request: { status: 400, meaning: 'The HTTP request cannot be parsed (its request line, a header or the body framing); the connection closes.' },
  request_timeout: { status: 408, meaning: 'The request headers (60 s) or the whole request (5 minutes) did not arrive in time; the connection closes.' },
  headers_too_large: { status: 431, meaning: 'The request line and header fields exceed 16 KiB; the connection closes.' },
  job_refused: { status: 400, meaning: 'The cluster scheduler refused the run (an unknown partition or account, resources beyond a limit); its message says why.' },
  execution_unreadable: { status: 409, meaning: "The run's folder is there but its execution.json is missing, truncated or not this run's (half-written by another gateway, or damaged); the run is left out of listings." },
  conflict: { status: 409, meaning: 'The request conflicts with the current state.' },
  no_api_token: { status: 409, meaning: 'The gateway has no api token, so it mints no session tokens.' },
  integrity_failed: { status: 409, meaning: 'A remote module does not match its sha256 pin; it is not used.' },
  precondition_failed: { status: 412, meaning: 'A conditional request did not match.' },
  file_needs_raw: {
    status: 406,
    meaning:
      'GET /v1/interfaces/{uuid}/files/{path} answers a file as JSON by default (a .json file parsed, any other as a JSON string); this one is not UTF-8 text, or a .json file that does not parse or nests deeper than limits.jsonDepthMax, so it has no such answer: ask for its bytes with ?raw=true or Accept: application/octet-stream.',
  },
  range_not_satisfiable: { status: 416, meaning: 'The requested byte range lies outside the file.' },
  payload_too_large: { status: 413, meaning: 'A body, frame or upload exceeds its documented bound.' },
  validation_error: { status: 422, meaning: 'The request body or parameters fail validation.' },
  cancelled: { status: 499, meaning: 'The call was cancelled (its client went away).' },
  internal: { status: 500, meaning: 'An unexpected gateway failure (details are in the gateway log).' },
  remote_unavailable: { status: 502, meaning: 'A remote module could not be fetched.' },
  worker_crashed: { status: 502, meaning: 'The Python worker died (or was found wedged and killed) during the call; it is started again at once and the instance is made again on its next use.' },
  owner_lost: {
    status: 502,
    meaning:
      'Several gateways: the gateway that owned this live instance went away, froze (no answer to pings, no lease renewal) or lost its lease while the request was on its way there; the answer is lost. The next request makes the instance again, with its saved widget state, on whichever gateway takes its lease (at most 4/3 of --instance-lease later).',
  },
  owner_unreachable: {
    status: 503,
    meaning: 'Several gateways: the gateway that owns this live instance cannot be reached from this one and kept renewing its lease for longer than --instance-lease; retry, or reach that gateway directly.',
  },
  instance_moved: {
    status: 503,
    meaning: 'Several gateways: a request forwarded to the owner of a live instance found that another gateway owns it now; retry (the next attempt goes to the new owner).',
  },
  worker_unavailable: { status: 503, meaning: 'The Python worker could not be started, or keeps dying at start and its next start (back-off) is further away than limits.workerRestartWaitMs.' },
  scheduler_unavailable: { status: 503, meaning: 'The cluster scheduler (Slurm) cannot be reached; the run was not submitted.' },
  shutting_down: {
    status: 503,
    meaning: 'The gateway is stopping; retry against the next one. At its drain deadline a REST request still unanswered gets it (Retry-After: 1), and every frame still in flight an error frame with it for its id, before the socket closes with 1001.',
  },
  store_unavailable: {
    status: 503,
    meaning: 'The index database cannot be reached, refuses the connection (no such user or database, a wrong password: the message says what to do), or its schema is newer than this gateway; the gateway reconnects by itself, retry shortly.',
  },
  oidc_unavailable: { status: 503, meaning: "The OpenID provider's discovery document or keys cannot be fetched; OIDC tokens cannot be checked now." },
  timeout: { status: 504, meaning: 'The call exceeded its time limit and was cancelled.' },
  source_token_required: { status: 403, meaning: 'A source write (PUT or DELETE /v1/source/{path}, POST /v1/source/move) needs the right X-Service-Source-Token besides Authorization.' },
  not_source_file: {
    status: 415,
    meaning: 'The source API edits only UTF-8 text files with a source extension (.py, .js, .mjs, .css, .json, .md, .txt); this path or content is not one.',
  },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** One problem of a config or request, attached to a dotted path when known. */
export interface Issue {
  path: string | null;
  message: string;
}

export interface ErrorDetail {
  code: ErrorCode;
  message: string;
  issues?: Issue[];
  /** The Python exception class, for `call_failed`. */
  exception?: string;
}

/** An HTTP error body (see PorticoError.toBody). */
export type ErrorBody = { detail: ErrorDetail; code: ErrorCode; message: string } | ({ detail: string } & ErrorDetail);

export class PorticoError extends Error {
  readonly code: ErrorCode;
  readonly issues?: Issue[];
  readonly exception?: string;
  /** The operator's version of `message` (with hosts, paths, driver messages): for the log and the terminal only. */
  readonly internal?: string;
  /** The HTTP status where it is not the code's own: only `unknown_module` named by a path (404). */
  private readonly httpStatus?: number;

  constructor(code: ErrorCode, message: string, extra: { issues?: Issue[]; exception?: string; internal?: string; status?: number } = {}) {
    super(message);
    this.name = 'PorticoError';
    this.code = code;
    if (extra.issues) this.issues = extra.issues;
    if (extra.exception) this.exception = extra.exception;
    if (extra.internal) this.internal = extra.internal;
    if (extra.status) this.httpStatus = extra.status;
  }

  /** The same error answered with another status (a module named by a path is a missing resource: 404). */
  withStatus(status: number): PorticoError {
    return new PorticoError(this.code, this.message, { issues: this.issues, exception: this.exception, internal: this.internal, status });
  }

  /** What the operator reads (a log line, a terminal): `internal` when there is one, else `message`. */
  get forOperator(): string {
    return this.internal ?? this.message;
  }

  get status(): number {
    return this.httpStatus ?? ERROR_CODES[this.code].status;
  }

  /**
   * The HTTP body. `code` and `message` are at its top level whatever the status. `detail` is the
   * structured ErrorDetail where the spec fixes one: on every 400 (resolve, lifecycle and call
   * failures) and, with `structured`, on every failure of the call endpoint whatever its status
   * (http/errors.ts `structuredDetail` says where). Elsewhere `detail` is the message, a string as
   * FastAPI and the reference server send it (their clients print it), with `issues` and
   * `exception` beside it.
   */
  toBody(structured = false): ErrorBody {
    const detail = this.toDetail();
    return structured || this.status === 400 ? { detail, code: this.code, message: this.message } : { detail: this.message, ...detail };
  }

  toDetail(): ErrorDetail {
    const detail: ErrorDetail = { code: this.code, message: this.message };
    if (this.issues) detail.issues = this.issues;
    if (this.exception) detail.exception = this.exception;
    return detail;
  }
}

/**
 * Turns anything thrown into a PorticoError. Unexpected errors become a generic `internal`
 * error (their details belong in the log, never in a response body).
 */
export function toPorticoError(err: unknown): PorticoError {
  if (err instanceof PorticoError) return err;
  return new PorticoError('internal', 'Internal gateway error');
}
