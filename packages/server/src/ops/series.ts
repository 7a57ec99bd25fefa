/**
 * A counter and a histogram for the metrics every request touches, counted in place and exposed
 * through the prom-client registry exactly as prom-client's own Counter and Histogram would be
 * (same samples, labels, label order and series order). prom-client checks and hashes the labels
 * of every observation; a REST call makes eight (HTTP, call, two store operations), which showed
 * in the gateway's CPU profile of a call (bench/README.md has the measurements). Here a label set is found
 * by its values in a Map and counted in place; the checks are the label types, at compile time.
 */
import type { Metric, Registry } from 'prom-client';

type Labels<L extends string> = Record<L, string>;

/** The series of one metric, by their label values in `names` order (first seen first, as prom-client lists them). */
class SeriesMap<L extends string, S extends { labels: Labels<L> }> {
  private readonly series = new Map<string, S>();

  constructor(
    private readonly names: readonly L[],
    private readonly create: (labels: Labels<L>) => S,
  ) {}

  get(labels: Labels<L>): S {
    const names = this.names;
    // One or two labels: a key without an array to join.
    let key = labels[names[0]!];
    for (let i = 1; i < names.length; i++) key += `\0${labels[names[i]!]}`;
    let series = this.series.get(key);
    if (series === undefined) this.series.set(key, (series = this.create(labels)));
    return series;
  }

  values(): IterableIterator<S> {
    return this.series.values();
  }

  /** Forgets every series (Registry.resetMetrics), as prom-client's reset does. */
  clear(): void {
    this.series.clear();
  }
}

interface MetricConfig<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  registers: Registry[];
}

function register(metric: object, registers: Registry[]): void {
  for (const registry of registers) registry.registerMetric(metric as Metric);
}

/** A counter by label set (prom-client's `Counter` with labels, `inc` only). */
export class LabelledCounter<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly type = 'counter';
  readonly aggregator = 'sum';
  private readonly series: SeriesMap<L, { labels: Labels<L>; value: number }>;

  constructor(config: MetricConfig<L>) {
    this.name = config.name;
    this.help = config.help;
    this.series = new SeriesMap(config.labelNames, (labels) => ({ labels, value: 0 }));
    register(this, config.registers);
  }

  inc(labels: Labels<L>, value = 1): void {
    this.series.get(labels).value += value;
  }

  reset(): void {
    this.series.clear();
  }

  async get() {
    return { name: this.name, help: this.help, type: this.type, values: [...this.series.values()].map(({ labels, value }) => ({ value, labels })), aggregator: this.aggregator };
  }
}

interface HistogramSeries<L extends string> {
  labels: Labels<L>;
  /** Observations per bucket, not cumulative (index of the first upper bound they fit under). */
  buckets: number[];
  sum: number;
  count: number;
}

/** A histogram by label set (prom-client's `Histogram` with labels, `observe` only). */
export class LabelledHistogram<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly bounds: readonly number[];
  private readonly series: SeriesMap<L, HistogramSeries<L>>;

  constructor(config: MetricConfig<L> & { buckets: readonly number[] }) {
    this.name = config.name;
    this.help = config.help;
    this.bounds = config.buckets;
    this.series = new SeriesMap(config.labelNames, (labels) => ({ labels, buckets: this.bounds.map(() => 0), sum: 0, count: 0 }));
    register(this, config.registers);
  }

  observe(labels: Labels<L>, value: number): void {
    const series = this.series.get(labels);
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        series.buckets[i]!++;
        break;
      }
    }
    series.sum += value;
    series.count++;
  }

  reset(): void {
    this.series.clear();
  }

  /** The samples in prom-client's shape: each series' cumulative buckets, +Inf, sum and count. */
  async get() {
    const bucket = `${this.name}_bucket`;
    const values = [];
    for (const { labels, buckets, sum, count } of this.series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += buckets[i]!;
        values.push({ labels: { le: this.bounds[i]! }, sharedLabels: labels, value: cumulative, metricName: bucket, exemplar: null });
      }
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: labels, value: count, metricName: bucket, exemplar: null },
        { labels: {}, sharedLabels: labels, value: sum, metricName: `${this.name}_sum`, exemplar: undefined },
        { labels: {}, sharedLabels: labels, value: count, metricName: `${this.name}_count`, exemplar: undefined },
      );
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}
