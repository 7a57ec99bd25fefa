/**
 * `portico serve` stops on SIGTERM however many interfaces it created. The second record file a
 * gateway writes starts the thread that writes them (store/record-file-thread.ts); a gateway that
 * started it and sent it nothing since used to stay alive after its shutdown (exit only at the next
 * garbage collection, which an idle process may never run): found behind the proxy of
 * test/proxy-gateways.test.ts, where gateways stayed up minutes after SIGTERM.
 */
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api, cleanup, ROOT, tempProject } from './helpers.js';
import { killGroup, launch } from './support/processes.js';

afterAll(cleanup);

const BIN = path.join(ROOT, 'packages/server/bin/portico.js');

describe('portico serve stops after creating interfaces', { timeout: 120_000 }, () => {
  it('two creates (the second starts the record file thread), then SIGTERM: the gateway exits 0', async () => {
    const project = await tempProject();
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('PORTICO_')));
    const served = launch(process.execPath, [BIN, 'serve', project, '--port', '0'], { cwd: ROOT, env });
    try {
      const url = (await served.printed(/API (http:\/\/\S+)\/v1/))[1]!;
      for (const start of [1, 2]) {
        const created = await api({ url }, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start }] });
        expect(created.status).toBe(200);
      }
      served.child.kill('SIGTERM');
      expect(await served.exited).toBe(0);
    } finally {
      killGroup(served.group);
    }
  });
});
