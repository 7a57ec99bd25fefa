/** Request and response bodies of the REST API (field names follow the reference server). */
import { ClientUuid, DisplayBundle, DisplayMetadata, InterfaceInfo, JsonObject, Label, queryBoolean, queryInteger, Uuid, Version } from './common.js';
import { z } from './zod.js';

export const CreateInterfaceRequest = z
  .object({
    target: z.string().min(1).describe('Module path to instantiate, or an existing uuid.'),
    version: Version.default([]),
    uuid: ClientUuid.nullable().optional().describe('Client-supplied id (create-by-id); an existing id returns that instance unchanged.'),
    label: Label.nullable().optional().describe('Label of a newly created instance (an existing one keeps its own).'),
    meta: JsonObject.default({}).describe('Client metadata stored with the interface.'),
  })
  .openapi('CreateInterfaceRequest');

/**
 * Only these fields: one it does not know is refused (422) rather than ignored, since the one a
 * client most likely meant (`uuid`, to call an existing instance) would otherwise be dropped and
 * the call would run on whatever `target` resolves to.
 */
export const InterfaceCallRequest = z
  .strictObject(
    {
      target: z.string().min(1).describe('Module path or an existing uuid.'),
      version: Version.default([]),
      meta: JsonObject.default({}),
      method: z.string().min(1).describe('Public method name (no leading underscore).'),
      args: z.array(z.unknown()).default([]),
      kwargs: JsonObject.default({}),
    },
    {
      error: (issue) =>
        issue.code === 'unrecognized_keys'
          ? `Unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `'${k}'`).join(', ')}: a call takes target, version, meta, method, args and kwargs (an existing instance is called with its uuid as target)`
          : undefined,
    },
  )
  .openapi('InterfaceCallRequest');

export const InterfaceCallResponse = z
  .object({
    payload: z.unknown().describe('The JSON value of the result; null for a displayable result JSON cannot carry (a figure, an image, a DataFrame).'),
    display: DisplayBundle.optional(),
    metadata: DisplayMetadata.optional(),
  })
  .openapi('InterfaceCallResponse');

/**
 * One line of a call answered as it happens (Accept: application/x-ndjson, or text/event-stream
 * where each is an event named by its type): the WebSocket's frames without ids.
 */
export const CallStreamLine = z
  .object({
    type: z.enum(['waiting', 'stream', 'event', 'output', 'result', 'error']).describe('waiting: the call waits for a worker whose Slurm job is pending ({job, state, reason, message}; one whenever that changes); stream: an item the generator yielded (final: true ends the call); event: what the method emitted; output: what it printed or logged ({stream, text}); result: the return value of a plain method (ends the call); error: the call failed ({code, message, …} in payload; ends the call).'),
    payload: z.unknown(),
    final: z.boolean().optional(),
    display: DisplayBundle.optional(),
    metadata: DisplayMetadata.optional(),
  })
  .openapi('CallStreamLine');

export const InterfaceList = z.array(InterfaceInfo);

export const ListQuery = z.object({
  limit: queryInteger(1, 1000).default(100).describe('At most this many records (1..1000).'),
});

export const UuidParams = z.object({ uuid: Uuid });

export const WorkerProblem = z
  .object({
    project: z.string(),
    python: z.string(),
    status: z
      .enum(['wedged', 'restarting', 'crash_loop'])
      .describe('wedged: its worker answered no heartbeat and was killed, a new one is starting; restarting: its worker died and a new one is starting; crash_loop: its workers keep dying soon after starting, the next start waits (next_attempt_at).'),
    message: z.string(),
    failures: z.number().int().describe('Deaths in a row, each soon after its start.'),
    since: z.string(),
    next_attempt_at: z.string().optional(),
  })
  .openapi('WorkerProblem');

export const StoreProblem = z
  .object({
    store: z.literal('postgresql').describe('The index that cannot be reached: the PostgreSQL index of --store (the embedded store has no such problem).'),
    status: z.literal('unavailable'),
    message: z.string().describe('What the gateway found, without host or driver detail (the log has those).'),
    since: z.string().describe('When this gateway first found it unavailable (ISO-8601 UTC).'),
  })
  .openapi('StoreProblem');

export const HealthResponse = z
  .object({
    status: z.enum(['ok', 'degraded']).describe('degraded while any worker is wedged, being replaced or backing off, or the index cannot be reached (see problems).'),
    version: z.string(),
    project: z.string(),
    projects: z.array(z.string()),
    executions_active: z.number().int(),
    workers: z.number().int(),
    instances: z.record(z.string(), z.number().int()).describe('Live interface instances, by project directory.'),
    problems: z.array(z.union([WorkerProblem, StoreProblem])).describe('What makes the gateway degraded: a worker problem per project and interpreter, and the index when it cannot be reached.'),
    uptime_seconds: z.number(),
  })
  .openapi('HealthResponse');

