/**
 * Every bound and default of the gateway, in one place. The options table (docs/operating/options.md) and
 * GET /v1/protocol (`limits`) are generated from or checked against this module.
 */

import { SHARED } from './shared.js';

export const VERSION = '0.1.0';
/** The REST API version (spec: Versioning). */
export const API_VERSION = '5.1.0';
/** The WebSocket protocol version served at GET /v1/protocol. */
export const PROTOCOL_VERSION = '1.0';

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 8000;

/**
 * Browser origins `portico serve` allows by default on a loopback address: a local JupyterLab
 * (`jupyter lab` takes 8888, then 8889, 8890 when those are busy), so its live widgets work with
 * no flag. A non-loopback bind allows none unless configured.
 */
export const LOCAL_JUPYTER_ORIGINS: readonly string[] = ['localhost', '127.0.0.1'].flatMap((host) => [8888, 8889, 8890].map((port) => `http://${host}:${port}`));

export const LIMITS = {
  /** Largest JSON request body accepted over REST, in bytes. */
  maxBodyBytes: 16 * 1024 * 1024,
  /**
   * Connections the kernel holds for the gateway before it accepts them (the listen backlog): a
   * burst of thousands of sockets at once waits here instead of being dropped or reset. Linux caps
   * it at net.core.somaxconn (4096 by default since 5.4; older kernels 128: raise it there).
   */
  listenBacklog: 4096,
  /** Largest WebSocket message accepted, in bytes (a larger one closes the socket with 1009). */
  maxMessageBytes: 64 * 1024 * 1024,
  /**
   * Deepest nesting of a REST body or WebSocket text frame: the body or frame itself is level 0,
   * each array or object in it one level deeper (`{"args": [[1]]}`: args is level 1, the list in
   * it level 2). Deeper answers `invalid_argument` before the JSON is parsed (contract/json-depth.ts).
   */
  jsonDepthMax: 64,
  /** A call that runs longer than this is cancelled and answers `timeout` (ms). */
  callTimeoutMs: 10 * 60 * 1000,
  /** Items a streaming call may have in flight before the generator pauses (bridge window; python/portico/shared.json, the worker reads it too). */
  streamWindow: SHARED.limits.stream_window.value,
  /**
   * How often the gateway pings each WebSocket (ms). A socket that has not answered one ping by
   * the next is a dead peer (a laptop gone to sleep, a dropped network) and is closed, releasing
   * what it held; a live client's pong is automatic, so it is never touched.
   */
  wsHeartbeatMs: 30 * 1000,
  /** With --ws-compression on: text frames smaller than this go uncompressed (binary frames never are), in bytes. */
  wsDeflateThresholdBytes: 8 * 1024,
  /** With --ws-compression on: deflate window (2^bits bytes) and memLevel, which bound a compressing socket's zlib memory to about 2^(bits+2) + 2^(memLevel+9) bytes. */
  wsDeflateWindowBits: 13,
  wsDeflateMemLevel: 7,
  /** With --ws-compression on: compressions and decompressions run at once across the gateway (the rest queue). */
  wsDeflateConcurrency: 4,
  /** Bytes queued on a socket before a stream stops crediting the worker. */
  socketHighWaterBytes: 4 * 1024 * 1024,
  /** How long a worker may take to report ready (ms). */
  workerStartTimeoutMs: 30 * 1000,
  /**
   * A request that finds its project's worker dead and its restart backing off (quick deaths in a
   * row) waits for the next start when that comes within this long (ms); a longer back-off answers
   * `worker_unavailable` at once. (After a single death the worker starts again at once, and
   * requests wait for it as for any start.)
   */
  workerRestartWaitMs: 5 * 1000,
  /** A worker that holds no live instance stops after this long without a request (ms; `--worker-idle`). */
  workerIdleMs: 10 * 60 * 1000,
  /** A live instance with no call and no attached client for this long is released (ms; `--instance-idle`). */
  instanceIdleMs: 60 * 60 * 1000,
  /** An instance's ownership between gateways lasts this long unless renewed (`--instance-lease`): also how long a dead owner's instances wait for another gateway. */
  instanceLeaseMs: 15_000,
  /** A forward to an instance's owner gives up connecting after this long (ms): the owner counts as unreachable. */
  peerConnectTimeoutMs: 5_000,
  /** Interfaces whose records a gateway keeps for calls while the index database is away (the most recently used). */
  recentRecords: 1024,
  /**
   * A worker whose reading side has answered no heartbeat for this long is wedged: it is killed
   * and started again (ms; `--worker-liveness`, 0 turns the check off).
   */
  workerLivenessMs: 10 * 1000,
  /** Heartbeats sent to each worker per liveness period. */
  workerHeartbeatsPerLiveness: 5,
  /** How long a process that cannot take an index lock waits for the holder to say who it is (ms). */
  indexLockProbeMs: 1000,
  /** How long a starting gateway waits for a stopping one to release the index (ms). */
  indexLockWaitMs: 30 * 1000,
  /** How often it asks again meanwhile (ms). */
  indexLockRetryMs: 25,
  /**
   * How long the thread that writes the record files of new interfaces (store/record-file-thread.ts)
   * may be busy with one batch before creates stop waiting for it and write their own on Node's
   * thread pool, in parallel (ms), when its files take long on this storage (recordFileSlowMs): on
   * storage where each file takes long (a network file system), one thread falls behind parallel writes.
   */
  recordFileLagMs: 2,
  /**
   * The thread's time per file (its last batch's, in its blocking calls) past which the storage
   * counts as slow (ms): a local disk takes about a tenth of this. Files are left to the caller
   * after recordFileLagMs only then, or once a batch is out past recordFileStuckMs: a batch out
   * long on a fast disk waited for a busy CPU, and Node's pool, whose every step is two thread
   * hand-offs, would cost the busy CPU more than waiting does.
   */
  recordFileSlowMs: 1,
  /** How long a batch may be out before creates write their own files whatever the storage (ms). */
  recordFileStuckMs: 50,
  /** Connections one gateway keeps at most to a PostgreSQL index (--store postgres://…). */
  storePoolSize: 20,
  /** How long a store call waits for a connection to the PostgreSQL index before answering 503 store_unavailable (ms). */
  storeConnectTimeoutMs: 5 * 1000,
  /** How long GET /v1/health and /metrics wait for the PostgreSQL index to answer `SELECT 1` before they call it unavailable (ms). */
  storeProbeMs: 1000,
  /** Most creates (or reads by uuid) one statement to a PostgreSQL index carries (store/postgres/batch.ts). */
  storeBatchRows: 500,
  /** Most batched statements of one kind a gateway runs at once; calls arriving meanwhile wait to form the next batch. */
  storeBatchStatements: 1,
  /** How often a gateway on a PostgreSQL index folds the count deltas into one row per group (ms). */
  storeCountCompactionMs: 10 * 1000,
  /** A search whose total summed more count rows than this starts a compaction at once. */
  storeCountDeltasBeforeCompaction: 200,
  /** Default bound on a shutdown's drain: in-flight requests and calls may finish this long before they are cut (ms). */
  shutdownDrainMs: 5 * 1000,
  /** Grace period between asking a worker to stop and killing it (ms). */
  workerStopGraceMs: 2 * 1000,
  /** Largest frame the worker may send the gateway, in bytes. */
  maxBridgeFrameBytes: 256 * 1024 * 1024,
  /** Bytes of an execution's output.log one window returns by default, and at most (python/portico/shared.json: the Python client follows output in windows this big). */
  outputWindowDefault: 64 * 1024,
  outputWindowMax: SHARED.limits.output_window_max_bytes.value,
  /** Most bytes one response of GET /v1/interfaces/{uuid}/files/{path} carries, as JSON or raw (larger files: raw with Range). */
  fileReadMax: 16 * 1024 * 1024,
  /** Default largest WebSocket upload (`--upload-max`), in bytes. */
  uploadMaxDefault: 16 * 1024 ** 3,
  /**
   * Default most bytes of binary buffers one widget frame carries (`--widget-buffer-max`): the
   * buffers of a message, a set, a state, a reply or a push, together; one buffer is also bounded
   * by maxMessageBytes, the largest WebSocket message.
   */
  widgetBufferMaxDefault: 64 * 1024 * 1024,
  /** Most binary buffers one widget frame carries. */
  widgetBuffersMax: 64,
  /**
   * Most bytes of one display bundle of a result, stream item or event (docs/writing/rich-results.md): its
   * binary data (image/png, …) raw, its text as UTF-8, together; more answers payload_too_large.
   * The worker holds the same bound: both read it from python/portico/shared.json.
   */
  displayMaxBytes: SHARED.limits.display_max_bytes.value,
  /** Bytes of printed output one call may send its caller per second, after a burst of as many; beyond it output is dropped, with a note (python/portico/shared.json; worker/output.py). */
  callOutputRateBytes: SHARED.limits.call_output_rate_bytes.value,
  /** Most characters of one output frame; a longer line goes in pieces (python/portico/shared.json). */
  callOutputFrameChars: SHARED.limits.call_output_frame_bytes.value,
  /** Bytes an upload may have received but not yet written before the socket stops reading (backpressure). */
  uploadHighWaterBytes: 16 * 1024 * 1024,
  /**
   * Bytes an upload writes between background flushes to disk (fdatasync while more arrive), so
   * that the fsync before chunk_done has little left to do instead of the whole upload.
   */
  uploadSyncEveryBytes: 64 * 1024 * 1024,
  /**
   * An upload's temp file or append marker in `.portico/uploads/` whose gateway cannot be seen to
   * be dead (one on another host, sharing the folder through PostgreSQL) is undone by a gateway
   * opening the project once it has not been renewed for this long; a live upload renews its own
   * every quarter of it.
   */
  uploadLeaseMs: 60 * 60 * 1000,
  /** Bytes of one binary frame of a read (chunk_start mode read); the worker never sends a larger chunk (python/portico/shared.json, the worker's default block). */
  readBlockBytes: SHARED.limits.read_block_bytes.value,
  /**
   * A read's chunks are credited back to the worker this many at a time (at most streamWindow):
   * each credit wakes the worker, and a wake-up per chunk cost more than the chunk's bytes.
   */
  readCreditBatch: 4,
  /** Nodes a provenance graph holds at most (then `truncated`). */
  provenanceNodes: 200,
  /** Default and maximum `limit` of list endpoints. */
  listDefault: 100,
  listMax: 1000,
  /** Longest label, in UTF-16 code units, that create (REST and `connect`) and PATCH …/label accept. */
  labelMax: 1024,
  /**
   * Largest interface record a store takes: its compact JSON text, label aside (labelMax bounds
   * that), in UTF-8 bytes; a larger create answers `payload_too_large`. A record also nests at most
   * jsonDepthMax levels (the record is level 0, its `meta` level 1; deeper: `invalid_argument`).
   * Both are checked before anything of the record reaches memory or disk (store/record-json.ts).
   */
  recordMaxBytes: 1024 * 1024,
  /** Lifetime of a session token minted without `ttl_seconds` (s). */
  sessionTokenTtlDefaultS: 15 * 60,
  /** Longest lifetime a session token may ask for (s; spec: at most one hour). */
  sessionTokenTtlMaxS: 60 * 60,
  /** Clock skew allowed when checking an OIDC token's exp, nbf and iat (s). */
  oidcClockToleranceS: 30,
  /** How long fetching the issuer's discovery document or JWKS may take (ms). */
  oidcFetchTimeoutMs: 5 * 1000,
  /** The issuer's keys are refetched at the latest after this long (ms). */
  oidcJwksMaxAgeMs: 10 * 60 * 1000,
  /** After a fetch, an unknown key id (rotation) triggers no new fetch for this long (ms); also how long a failed discovery is remembered. */
  oidcJwksCooldownMs: 5 * 1000,
  /** How old the Slurm queue snapshot (one squeue for every live run) may be when a status is read (ms). */
  slurmPollMs: 1000,
  /** How long a Slurm-placed worker may take from srun to connecting back, pending included, before its job is cancelled (ms; `--worker-wait`). */
  slurmWorkerWaitMs: 5 * 60 * 1000,
  /** How long one Slurm command (sbatch, squeue, sacct, scancel) may take before it counts as failed (ms). */
  slurmCommandTimeoutMs: 30 * 1000,
  /** How long a cancelled running Slurm job may take to end by itself (the marker) before scancel (ms). */
  slurmCancelGraceMs: 10 * 1000,
  /** Largest source file the source API reads or writes, in bytes (larger: payload_too_large). */
  sourceFileMax: 4 * 1024 * 1024,
  /**
   * Config paths the embedded store keeps a value index for (built on a search's first `eq`/`in`
   * on the path; the least recently used goes). Each costs about one pointer per record holding
   * the path plus one entry per distinct value.
   */
  searchPathIndexes: 8,
  /**
   * A search's `total` is exact up to this many matches (or offset + limit, if more); beyond, a
   * filter no maintained count answers reports this bound with `total_exact: false` unless the
   * request asks `exact_total` (store/query.ts). Counting a million matches took 0.3–1.5 s.
   */
  searchExactTotal: 1000,
  /** Most files GET /v1/source lists (then `truncated`). */
  sourceListMax: 10_000,
  /** How long a source edit waits for each worker to drop the stale modules before answering anyway (ms). */
  sourceInvalidateTimeoutMs: 10 * 1000,
} as const;
