/**
 * @portico/protocol, the types the widget runtime and the lab extension build on, is the zod
 * contract of packages/server/src/contract written once for clients: its types are exactly what
 * the schemas infer (test/protocol/contract-types.ts, type-checked here), and its two enumerations
 * are the contract's.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENDED_STATUSES, FILTER_OPS, RUN_STATUSES } from '@portico/protocol';
import { describe, expect, it } from 'vitest';
import { RunStatus } from '../packages/server/src/contract/executions.js';
import { FILTER_OPS as CONTRACT_FILTER_OPS } from '../packages/server/src/contract/search.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

describe('@portico/protocol and the zod contract', () => {
  it('every type is the one its schema infers (a drift is a type error naming the line)', () => {
    const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const res = spawnSync(process.execPath, [tsc, '-p', 'test/protocol/tsconfig.json', '--pretty', 'false'], { cwd: root, encoding: 'utf8' });
    expect(res.stdout + res.stderr).toBe('');
    expect(res.status).toBe(0);
  });

  it('the filter operators and run statuses are the contract’s', () => {
    expect([...FILTER_OPS]).toEqual([...CONTRACT_FILTER_OPS]);
    expect([...RUN_STATUSES]).toEqual(RunStatus.options);
    expect(ENDED_STATUSES.every((status) => RUN_STATUSES.includes(status))).toBe(true);
  });
});