export const ReleaseResponse = z
  .object({
    uuid: z.string(),
    released: z.boolean().describe('false: no worker held a live instance of it.'),
  })
  .openapi('ReleaseResponse');

export const OriginResponse = z
  .object({
    origin: z.string().nullable().describe('The Origin the request came with (null: not from a browser page).'),
    allowed: z.boolean().describe('Whether pages of that origin may use the REST API and the sockets.'),
    message: z.string().nullable().describe('When refused: what was refused and the option that allows it.'),
  })
  .openapi('OriginResponse');

export type CreateInterfaceRequest = z.infer<typeof CreateInterfaceRequest>;
export type InterfaceCallRequest = z.infer<typeof InterfaceCallRequest>;

export const ResolveRequest = z
  .object({
    target: z.string().min(1).describe('Module path.'),
    version: Version.default([]),
  })
  .openapi('ResolveRequest');

export const ResolveResponse = z
  .object({
    module: z.string(),
    version: z.array(z.unknown()).describe('The normalized version list.'),
    config: JsonObject.describe('The resolved config.'),
    predicate: JsonObject.nullable().describe('What contexts fold in; null when nothing does.'),
    uuid: z.string().describe('The uuid POST /v1/interfaces would give this config.'),
    cli: z.string().describe('A `portico get …` line that creates exactly this uuid.'),
  })
  .openapi('ResolveResponse');

export const SetLabelRequest = z
  .object({ label: Label.nullable().describe('The new label; null clears it.') })
  .openapi('SetLabelRequest');

export const ArchiveQuery = z.object({
  restore: queryBoolean(false).describe('true restores an archived interface.'),
});

export const ProjectModule = z
  .object({
    module: z.string(),
    kind: z.string().nullable().describe('The interface class name.'),
    doc: z.string().nullable(),
    widget: z.boolean().describe('Whether the module ships a widget.'),
    error: z.string().nullable().describe('Why the module cannot be used (import error, no interface class), else null.'),
  })
  .openapi('ProjectModule');

export const ProjectIndex = z.object({ project: z.string(), modules: z.array(ProjectModule) }).openapi('ProjectIndex');

export const ConfigField = z
  .object({
    name: z.string(),
    type: z.string().describe("The annotation as Python writes it: <class 'int'>, str | None, typing.Literal['a', 'b']."),
    default: z.unknown().describe('The default (JSON); null when the field is required.'),
    required: z.boolean(),
    description: z
      .string()
      .nullable()
      .describe('What the field is: its docstring, Field(description=…) or Annotated text (as in config_schema), else null.'),
    fields: z.array(JsonObject).nullable().describe('The fields of a nested config (same shape, down to depth 6), else null.'),
  })
  .openapi('ConfigField');

export const VersionMethod = z
  .object({
    name: z.string().describe('Selected as "~name" or "~name(args)".'),
    signature: z.string().describe('Without self, e.g. (step: int = 10).'),
    doc: z.string().nullable(),
    source_line: z.number().int().nullable().describe('1-based line of its definition.'),
    parameters: z.array(JsonObject).describe('Portico: name, kind, default (when JSON), annotation.'),
  })
  .openapi('VersionMethod');

export const WidgetInfo = z
  .object({
    esm_url: z.string().describe('The ES module, relative to the gateway: /v1/project/<module>/widget/esm.'),
    css_url: z.string().nullable().describe('The stylesheet, or null when the widget has none.'),
    meta: JsonObject.describe("The class's _widget_meta (opaque), {} without one."),
    esm: z.boolean(),
    css: z.boolean(),
  })
  .openapi('WidgetInfo');

export const ModuleSchema = z
  .object({
    module: z.string(),
    kind: z.string(),
    doc: z.string().nullable(),
    config_fields: z.array(ConfigField).describe('The Config, field by field (the reference server\'s shape).'),
    config_schema: JsonObject.describe('The Config as a JSON Schema (draft 2020-12), with defaults and descriptions.'),
    versions: z.array(z.string()).describe('The version expressions the module offers ("~name"), sorted by name.'),
    version_methods: z.array(VersionMethod).describe('The version_<name> methods behind them, inherited ones included, sorted by name.'),
    methods: z.array(JsonObject).describe('Remotely callable methods: name, signature, doc, kind, parameters, returns.'),
    runnable: z.boolean().describe('Whether the interface defines __call__, so that it can run as an execution (POST /v1/executions).'),
    widget: WidgetInfo.nullable(),
    source_file: z.string().nullable(),
    source_line: z.number().int().nullable(),
  })
  .openapi('ModuleSchema');

