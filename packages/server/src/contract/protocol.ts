/**
 * GET /v1/protocol: the machine-readable WebSocket protocol, generated from the frame schemas
 * the socket validates with, plus the headers, interface hooks, capabilities, error codes and
 * limits of this gateway.
 */
import { LIMITS, PROTOCOL_VERSION } from '../config/constants.js';
import { ERROR_CODES } from '../errors.js';
import { ClientFrames, ExecutionClientFrames, ExecutionServerFrames, FRAME_SUMMARIES, ServerFrames } from './frames.js';
import { z } from './zod.js';

interface FieldDoc {
  name: string;
  type: string;
  required: boolean;
  description: string;
}

function typeName(schema: z.ZodType): string {
  const json = z.toJSONSchema(schema, { unrepresentable: 'any', io: 'input' }) as Record<string, unknown>;
  const describe = (s: Record<string, unknown>): string => {
    if (Array.isArray(s.anyOf)) return (s.anyOf as Record<string, unknown>[]).map(describe).join(' | ');
    if (s.const !== undefined) return JSON.stringify(s.const);
    if (Array.isArray(s.type)) return s.type.join(' | ');
    return typeof s.type === 'string' ? s.type : 'any';
  };
  return describe(json);
}

function fields(schema: z.ZodObject<z.ZodRawShape>): FieldDoc[] {
  return Object.entries(schema.shape)
    .filter(([name]) => name !== 'type')
    .map(([name, field]) => {
      const f = field as z.ZodType;
      return { name, type: typeName(f), required: !f.safeParse(undefined).success, description: f.description ?? '' };
    });
}

export const CAPABILITIES = [
  { name: 'remote_call', summary: 'Invoke any interface method over REST or WebSocket, including streaming', surfaces: ['POST /v1/interfaces/call', 'WebSocket frames call/result/stream'] },
  { name: 'rich_results', summary: 'Results IPython could display (figures, images, DataFrames) answer with their MIME bundle', surfaces: ['POST /v1/interfaces/call (display)', 'WebSocket result frame (display, binary frames)'] },
  { name: 'binary_upload', summary: 'Stream opaque bytes into an interface directory', surfaces: ['WebSocket chunk_start (write or append), binary frames, chunk_end'] },
  { name: 'binary_read', summary: 'Stream interface bytes back through the interface read hook', surfaces: ['WebSocket chunk_start (mode read)'] },
  { name: 'config_search', summary: 'Query instances by config (operators), sort, paginate', surfaces: ['POST /v1/interfaces/search'] },
  { name: 'create_by_id', summary: 'Content-addressed, idempotent create with a client-supplied id', surfaces: ['POST /v1/interfaces (uuid)', 'WebSocket connect (uuid)'] },
  { name: 'mutable_label', summary: 'Rename through a mutable label while config stays immutable', surfaces: ['PATCH /v1/interfaces/{uuid}/label'] },
  { name: 'creator_attribution', summary: 'Durable created_by metadata, queryable, preserved by reindexing', surfaces: ['X-Service-User header', 'created_by in search'] },
  { name: 'multi_project', summary: 'Serve many projects and interpreters from one gateway', surfaces: ['X-Service-Project', 'X-Service-Python'] },
  { name: 'source_edit', summary: 'Read/write/create/rename interface source (token-gated)', surfaces: ['GET/PUT/DELETE /v1/source/{path}', 'POST /v1/source/move'] },
  { name: 'widgets', summary: 'Interfaces ship a widget frontend (ES module and stylesheet) for notebook and web', surfaces: ['GET /v1/project/{module}/widget/{asset}', 'WebSocket widget_get/widget_set/widget_msg with binary buffers (binary_buffers)'] },
];

