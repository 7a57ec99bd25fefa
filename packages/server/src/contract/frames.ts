/**
 * WebSocket frames of /v1/interfaces/ws, written once: the session validates client frames with
 * these schemas and GET /v1/protocol describes every frame from them.
 */
import { LIMITS } from '../config/constants.js';
import { DisplayBundle, DisplayMetadata, JsonObject, Label, RunUuid, Uuid, Version } from './common.js';
import { z } from './zod.js';

const Base64Buffers = z
  .array(z.string().max(LIMITS.maxMessageBytes).regex(/^[A-Za-z0-9+/]*={0,2}$/, 'not base64'))
  .max(LIMITS.widgetBuffersMax)
  .optional()
  .describe('Binary buffers as base64 strings (the compatible form; binary_buffers avoids the base64 overhead).');

const BinaryBuffers = z
  .number()
  .int()
  .min(1)
  .max(LIMITS.widgetBuffersMax)
  .optional()
  .describe('Number of binary WebSocket frames that follow this frame at once and carry its buffers, in order; nothing else is sent between them.');

const BufferPaths = z
  .array(z.array(z.union([z.string(), z.number().int().min(0)])).min(1))
  .max(LIMITS.widgetBuffersMax)
  .optional()
  .describe('Where each buffer goes in the state or changes, in buffer order: a list of keys and list indices, e.g. [["image"], ["layers", 0, "data"]].');

const Id = z
  .union([z.string().max(256), z.number()])
  .optional()
  .describe(
    `Correlation id chosen by the client; echoed exactly on every frame that answers this one. A string of at most 256 characters, or a number JSON carries exactly: an integer within ±${Number.MAX_SAFE_INTEGER} (2^53 − 1), or a fraction a double holds as written (0.5, 1e-3). Any other number (9007199254740993, 1e400, 1.00000000000000000001) would come back changed, so the frame is refused with invalid_frame whose id is that number's text as a string, e.g. "9007199254740993".`,
  );

/** Client → server frames. */
export const ClientFrames = {
  connect: z.object({
    type: z.literal('connect'),
    id: Id,
    target: z.string().min(1).describe('Module path to instantiate, or an existing uuid.'),
    version: Version.optional().describe('Version list passed to the interface make step.'),
    uuid: Uuid.nullable().optional().describe('Client-supplied id for create-by-id; the same id attaches to the existing instance.'),
    label: Label.nullable().optional().describe('Mutable label to set on a newly created instance.'),
    project: z.string().nullable().optional().describe('Project directory to bind; overrides header and query.'),
    meta: JsonObject.optional().describe('Client metadata stored with the interface.'),
    buffers: z
      .enum(['base64', 'binary'])
      .optional()
      .describe('How widget buffers reach this socket: base64 strings in payload.buffers (default), or binary frames right after their frame (binary_buffers counts them).'),
  }),
  call: z.object({
    type: z.literal('call'),
    id: Id,
    method: z.string().min(1).describe('Public method name, no leading underscore.'),
    args: z.array(z.unknown()).optional().describe('Positional arguments.'),
    kwargs: JsonObject.optional().describe('Keyword arguments.'),
  }),
  chunk_start: z.object({
    type: z.literal('chunk_start'),
    id: z.union([z.string().max(256), z.number()]).describe('Correlation id; chunk_end must name it, chunk_done and errors echo it.'),
    mode: z.enum(['write', 'append', 'read']).default('write').describe('write (replace the file), append, or read (through the read hook).'),
    path: z.string().min(1).max(4096).optional().describe('Upload only, and required there: a relative path inside the interface folder.'),
    params: JsonObject.optional().describe('Read only: opaque parameters passed verbatim to the interface read(params) hook.'),
  }).refine((frame) => frame.mode === 'read' || frame.path !== undefined, { path: ['path'], message: 'An upload (mode write or append) needs path: the file to write, relative to the interface folder' }),
  chunk_end: z.object({
    type: z.literal('chunk_end'),
    id: Id.describe('The id of the active upload (an absent id means the active one).'),
  }),
  widget_get: z.object({ type: z.literal('widget_get'), id: Id }),
  widget_set: z.object({
    type: z.literal('widget_set'),
    id: Id,
    changes: JsonObject.describe('Changed keys and values; the interface widget_update normalizes or rejects them. Binary values are null here and travel as buffers.'),
    buffer_paths: BufferPaths,
    buffers: Base64Buffers,
    binary_buffers: BinaryBuffers,
  }),
  widget_msg: z.object({
    type: z.literal('widget_msg'),
    id: Id,
    content: z.unknown().optional().describe('Message body for the interface widget_message(content, buffers); absent is null (None).'),
    buffers: Base64Buffers,
    binary_buffers: BinaryBuffers,
  }),
  release: z.object({ type: z.literal('release'), id: Id }),
  ping: z.object({ type: z.literal('ping'), id: Id }),
  close: z.object({ type: z.literal('close'), id: Id }),
} as const;

