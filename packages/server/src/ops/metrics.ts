/**
 * Prometheus metrics (prom-client), one registry per gateway, scraped at `GET /metrics` (which is
 * authenticated like every other endpoint). Names and labels are the ones a dashboard needs:
 * calls and their latency by method and outcome, HTTP requests, sockets, workers and their
 * restarts, executions by state, store operations and their latency, upload and read bytes, and
 * the process's own figures. Labels that clients choose (method names) are bounded.
 */
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { LabelledCounter, LabelledHistogram } from './series.js';

/** Distinct method labels kept before the rest count as `(other)`: clients choose method names. */
const MAX_METHOD_LABELS = 200;
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export interface MetricSources {
  /** Running workers now. */
  workers(): number;
  /** Live instances now, per project directory. */
  instances(): Record<string, number>;
  /** Executions of the open projects by status. */
  executions(): Promise<Record<string, number>>;
  /** Commands the executor ran against its scheduler so far (sbatch, squeue, sacct, scancel), by command. */
  schedulerCommands(): Readonly<Record<string, number>>;
  /** Whether the index can be reached now (asked at each scrape). */
  storeUp(): Promise<boolean>;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly methods = new Set<string>();
  // Those every request touches are LabelledCounter and LabelledHistogram (ops/series.ts).
  readonly httpRequests: LabelledCounter<'method' | 'status'>;
  readonly httpDuration: LabelledHistogram<'method'>;
  readonly calls: LabelledCounter<'method' | 'outcome'>;
  readonly callDuration: LabelledHistogram<'method' | 'outcome'>;
  readonly sockets: Gauge<'endpoint'>;
  readonly workerRestarts: Counter<'reason'>;
  readonly storeOperations: LabelledCounter<'op' | 'outcome'>;
  readonly storeDuration: LabelledHistogram<'op'>;
  readonly uploadBytes: Counter;
  readonly readBytes: Counter;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    this.httpRequests = new LabelledCounter({ name: 'portico_http_requests_total', help: 'HTTP requests answered, by method and status.', labelNames: ['method', 'status'], registers });
    this.httpDuration = new LabelledHistogram({ name: 'portico_http_request_duration_seconds', help: 'Time to answer an HTTP request.', labelNames: ['method'], buckets: LATENCY_BUCKETS, registers });
    this.calls = new LabelledCounter({ name: 'portico_calls_total', help: 'Remote method calls (REST and WebSocket), by method and outcome (ok or the error code).', labelNames: ['method', 'outcome'], registers });
    this.callDuration = new LabelledHistogram({ name: 'portico_call_duration_seconds', help: 'Remote method call latency, by method and outcome.', labelNames: ['method', 'outcome'], buckets: LATENCY_BUCKETS, registers });
    this.sockets = new Gauge({ name: 'portico_sockets', help: 'Open WebSocket connections, by endpoint.', labelNames: ['endpoint'], registers });
    this.workerRestarts = new Counter({
      name: 'portico_worker_restarts_total',
      help: 'Workers started again by supervision after one died, by reason: crashed (it exited or was killed unasked) or wedged (it answered no heartbeat and was killed).',
      labelNames: ['reason'],
      registers,
    });
    this.storeOperations = new LabelledCounter({ name: 'portico_store_operations_total', help: 'Index operations, by operation and outcome.', labelNames: ['op', 'outcome'], registers });
    this.storeDuration = new LabelledHistogram({ name: 'portico_store_operation_duration_seconds', help: 'Index operation latency.', labelNames: ['op'], buckets: LATENCY_BUCKETS, registers });
    this.uploadBytes = new Counter({ name: 'portico_upload_bytes_total', help: 'Bytes written by WebSocket uploads.', registers });
    this.readBytes = new Counter({ name: 'portico_read_bytes_total', help: 'Bytes sent by WebSocket reads.', registers });
    new Gauge({
      name: 'portico_store_up',
      help: 'Whether the index can be reached now: 1, or 0 while the PostgreSQL index does not answer (asked at each scrape, for at most 1 s). The embedded store is always 1.',
      registers,
      async collect() {
        this.set((await sources.storeUp()) ? 1 : 0);
      },
    });
    new Gauge({
      name: 'portico_workers',
      help: 'Running Python workers.',
      registers,
      collect() {
        this.set(sources.workers());
      },
    });
    new Gauge({
      name: 'portico_live_instances',
      help: 'Live interface instances held by workers, by project directory.',
      labelNames: ['project'],
      registers,
      collect() {
        this.reset();
        for (const [project, count] of Object.entries(sources.instances())) this.set({ project }, count);
      },
    });
    new Gauge({
      name: 'portico_executions',
      help: 'Executions of the open projects, by state.',
      labelNames: ['state'],
      registers,
      async collect() {
        this.reset();
        for (const [state, count] of Object.entries(await sources.executions())) this.set({ state }, count);
      },
    });
    new Counter({
      name: 'portico_scheduler_commands_total',
      help: 'Commands run against the cluster scheduler (Slurm: sbatch, squeue, sacct, scancel), by command.',
      labelNames: ['command'],
      registers,
      collect() {
        this.reset();
        for (const [command, count] of Object.entries(sources.schedulerCommands())) this.inc({ command }, count);
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'portico_' });
  }

  /** Records one finished call. */
  call(method: string, outcome: string, seconds: number): void {
    const labels = { method: this.methodLabel(method, outcome), outcome };
    this.calls.inc(labels);
    this.callDuration.observe(labels, seconds);
  }

  /** Times an index operation. */
  async store<T>(op: string, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      const result = await run();
      this.storeOperations.inc({ op, outcome: 'ok' });
      return result;
    } catch (err) {
      this.storeOperations.inc({ op, outcome: (err as { code?: string })?.code ?? 'error' });
      throw err;
    } finally {
      this.storeDuration.observe({ op }, (performance.now() - started) / 1000);
    }
  }

  private methodLabel(method: string, outcome: string): string {
    if (outcome === 'not_found' || outcome === 'forbidden' || outcome === 'validation_error') return '(unknown)';
    if (this.methods.has(method)) return method;
    if (this.methods.size >= MAX_METHOD_LABELS) return '(other)';
    this.methods.add(method);
    return method;
  }
}