export const HEADERS = [
  { name: 'X-Service-Project', type: 'string', required: false, description: 'Target project (query ?project=); must be the launch project or lie under a --project-roots entry.' },
  { name: 'X-Service-User', type: 'string', required: false, description: 'Attributes created interfaces (created_by); default: the gateway OS user; ignored when a verified identity admitted the request.' },
  { name: 'X-Service-Python', type: 'string', required: false, description: 'Interpreter serving the request (query ?python=); the default or one on --python-allowlist.' },
  { name: 'X-Service-Source-Token', type: 'string', required: false, description: 'Writes to /v1/source (PUT, DELETE, move) need it beside Authorization; only with --enable-source-api.' },
  { name: 'Authorization', type: 'string', required: false, description: 'Bearer <token>: the api token, a session token (POST /v1/auth/token) or an OIDC access token; required when the gateway has an api token or an OIDC issuer. WebSocket upgrades may send it as Sec-WebSocket-Protocol: bearer, <token>; a socket opened with a session or OIDC token is closed with code 4401 when the token expires.' },
  {
    name: 'X-Portico-Peer, X-Portico-Peer-User',
    type: 'string',
    required: false,
    description: 'Gateway to gateway only (several gateways on one PostgreSQL index): the forwarding gateway and the user it forwards for (percent-encoded). A request carrying X-Portico-Peer is admitted only with Authorization: Bearer <peer secret> (--peer-secret, default the api token); any other credential answers 401.',
  },
];

/** How several gateways on one index serve one live instance (docs/operating/several-gateways.md). */
const SEVERAL_GATEWAYS = {
  ownership: 'With a PostgreSQL index, each live instance (per project and uuid) is owned by one gateway: the first one asked for it takes its lease in the index and renews it (--instance-lease, every third of it). The embedded store serves one gateway per project.',
  forwarding: 'A gateway asked for an instance another gateway owns forwards the request there: REST calls, release and delete as HTTP requests, a socket connected to the instance as one socket to the owner, every frame relayed both ways as it came (binary frames too, in order). A client sees one instance whichever gateway it reaches.',
  takeover: 'When the owner goes away, frames waiting for it answer error owner_lost, attached sockets get instance_restarted (owner_lost), and the next request makes the instance again, with its saved widget state, on the gateway that takes the lease: at once after a clean stop, within 4/3 of --instance-lease after a crash (the lease, then a grace in which a holder cut off from the database renews first).',
  database_lost: 'Instances already live stay with their owner and their calls go on; a gateway that does not know an owner yet answers store_unavailable (503), as creates do. An owner cut off from the database alone keeps its instances: a gateway that takes over a lease that ran out first asks its holder (GET /v1/peers/instances/{uuid}, gateways only) and hands the lease back to one that still serves the instance.',
};

export const INTERFACE_HOOKS = [
  { name: '<public methods>', signature: 'method(*args, **kwargs) -> Any | Iterator | AsyncIterator', description: 'Any public name the subclass defines (or exactly __api_methods__). Generators stream as stream frames with backpressure; coroutines are awaited.' },
  { name: 'emit', signature: 'emit(payload) -> None', description: 'Pushes an event frame to every client attached to the interface.' },
  { name: 'local_directory', signature: 'local_directory(*parts, create=False) -> str', description: "The interface's data folder: <project>/.portico/interfaces/<uuid>/. Symlinks in it are followed only while they stay inside; a path leading out (or with '..') raises PermissionError, answered forbidden." },
  { name: 'save_file / load_file', signature: 'save_file(name, data) / load_file(name, default=None)', description: 'Durable state in local_directory (atomic writes), confined as local_directory is.' },
  { name: 'read', signature: 'read(params: dict) -> bytes | Iterable[bytes] | binary file', description: `Serves chunk_start mode read; params are passed verbatim. Sent as binary frames of at most ${LIMITS.readBlockBytes} bytes, paced by the client. FileNotFoundError or portico.NotFound → error code not_found; no read method → read_unsupported.` },
  { name: 'version_<name>', signature: 'version_<name>(self, **kwargs) -> dict', description: "Selectable as '~name' or '~name(args)' (arguments are Python literals, never evaluated code)." },
  { name: 'widget_state', signature: 'widget_state(self) -> dict', description: 'The widget full state (widget_get → widget_state). Default: the resolved config, read-only.' },
  { name: 'widget_update', signature: 'widget_update(self, changes: dict) -> dict', description: 'Applies widget_set changes and returns the normalized ones, sent as widget_change to every attached client. Default: raises portico.ReadOnly (code read_only); ValueError or TypeError → invalid_argument.' },
  { name: 'widget_message', signature: 'widget_message(self, content, buffers: list[bytes]) -> Any | WidgetReply', description: 'Answers a client widget_msg; the return value comes back as widget_msg with the same id (None: widget_msg_done with that id); portico.WidgetReply(content, buffers) answers with binary buffers. Sets and messages to one instance run one at a time in arrival order; an exception answers an error to that message only. Default: None.' },
  { name: 'push_widget_change / push_widget_message', signature: 'push_widget_change(changes) / push_widget_message(content, buffers=None)', description: 'Push widget_change or widget_msg to every attached client, ordered like emit(); bytes values in changes and the buffers travel as binary buffers.' },
];