export type ClientFrameType = keyof typeof ClientFrames;
export type ClientFrame = { [K in ClientFrameType]: z.infer<(typeof ClientFrames)[K]> }[ClientFrameType];

/** A payload schema with its description; it keeps the schema's type, so z.infer of a server frame is its real shape. */
const Payload = <S extends z.ZodType>(schema: S, description: string): S => schema.describe(description);

/** The display bundle a result, stream item or event carries when IPython could display its value (docs/writing/rich-results.md). */
const Shown = {
  display: DisplayBundle.optional(),
  metadata: DisplayMetadata.optional(),
  buffer_paths: z
    .array(z.array(z.string()).length(1))
    .optional()
    .describe('Where each binary frame goes in display (its MIME type, e.g. [["image/png"]]), in order; only on a socket connected with buffers: binary.'),
  binary_buffers: BinaryBuffers,
};

/** Server → client frames (documentation only: the gateway builds them, clients validate them). */
export const ServerFrames = {
  connected: z.object({
    type: z.literal('connected'),
    id: Id,
    payload: Payload(
      z.object({ uuid: z.string(), config: JsonObject }).passthrough(),
      'The InterfaceInfo of the connected interface: uuid, resolved config, module, label, …',
    ),
  }),
  result: z.object({
    type: z.literal('result'),
    id: Id,
    payload: Payload(z.unknown(), 'JSON-encoded return value; null for a displayable result JSON cannot carry (a figure, an image, a DataFrame).'),
    ...Shown,
  }),
  stream: z.object({
    type: z.literal('stream'),
    id: Id,
    payload: Payload(z.unknown(), 'One yielded item; null on the terminal frame and for a displayable item JSON cannot carry.'),
    final: z.boolean().describe('true closes the stream.'),
    ...Shown,
  }),
  event: z.object({
    type: z.literal('event'),
    payload: Payload(
      z.unknown(),
      'What the interface passed to emit(); sent to every client attached to it; null for a displayable value JSON cannot carry. A JSON object with a number progress in [0, 1] (and optionally a string message) is a progress event. On /v1/executions/ws: the run\'s events.jsonl line {at, interface, payload, display?, metadata?}, binary data base64.',
    ),
    ...Shown,
  }),
  output: z.object({
    type: z.literal('output'),
    id: Id,
    payload: Payload(
      z.object({ stream: z.enum(['stdout', 'stderr']), text: z.string() }),
      "What the call's own code printed or logged while it ran (print, sys.stdout/sys.stderr, logging), as it happened: whole lines, or the last piece when the call ended. In order with the call's stream items and events, before its result. At most limits.callOutputRateBytes a second per call; beyond it, output is dropped and a stderr line says how many bytes were.",
    ),
  }),
  error: z.object({
    type: z.literal('error'),
    id: Id,
    payload: Payload(
      z.object({ message: z.string(), code: z.string(), issues: z.array(z.unknown()).optional(), exception: z.string().optional() }),
      'Failure detail: message, stable code, and issues or the Python exception class where they apply.',
    ),
  }),
  chunk_done: z.object({
    type: z.literal('chunk_done'),
    id: Id,
    payload: Payload(
      z.union([
        z.object({ path: z.string(), bytes_written: z.number(), mode: z.enum(['write', 'append']) }),
        z.object({ bytes_sent: z.number() }),
      ]),
      'Upload: the normalized path, bytes_written and mode, once the file is durable under its name. Read: bytes_sent.',
    ),
  }),
  widget_state: z.object({
    type: z.literal('widget_state'),
    id: Id,
    payload: Payload(
      z.object({ state: JsonObject, buffer_paths: BufferPaths, buffers: Base64Buffers }),
      'The widget full state (its widget_state()); binary values are null in state and travel as buffers (base64 here, or binary frames), placed by buffer_paths.',
    ),
    binary_buffers: BinaryBuffers,
  }),
  widget_change: z.object({
    type: z.literal('widget_change'),
    id: Id,
    payload: Payload(
      z.object({ changes: JsonObject, buffer_paths: BufferPaths, buffers: Base64Buffers }),
      'Normalized changes: the answer to a widget_set (with its id) and, without id, to every other attached client; also push_widget_change. Binary values as in widget_state.',
    ),
    binary_buffers: BinaryBuffers,
  }),
  widget_msg: z.object({
    type: z.literal('widget_msg'),
    id: Id,
    payload: Payload(
      z.object({ content: z.unknown(), buffers: Base64Buffers }),
      'A reply to a client widget_msg (with its id), or push_widget_message (without); buffers base64 here (always present, maybe empty) unless the socket asked for binary frames.',
    ),
    binary_buffers: BinaryBuffers,
  }),
  widget_msg_done: z.object({
    type: z.literal('widget_msg_done'),
    id: Id,
  }),
  widget_reload: z.object({
    type: z.literal('widget_reload'),
    payload: Payload(z.object({ asset: z.enum(['esm', 'css']), etag: z.string() }), 'The widget front end changed on disk: fetch the asset again and re-render.'),
  }),
  released: z.object({
    type: z.literal('released'),
    id: Id,
    payload: Payload(z.object({ uuid: z.string(), released: z.boolean() }), 'The released uuid; released is false when no worker held a live instance of it.'),
  }),
  instance_restarted: z.object({
    type: z.literal('instance_restarted'),
    payload: Payload(
      z.object({ uuid: z.string(), reason: z.enum(['worker_crashed', 'worker_wedged', 'allocation_ended', 'source_changed', 'owner_lost']), message: z.string() }),
      'The live instance died with its worker (worker_crashed: it exited or was killed; worker_wedged: it stopped answering and was killed; allocation_ended: `--workers slurm`, and Slurm ended the job of the worker (scancel, time limit, preemption, node failure; the message gives the state Slurm reported); source_changed: `portico serve --reload` started it again because the project\'s Python files changed on disk; owner_lost: several gateways, and the gateway that owned the instance went away or lost its lease). The worker is started again at once and the instance is made again on its next use, from the code now on disk, with its saved widget state: read the widget state again (widget_get).',
    ),
  }),
  waiting: z.object({
    type: z.literal('waiting'),
    id: Id,
    payload: Payload(
      z.object({ job: z.string().nullable(), state: z.string(), reason: z.string().nullable(), message: z.string() }),
      "`--workers slurm`: the connect or call with this id waits for a worker whose Slurm job has not started: the job's id, Slurm's state and reason (PENDING, Priority) and that as one line, `Slurm job 123: PENDING (Priority)`. Sent once when the wait starts and whenever the state or reason changes, before the request's answer (or its 503 worker_unavailable after --worker-wait).",
    ),
  }),
  pong: z.object({ type: z.literal('pong'), id: Id }),
} as const;

