import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Metrics } from './metrics.js';

const sources = { workers: () => 0, instances: () => ({}), executions: async () => ({}), schedulerCommands: () => ({}), storeUp: async () => true };

/** The lines of a /metrics page that belong to `name` (its HELP, TYPE and samples). */
function series(page: string, name: string): string[] {
  return page.split('\n').filter((line) => line.replace(/^# (HELP|TYPE) /, '').startsWith(name));
}

describe('call metrics', () => {
  it('render as prom-client Counter and Histogram series would, for every (method, outcome)', async () => {
    const calls: Array<[string, string, number]> = [
      ['add', 'ok', 0.0004],
      ['add', 'ok', 0.0005],
      ['add', 'ok', 0.003],
      ['add', 'call_failed', 0.2],
      ['(unknown)', 'not_found', 75],
      ['echo', 'ok', 0.0001],
    ];
    const metrics = new Metrics(sources);
    for (const [method, outcome, seconds] of calls) metrics.call(method, outcome, seconds);

    const registry = new Registry();
    const buckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
    const counter = new Counter({ name: 'portico_calls_total', help: 'Remote method calls (REST and WebSocket), by method and outcome (ok or the error code).', labelNames: ['method', 'outcome'], registers: [registry] });
    const histogram = new Histogram({ name: 'portico_call_duration_seconds', help: 'Remote method call latency, by method and outcome.', labelNames: ['method', 'outcome'], buckets, registers: [registry] });
    for (const [method, outcome, seconds] of calls) {
      counter.inc({ method, outcome });
      histogram.observe({ method, outcome }, seconds);
    }

    const page = await metrics.registry.metrics();
    const reference = await registry.metrics();
    for (const name of ['portico_calls_total', 'portico_call_duration_seconds']) {
      expect(series(page, name)).toEqual(series(reference, name));
      expect(series(page, name).length).toBeGreaterThan(2);
    }
    expect((await metrics.registry.getMetricsAsJSON()).find((m) => m.name === 'portico_calls_total')).toEqual(
      (await registry.getMetricsAsJSON()).find((m) => m.name === 'portico_calls_total'),
    );
    metrics.registry.resetMetrics();
    registry.resetMetrics();
    expect(series(await metrics.registry.metrics(), 'portico_calls_total')).toEqual(series(await registry.metrics(), 'portico_calls_total'));
  });
});
