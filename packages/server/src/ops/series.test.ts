import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { LabelledCounter, LabelledHistogram } from './series.js';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
// On a bound, just past one, below the first, past the last, and label values that need escaping.
const OBSERVED: Array<[string, string, number]> = [
  ['POST', '200', 0.0005],
  ['GET', '404', 0.0005000001],
  ['POST', '200', 1e-9],
  ['POST', '500', 61],
  ['quote"back\\slash\nline', '200', 0.02],
  ['GET', '404', 2.5],
];

describe('labelled series', () => {
  it("a counter and a histogram read exactly as prom-client's own in /metrics", async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const count = (registers: Registry[]) => ({ name: 'x_requests_total', help: 'Requests.', labelNames: ['method', 'status'] as const, registers });
    const time = (registers: Registry[]) => ({ name: 'x_duration_seconds', help: 'Time "taken".', labelNames: ['method'] as const, buckets: BUCKETS, registers });
    const counter = new LabelledCounter(count([ours]));
    const histogram = new LabelledHistogram(time([ours]));
    const reference = { counter: new Counter(count([theirs])), histogram: new Histogram(time([theirs])) };
    for (const [method, status, seconds] of OBSERVED) {
      counter.inc({ method, status });
      histogram.observe({ method }, seconds);
      reference.counter.inc({ method, status });
      reference.histogram.observe({ method }, seconds);
    }
    counter.inc({ method: 'GET', status: '404' }, 5);
    reference.counter.inc({ method: 'GET', status: '404' }, 5);

    const page = await ours.metrics();
    expect(page).toBe(await theirs.metrics());
    expect(page).toContain('x_requests_total{method="GET",status="404"} 7');
    expect(page).toContain('x_duration_seconds_bucket{le="0.0005",method="POST"} 2');
    expect(page).toContain('x_duration_seconds_bucket{le="+Inf",method="POST"} 3');
  });
});