/** What each frame is for, by direction (a type may go both ways, as widget_msg does). */
export const FRAME_SUMMARIES: Record<'client_to_server' | 'server_to_client', Record<string, string>> = {
  client_to_server: {
    connect: 'Create or attach to an interface and bind the project.',
    call: 'Invoke a public method of the connected interface.',
    chunk_start: 'Begin an upload (mode write or append, with path) followed by binary frames and chunk_end, or a read (mode read, with params). One transfer per socket at a time. An upload cut off (socket closed, gateway killed) leaves the file as it was.',
    chunk_end: 'Finish the active upload; answered with chunk_done once the bytes are durable under the final name.',
    widget_get: 'Request the widget full state; answered with widget_state.',
    widget_set: 'Apply changes through the interface widget_update; answered with widget_change (same id) and sent to every other attached client; a rejection answers error (code read_only or invalid_argument): roll back.',
    widget_msg: 'Custom message to widget_message(content, buffers); answered once with its id: widget_msg carrying the reply, or widget_msg_done when the hook returned None (the default), or error. Messages and sets to one interface run one at a time, in the order they arrived.',
    ping: 'Liveness probe; answered with pong. Works before connect.',
    release: 'Release the live instance of the connected interface (its state in memory goes; the record and the saved widget state stay, and its next use makes it again); answered with released. The socket stays connected.',
    close: 'Teardown: cancels calls in flight, detaches and closes with 1000. The instance lives on (a client going away detaches; it does not release).',
  },
  server_to_client: {
    chunk_done: 'The upload is complete (path, bytes_written, mode) or the read has sent all its binary frames (bytes_sent).',
    widget_state: 'The widget full state (reply to widget_get).',
    widget_change: 'Normalized state changes (reply to widget_set, or pushed to every attached client).',
    widget_msg_done: 'Answer to a client widget_msg whose widget_message returned None (no reply): the message was handled. Not a message for the widget (a runtime fires no msg:custom for it).',
    widget_reload: 'The widget module or stylesheet changed on disk: reload it (hot reload).',
    connected: 'Confirms the connection; payload is the InterfaceInfo (uuid, resolved config, …).',
    result: 'Single return value of a call; with display (its MIME bundle) when IPython could display it (see display in /v1/protocol).',
    stream: 'One yielded value of a generator method; final=true closes the stream. With display (its MIME bundle) when IPython could display it, as a result.',
    event: 'Push from emit(), to every client attached to the interface (also during a call, for progress: payload {progress: 0..1, message?}); with display (its MIME bundle) when IPython could display the emitted value, as a result.',
    error: 'Failure of the frame with the same id (or of the socket when id is absent). The socket stays usable, but for shutting_down: the gateway stops, every frame still in flight gets one, then the socket closes with 1001.',
    pong: 'Reply to ping.',
    waiting: "Progress of a connect or call (same id) waiting for a worker whose Slurm allocation is pending (`--workers slurm`): Slurm's state and reason, once at the start of the wait and on every change; its answer follows.",
    released: 'Reply to release.',
    instance_restarted: 'The live instance died with its worker (crashed or wedged, or its Slurm allocation ended: allocation_ended), or its worker was started again on changed source (source_changed, with --reload); sent to every attached client. The worker is started again at once; the next use makes the instance again with its saved widget state, so read the state again.',
    output: "/v1/interfaces/ws: what a call's own code printed or logged, to its caller only (with the call's id), in order with its items and events, before its result; also written to the gateway's log with interface and method. /v1/executions/ws: output appended to the run’s output.log, in order.",
    status: '/v1/executions/ws: the ExecutionInfo whenever its status changes.',
    widget_msg: 'A reply to the client widget_msg with the same id, or (without id) a push_widget_message to every attached client; buffers travel base64 in payload.buffers, or as binary frames (binary_buffers) on a socket connected with buffers: binary.',
  },
};