export const CHUNK_FLOWS = [
  {
    name: 'upload',
    steps: [
      'client: chunk_start {id, mode: write | append, path}',
      'client: any number of binary frames (control frames such as ping and call may come between them)',
      'client: chunk_end {id}',
      'server: chunk_done {id, payload: {path, bytes_written, mode}} once the bytes are durable under the final name',
    ],
    rules: [
      'path is relative to the interface folder; .., absolute paths, empty segments and symlinks leading outside answer forbidden, and nothing is written.',
      'write replaces the file atomically at chunk_end; append adds to its end. A socket that closes before chunk_end leaves the file as it was.',
      'An upload larger than the gateway upload bound (--upload-max) answers payload_too_large and keeps nothing; further binary frames of it are discarded until its chunk_end.',
      'A second chunk_start while a transfer is active answers transfer_active; binary frames or chunk_end with no upload answer no_active_upload; chunk_end with another id answers upload_id_mismatch (the upload stays active).',
      'An upload is answered once: chunk_done, or one error with its id whenever it is refused (an invalid or unconnected chunk_start, its path, its size, the disk); its binary frames and chunk_end after that are swallowed.',
      'The gateway stops reading the socket while the disk is behind (TCP backpressure); memory stays bounded.',
    ],
  },
  {
    name: 'read',
    steps: ['client: chunk_start {id, mode: read, params}', `server: binary frames of at most ${LIMITS.readBlockBytes} bytes`, 'server: chunk_done {id, payload: {bytes_sent}}'],
    rules: [
      'The read hook raising FileNotFoundError or portico.NotFound answers error code not_found; an interface without read answers read_unsupported.',
      'The worker produces chunks only as fast as the socket drains; the whole result is never buffered.',
      'Closing the socket cancels the read (the hook’s generator or file is closed).',
    ],
  },
];

export const WIDGET_BUFFERS = {
  summary: 'Binary data of widgets: buffers of widget_msg (model.send, msg:custom) and binary values in state and changes (bytes in Python, DataView/ArrayBuffer/typed arrays in the page), as anywidget carries them.',
  paths: 'In widget_state, widget_change and widget_set, binary values are null in the JSON and buffer_paths lists where each buffer goes, in buffer order: keys and list indices, e.g. [["image"], ["layers", 0, "data"]]. Absent when there are none.',
  binary_frames: [
    'A frame with binary_buffers: n is followed at once by n binary WebSocket frames, its buffers in order; nothing else is sent between them, so they need no id (reads and uploads keep their own binary frames outside such runs).',
    'Clients may send widget_set and widget_msg that way at any time. The server sends that way to a socket whose connect said buffers: "binary"; to others it sends base64 strings in payload.buffers (always present on widget_msg).',
    'A text frame arriving before all announced buffers refuses the announced frame with invalid_frame (nothing delivered) and is handled itself.',
  ],
  base64: 'payload.buffers as base64 strings (client frames: buffers) is the compatible form, accepted in both directions.',
  limit: `The buffers of one frame together may hold at most --widget-buffer-max bytes (default ${LIMITS.widgetBufferMaxDefault}) and ${LIMITS.widgetBuffersMax} buffers; more answers payload_too_large to that frame and nothing of it reaches Python (binary frames of it are swallowed). A reply or push over the bound is refused the same way (a push as an error frame without id).`,
  order: 'widget_set and widget_msg to one interface run one at a time in the order the gateway received them; other interfaces and calls run meanwhile.',
};

