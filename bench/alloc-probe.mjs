// Loaded into the gateway by the bench (`node --import bench/alloc-probe.mjs …`) to count the bytes
// it allocates during a phase, which nothing outside the process can see. SIGUSR2 starts a phase;
// the next SIGUSR2 ends it and writes the byte count to $PORTICO_BENCH_ALLOC_FILE.
// Allocated = heap growth between collections plus growth since the last one (v8.GCProfiler
// reports the used heap before and after each collection).
import { writeFileSync } from 'node:fs';
import v8 from 'node:v8';

const out = process.env.PORTICO_BENCH_ALLOC_FILE;
let profiler;
let usedAtStart = 0;
const used = () => v8.getHeapStatistics().used_heap_size;

process.on('SIGUSR2', function allocationPhase() {
  if (!profiler) {
    profiler = new v8.GCProfiler();
    usedAtStart = used();
    profiler.start();
    return;
  }
  const { statistics } = profiler.stop();
  profiler = undefined;
  let previousAfter = usedAtStart;
  let bytes = 0;
  for (const gc of statistics) {
    bytes += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - previousAfter);
    previousAfter = gc.afterGC.heapStatistics.usedHeapSize;
  }
  bytes += Math.max(0, used() - previousAfter);
  if (out) writeFileSync(out, String(bytes));
});