/** Client → server frames of /v1/executions/ws (attach to one run). */
export const ExecutionClientFrames = {
  connect: z.object({
    type: z.literal('connect'),
    id: Id,
    target: RunUuid.describe('The execution uuid to attach to.'),
    project: z.string().nullable().optional().describe('Project directory to bind; overrides header and query.'),
    offset: z.number().int().min(0).optional().describe('Byte of output.log to start following from (default: the last 64 KiB).'),
  }),
  call: z.object({
    type: z.literal('call'),
    id: Id,
    method: z.enum(['status', 'output', 'cancel']).describe('status(), output(offset?, tail?, limit?) or cancel().'),
    args: z.array(z.unknown()).optional(),
    kwargs: JsonObject.optional(),
  }),
  ping: z.object({ type: z.literal('ping'), id: Id }),
  close: z.object({ type: z.literal('close'), id: Id }),
} as const;

export type ExecutionClientFrame = { [K in keyof typeof ExecutionClientFrames]: z.infer<(typeof ExecutionClientFrames)[K]> }[keyof typeof ExecutionClientFrames];

/** Server → client frames of /v1/executions/ws besides connected, result, event, error, pong. */
export const ExecutionServerFrames = {
  output: z.object({
    type: z.literal('output'),
    payload: z.object({ output: z.string(), offset: z.number(), size: z.number() }).describe('Bytes appended to output.log, in order (a bounded window each).'),
  }),
  status: z.object({
    type: z.literal('status'),
    payload: JsonObject.describe('The ExecutionInfo, whenever its status or activity changes.'),
  }),
} as const;