/** What Python values become in the JSON of results, stream items, events, widget state and messages (docs/writing/values.md). */
export const VALUES = {
  summary: 'Payloads are JSON; the worker writes Python values as a Jupyter kernel sends them (python → json).',
  table: [
    { python: 'None, bool, int, finite float, str, list, dict; tuple; set', json: 'themselves; an array; a sorted array' },
    { python: 'NaN, inf, -inf (float, numpy float, Decimal)', json: '"NaN", "Infinity", "-Infinity"' },
    { python: 'numpy bool_, integer, floating', json: 'true/false, a number (float() of it)' },
    { python: 'numpy array (any shape)', json: 'nested arrays (tolist())' },
    { python: 'numpy datetime64; datetime, date, time', json: 'ISO 8601 text (isoformat())' },
    { python: 'Decimal; PurePath; UUID', json: 'a number (float()); its text; 32 hex digits' },
    { python: 'dataclass, mapping, pydantic model', json: 'an object' },
    { python: 'bytes in widget state and changes; widget message buffers (bytes-like, a numpy array)', json: 'binary buffers (widget_buffers)' },
  ],
  nonfinite:
    'Read back as floats for a method parameter annotated float (or float | None, int | float) and for a Float trait (or a List or Tuple of them) of a served anywidget; Jupyter\'s "nan", "inf", "-inf" too. Elsewhere they arrive as the strings. The widget runtime and the Python client send NaN and ±Infinity this way (JSON.stringify alone sends null).',
  refused: 'Anything else (complex, timedelta, numpy timedelta64, other objects) answers unserializable_result, naming the type.',
};

/** Rich results (docs/writing/rich-results.md): what a displayable result, stream item, event or run event carries. */
export const DISPLAY = {
  summary:
    "A method result that IPython could display answers with its MIME bundle, as Jupyter's display_data carries it: display (MIME type → data) beside payload, and metadata (by MIME type) when there is some. Over REST and in the WebSocket result frame alike; a streamed item and an emit() event the same way.",
  displayable: [
    'An object whose class defines _repr_mimebundle_ (asked first) or _repr_png_, _repr_jpeg_, _repr_svg_, _repr_html_, _repr_markdown_, _repr_latex_, _repr_json_ (also _repr_pdf_, _repr_javascript_), and one of them answers: its bundle, text/plain being repr(). A class itself is not displayed.',
    "Other values JSON cannot carry, through IPython's display formatter when IPython is importable in the project's environment (the active shell's, else one that renders matplotlib figures as PNG, as the inline backend does). IPython is imported only then.",
    'None, bool, int, float, str, list, dict, tuple and what the values table converts (numpy arrays, dates, dataclasses…) stay JSON: payload only, no display, unless their class defines a repr method that answers.',
  ],
  payload: 'The JSON value of the result where it has one (a dataclass with _repr_html_: its fields), else null.',
  binary: 'image/png, image/jpeg and application/pdf (and any bytes a _repr_mimebundle_ gives) are base64 text in display, as in Jupyter. A socket connected with buffers: "binary" gets them as binary frames right after the result, stream or event frame instead (nothing comes between them): binary_buffers counts them, display holds null for each and buffer_paths ([["image/png"]]) names its MIME type, in order.',
  streams: 'A generator that yields a displayable value (a figure per epoch): its stream frame carries display (and metadata, buffer_paths, binary_buffers) as a result frame does, payload being the JSON value or null.',
  events: 'self.emit(value) with a displayable value (self.emit(fig)): the event frame carries display as a result frame does ({"type":"event","payload":null,"display":{"image/png":…,"text/plain":…}}), binary frames right after it on a buffers: "binary" socket. A bundle over the limit is refused in the method: emit() raises DisplayTooLarge (a ValueError); uncaught, the call answers payload_too_large.',
  runs: "An execution's emit(value) writes {at, interface, payload, display?, metadata?} to its events.jsonl (binary data base64 text); /v1/executions/ws sends each such line as the payload of an event frame.",
  progress:
    'Convention: an event whose payload is a JSON object with a number progress between 0 and 1 (and optionally a string message) is a progress event, self.emit({"progress": i / n, "message": "epoch 3"}); clients show it as a progress bar. A stream shows its progress from such events emitted during it, else a running count of its items.',
  faults:
    "A repr method that raises or answers the wrong type is left out (logged in the gateway log) and the others answer, as IPython does; when every one fails, a value JSON carries answers as JSON, any other answers display with text/plain alone. A value with no repr method that JSON refuses keeps unserializable_result.",
  limit: `One bundle holds at most ${LIMITS.displayMaxBytes} bytes (limits.displayMaxBytes: binary data raw, text as UTF-8, JSON as its text); more answers payload_too_large (a stream item: the call fails with it; emit(): raises in the method).`,
};