export const ModuleParams = z.object({ module: z.string().min(1).max(512) });

export const WidgetAssetParams = z.object({
  module: z.string().min(1).max(512),
  asset: z.enum(['esm', 'css']).describe('esm: the anywidget front-end module (JavaScript); css: its stylesheet.'),
});

export const RemotesResponse = z
  .object({
    remotes: z.record(z.string(), z.string()).describe('Each remote module and where it comes from (a URL or path), as the reference lists them.'),
    details: z.record(
      z.string(),
      z.object({
        kind: z.enum(['url', 'file', 'link']),
        source: z.string(),
        sha256: z.string().nullable(),
        path: z.string().describe('Where the fetched module lives, relative to the project.'),
        fetched: z.boolean(),
      }),
    ),
  })
  .openapi('RemotesResponse');

export const LifecycleRequest = z
  .object({
    target: z.string().min(1).describe('Module path.'),
    version: Version.default([]),
    context: z.array(z.object({ target: z.string().min(1), version: Version.default([]) })).max(16).default([]),
  })
  .openapi('LifecycleRequest');

export const LifecycleResponse = z
  .object({
    target: z.string(),
    module: z.string(),
    uuid: z.string().describe('The uuid of this config (with its contexts folded in).'),
    status: z.enum(['draft', 'running', 'cached', 'failed']),
    execution_uuid: z.string().nullable().describe('The latest run of it, if any.'),
    cached: z.boolean().describe('Its data is available (status cached).'),
  })
  .openapi('LifecycleResponse');
export type LifecycleRequest = z.infer<typeof LifecycleRequest>;
export type LifecycleResponse = z.infer<typeof LifecycleResponse>;

export const DataStatusResponse = z
  .object({
    uuid: z.string(),
    status: z.enum(['local', 'remote', 'evicted']).describe('local: the folder is here; remote: meta.storage_uri names another place; evicted: gone.'),
    path: z.string().nullable().describe('The folder, relative to the project.'),
    files: z.number().int(),
    bytes: z.number().int(),
    storage_uri: z.string().nullable(),
    available: z.boolean().describe('The reference server\'s name for mounted.'),
    mounted: z.boolean().describe('The folder is on this machine (status local).'),
    local_uri: z.string().nullable().describe('The folder\'s absolute path when mounted.'),
    bytes_missing: z.boolean().describe('Neither here nor elsewhere (status evicted).'),
  })
  .openapi('DataStatusResponse');

export const FileList = z.object({ files: z.array(z.string()).describe('Relative paths, sorted; dotfiles skipped.') }).openapi('FileList');

export const FileParams = z.object({ uuid: Uuid, path: z.string().min(1).max(4096) });

export const FileQuery = z.object({
  raw: queryBoolean(false).describe('true answers the raw bytes (as Accept: application/octet-stream does) instead of the JSON answer.'),
});

const RELS = ['derivation', 'context', 'runs', 'manifest'] as const;
const REL = `(?:${RELS.join('|')})`;
/** Edge labels separated by commas, spaces around them allowed, empty items skipped. */
const RELS_LIST = new RegExp(`^ *(?:${REL} *)?(?:, *(?:${REL} *)?)*$`);

export const ProvenanceQuery = z.object({
  depth: queryInteger(0, 64).default(8).describe('How many hops the walk goes.'),
  rels: z
    .string()
    .regex(RELS_LIST, `a comma-separated list of ${RELS.join(', ')}`)
    .optional()
    .transform((v) => (v ?? '').split(',').map((s) => s.trim()).filter(Boolean))
    .pipe(z.array(z.enum(RELS)))
    .describe(`Comma-separated edge labels to follow instead of all (${RELS.join(', ')}).`),
});

const GraphNode = z.object({
  uuid: z.string(),
  kind: z.enum(['interface', 'execution', 'manifest']),
  module: z.string().nullable(),
  version: z.array(z.unknown()).describe("The interface's version list; [] for runs and manifests."),
  label: z.string().nullable(),
  attributes: JsonObject,
});

export const ProvenanceGraph = z
  .object({
    root: z.string(),
    nodes: z.array(GraphNode),
    links: z.array(z.object({ source: z.string(), target: z.string(), rel: z.enum(RELS) })),
    truncated: z.boolean().describe('The node bound was reached.'),
  })
  .openapi('ProvenanceGraph');

export const RelatedResponse = z
  .object({
    uuid: z.string(),
    related: z.array(
      z.object({ uuid: z.string(), kind: z.string(), module: z.string().nullable(), version: z.array(z.unknown()).describe('The version list (interfaces; [] for runs and manifests).'), label: z.string().nullable(), rel: z.string() }),
    ),
  })
  .openapi('RelatedResponse');
