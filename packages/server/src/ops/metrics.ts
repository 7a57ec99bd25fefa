/**
 * Prometheus metrics (prom-client), one registry per gateway, scraped at `GET /metrics` (which is
 * authenticated like every other endpoint). Names and labels are the ones a dashboard needs:
 * calls and their latency by method and outcome, HTTP requests, sockets, workers and their
 * restarts, executions by state, store operations and their latency, upload and read bytes, and
 * the process's own figures. Labels that clients choose (method names) are bounded.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type Metric } from 'prom-client';

/** Distinct method labels kept before the rest count as `(other)`: clients choose method names. */
const MAX_METHOD_LABELS = 200;
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export interface MetricSources {
  /** Running workers now. */
  workers(): number;
  /** Executions of the open projects by status. */
  executions(): Promise<Record<string, number>>;
  /** Commands the executor ran against its scheduler so far (sbatch, squeue, sacct, scancel), by command. */
  schedulerCommands(): Readonly<Record<string, number>>;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly methods = new Set<string>();
  readonly httpRequests: Counter<'method' | 'status'>;
  readonly httpDuration: Histogram<'method'>;
  private readonly calls = new CallTallies();
  readonly sockets: Gauge<'endpoint'>;
  readonly workerRestarts: Counter;
  readonly storeOperations: Counter<'op' | 'outcome'>;
  readonly storeDuration: Histogram<'op'>;
  readonly uploadBytes: Counter;
  readonly readBytes: Counter;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    this.httpRequests = new Counter({ name: 'portico_http_requests_total', help: 'HTTP requests answered, by method and status.', labelNames: ['method', 'status'], registers });
    this.httpDuration = new Histogram({ name: 'portico_http_request_duration_seconds', help: 'Time to answer an HTTP request.', labelNames: ['method'], buckets: LATENCY_BUCKETS, registers });
    // The Registry reads a metric through name, help, type, get() and reset() only (RegistryMetric).
    this.registry.registerMetric(this.calls.counter('portico_calls_total', 'Remote method calls (REST and WebSocket), by method and outcome (ok or the error code).') as unknown as Metric);
    this.registry.registerMetric(this.calls.histogram('portico_call_duration_seconds', 'Remote method call latency, by method and outcome.') as unknown as Metric);
    this.sockets = new Gauge({ name: 'portico_sockets', help: 'Open WebSocket connections, by endpoint.', labelNames: ['endpoint'], registers });
    this.workerRestarts = new Counter({ name: 'portico_worker_restarts_total', help: 'Workers started again for a (project, interpreter) that had one before (after a crash or an idle stop).', registers });
    this.storeOperations = new Counter({ name: 'portico_store_operations_total', help: 'Index operations, by operation and outcome.', labelNames: ['op', 'outcome'], registers });
    this.storeDuration = new Histogram({ name: 'portico_store_operation_duration_seconds', help: 'Index operation latency.', labelNames: ['op'], buckets: LATENCY_BUCKETS, registers });
    this.uploadBytes = new Counter({ name: 'portico_upload_bytes_total', help: 'Bytes written by WebSocket uploads.', registers });
    this.readBytes = new Counter({ name: 'portico_read_bytes_total', help: 'Bytes sent by WebSocket reads.', registers });
    new Gauge({
      name: 'portico_workers',
      help: 'Running Python workers.',
      registers,
      collect() {
        this.set(sources.workers());
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
    this.calls.record(this.methodLabel(method, outcome), outcome, seconds);
  }

  /** Times an index operation. */
  async store<T>(op: string, run: () => Promise<T>): Promise<T> {
    const end = this.storeDuration.startTimer({ op });
    try {
      const result = await run();
      this.storeOperations.inc({ op, outcome: 'ok' });
      return result;
    } catch (err) {
      this.storeOperations.inc({ op, outcome: (err as { code?: string })?.code ?? 'error' });
      throw err;
    } finally {
      end();
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

interface CallTally {
  labels: { method: string; outcome: string };
  count: number;
  sum: number;
  /** Calls per latency bucket (LATENCY_BUCKETS, then +Inf), not cumulative. */
  buckets: number[];
}

/** A metric as prom-client's Registry reads it (what its own Counter and Histogram give). */
interface RegistryMetric {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  get(): Promise<{ name: string; help: string; type: string; values: unknown[]; aggregator: string }>;
  reset(): void;
}

/**
 * Calls counted and timed per (method, outcome) in plain numbers, turned into the
 * portico_calls_total counter and the portico_call_duration_seconds histogram only when
 * /metrics is read, in the same series prom-client's Counter and Histogram would give. Their
 * inc and observe hash and check the labels of every call: ~6% of the gateway's time per
 * pipelined WebSocket call in its profile; a call is now one map lookup and three additions.
 */
class CallTallies {
  private byLabels = new Map<string, CallTally>();

  record(method: string, outcome: string, seconds: number): void {
    const key = `${method}\0${outcome}`;
    let tally = this.byLabels.get(key);
    if (!tally) {
      tally = { labels: { method, outcome }, count: 0, sum: 0, buckets: new Array<number>(LATENCY_BUCKETS.length + 1).fill(0) };
      this.byLabels.set(key, tally);
    }
    let bucket = 0;
    while (bucket < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[bucket]!) bucket++;
    tally.count += 1;
    tally.sum += seconds;
    tally.buckets[bucket]! += 1;
  }

  counter(name: string, help: string): RegistryMetric {
    return this.metric(name, help, 'counter', () => [...this.byLabels.values()].map((t) => ({ value: t.count, labels: t.labels })));
  }

  histogram(name: string, help: string): RegistryMetric {
    return this.metric(name, help, 'histogram', () =>
      [...this.byLabels.values()].flatMap((t) => {
        let cumulative = 0;
        const buckets = t.buckets.map((n, i) => {
          cumulative += n;
          return { value: cumulative, metricName: `${name}_bucket`, exemplar: null, labels: { le: LATENCY_BUCKETS[i] ?? '+Inf', ...t.labels } };
        });
        return [...buckets, { value: t.sum, metricName: `${name}_sum`, labels: t.labels }, { value: t.count, metricName: `${name}_count`, labels: t.labels }];
      }),
    );
  }

  private metric(name: string, help: string, type: RegistryMetric['type'], values: () => unknown[]): RegistryMetric {
    return {
      name,
      help,
      type,
      aggregator: 'sum',
      get: async () => ({ name, help, type, values: values(), aggregator: 'sum' }),
      reset: () => (this.byLabels = new Map()),
    };
  }
}