export function protocolDoc() {
  type Direction = keyof typeof FRAME_SUMMARIES;
  // Each frame with the socket it travels on: `output` is a call's printed output on one, a run's output.log on the other.
  const frames = (table: Record<string, unknown>, direction: Direction, endpoint = '/v1/interfaces/ws') =>
    Object.entries(table).map(([type, schema]) => ({ type, direction, endpoint, summary: FRAME_SUMMARIES[direction][type]!, fields: fields(schema as never) }));
  return {
    protocol_version: PROTOCOL_VERSION,
    transport: {
      control_plane: `JSON text frames, each an object with a type field, nested at most ${LIMITS.jsonDepthMax} levels below the frame (limits.jsonDepthMax; deeper answers invalid_argument)`,
      data_plane: 'raw binary WebSocket frames',
      rest: `JSON over HTTP under /v1; OpenAPI at /openapi.json; a body nested more than ${LIMITS.jsonDepthMax} levels below itself answers 400 invalid_argument; an error body is {detail, code, message}: detail is the message, except on 400 and on every failure of POST /v1/interfaces/call ({code, message, issues?, exception?}) and on 422 (the validation list)`,
      http_streaming:
        'POST /v1/interfaces/call with Accept: application/x-ndjson answers as the call goes, one JSON object per line, the WebSocket frames without ids: {"type":"waiting","payload":{job,state,reason,message}} while it waits for a worker whose Slurm job is pending, {"type":"stream","payload"} per item, {"type":"event","payload"} per emit(), {"type":"output","payload":{stream,text}} per print, then one line that ends the call: {"type":"stream","payload":null,"final":true}, {"type":"result","payload"} or {"type":"error","payload":{code,message,…}}; display bundles as in REST answers. Accept: text/event-stream sends the same objects as server-sent events (event: <type>, data: <json>). Nothing is sent before the first line: a call that fails at once answers its JSON error status, one that fails after a line ends with its error line. A client that closes the response cancels the call.',
    },
    ws_endpoints: {
      '/v1/interfaces/ws': 'Create or attach to any interface; call, stream, events.',
      '/v1/executions/ws': 'Attach to an execution by uuid: its output as it grows, status changes, events; call status/output/cancel.',
    },
    headers: HEADERS,
    ws_frames: [
      ...frames(ClientFrames, 'client_to_server'),
      ...frames(ServerFrames, 'server_to_client'),
      ...frames(ExecutionServerFrames, 'server_to_client', '/v1/executions/ws'),
    ],
    execution_frames: Object.entries(ExecutionClientFrames).map(([type, schema]) => ({ type, direction: 'client_to_server', fields: fields(schema as never) })),
    chunk_flows: CHUNK_FLOWS,
    widget_buffers: WIDGET_BUFFERS,
    values: VALUES,
    display: DISPLAY,
    interface_hooks: INTERFACE_HOOKS,
    capabilities: CAPABILITIES,
    several_gateways: SEVERAL_GATEWAYS,
    errors: Object.entries(ERROR_CODES).map(([code, { status, meaning }]) => ({ code, status, meaning })),
    limits: LIMITS,
  };
}
