import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // expect.poll waits for what a test expects to happen, not for how fast: its default of 1 s
    // failed on a loaded machine. It still returns as soon as the expectation holds.
    expect: { poll: { timeout: 30_000 } },
    // Integration suites each start real gateways and Python workers; two cores run two at once.
    maxWorkers: 2,
  },
});
