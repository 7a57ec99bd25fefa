/**
 * Several gateways, one PostgreSQL index (DESIGN §8): concurrent creates through two gateways
 * serving one project make one record per uuid, each sees what the other wrote, the project lock
 * no longer refuses the second gateway (it still does with the embedded store), and a gateway
 * whose database goes away answers 503 store_unavailable, then serves again by itself once the
 * database is back, without losing an acknowledged create.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../packages/server/src/store/postgres/schema.js';
import { api, cleanup, gateway, tempProject } from './helpers.js';
import { startPostgres, type TestPostgres } from './support/postgres.js';

let postgres: TestPostgres;

beforeAll(async () => {
  postgres = await startPostgres();
});

afterAll(async () => {
  await cleanup();
  await postgres?.close();
});

/** Rows of one project in the database itself, not through a gateway. */
async function rowsOf(project: string): Promise<number> {
  const client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM portico_interfaces WHERE project = $1', [project]);
    return Number(rows[0]!.n);
  } finally {
    await client.end();
  }
}

/** Polls until the request answers 200 (bounded: the database was started again before). */
async function until200(running: { url: string }, method: string, pathname: string, body?: unknown): Promise<{ status: number; body: any }> {
  let last: { status: number; body: any } | undefined;
  for (let attempt = 0; attempt < 200; attempt++) {
    last = await api(running, method, pathname, body);
    if (last.status === 200) return last;
    expect(last.status).toBe(503);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`never answered 200: ${JSON.stringify(last)}`);
}

describe('two gateways on one PostgreSQL index', () => {
  it('1000 concurrent creates split across both give exactly one record per uuid, and each gateway sees all', async () => {
    const project = await tempProject();
    const [a, b] = [await gateway({ project, store: postgres.url }), await gateway({ project, store: postgres.url })];
    // 500 configs, each created once through each gateway: the same uuid raced from both sides.
    const creates = Array.from({ length: 1000 }, (_, i) => ({ via: i < 500 ? a : b, start: i % 500 }));
    const answers = await Promise.all(creates.map(({ via, start }) => api(via, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start }] })));
    for (const answer of answers) expect(answer.status).toBe(200);
    for (let start = 0; start < 500; start++) {
      // Both callers got the one record: same uuid, same creation time, same creator.
      expect(answers[start + 500]!.body).toEqual(answers[start]!.body);
    }
    expect(new Set(answers.map((answer) => answer.body.uuid)).size).toBe(500);
    expect(await rowsOf(project)).toBe(500);

    for (const via of [a, b]) {
      const seen = new Set<string>();
      let cursor: string | null = null;
      do {
        const page = await api(via, 'POST', '/v1/interfaces/search', { module: 'counter', limit: 200, cursor });
        expect(page.status).toBe(200);
        expect(page.body.total).toBe(500);
        for (const item of page.body.items) seen.add(item.uuid);
        cursor = page.body.next_cursor;
      } while (cursor);
      expect(seen.size).toBe(500);
    }
  });

  it('label: written through one gateway, read through the other; last write wins', async () => {
    const project = await tempProject();
    const [a, b] = [await gateway({ project, store: postgres.url }), await gateway({ project, store: postgres.url })];
    const created = (await api(a, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 7 }] }, { 'x-service-user': 'alice' })).body;
    expect((await api(a, 'PATCH', `/v1/interfaces/${created.uuid}/label`, { label: 'first' })).status).toBe(200);
    expect((await api(b, 'GET', `/v1/interfaces/${created.uuid}`)).body).toMatchObject({ label: 'first', created_by: 'alice' });
    expect((await api(b, 'PATCH', `/v1/interfaces/${created.uuid}/label`, { label: 'second' })).status).toBe(200);
    expect((await api(a, 'GET', `/v1/interfaces/${created.uuid}`)).body).toMatchObject({ label: 'second', created_by: 'alice', config: created.config });
    expect((await api(b, 'POST', `/v1/interfaces/${created.uuid}/archive`)).status).toBe(200);
    expect((await api(a, 'POST', '/v1/interfaces/search', { label: 'second' })).body.total).toBe(0);
    expect((await api(a, 'POST', '/v1/interfaces/search', { label: 'second', include_archived: true })).body.total).toBe(1);
  });

  it('every acknowledged create has its record file beside its data, as answered; a label rewrites it', async () => {
    const project = await tempProject();
    const running = await gateway({ project, store: postgres.url });
    const recordFile = async (uuid: string) => JSON.parse(await readFile(path.join(project, '.portico/interfaces', uuid, 'interface.json'), 'utf8'));
    const answers = await Promise.all(Array.from({ length: 64 }, (_, start) => api(running, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start }] })));
    for (const { status, body } of answers) {
      expect(status).toBe(200);
      // cli and cached are the answer's, not the record's (cached is computed when answered).
      const { cli: _cli, cached: _cached, ...record } = body;
      expect(await recordFile(body.uuid)).toEqual({ ...record, predicate: {} });
    }
    const { uuid } = answers[0]!.body;
    expect((await api(running, 'PATCH', `/v1/interfaces/${uuid}/label`, { label: 'kept' })).status).toBe(200);
    expect(await recordFile(uuid)).toMatchObject({ uuid, label: 'kept' });
  });

  it('the embedded store still refuses a second gateway on one project', async () => {
    const project = await tempProject();
    await gateway({ project });
    await expect(gateway({ project })).rejects.toMatchObject({ code: 'conflict' });
  });
});

describe('the schema', () => {
  it('is migrated at start, and a gateway refuses a schema newer than it knows, saying so', async () => {
    await gateway({ store: postgres.url });
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ version: number }>('SELECT version FROM portico_schema');
      expect(rows).toEqual([{ version: SCHEMA_VERSION }]);
      await client.query('UPDATE portico_schema SET version = $1', [SCHEMA_VERSION + 1]);
      await expect(gateway({ store: postgres.url })).rejects.toMatchObject({
        code: 'store_unavailable',
        message: expect.stringContaining(`schema version ${SCHEMA_VERSION + 1}, newer than this gateway knows (${SCHEMA_VERSION})`),
      });
    } finally {
      await client.query('UPDATE portico_schema SET version = $1', [SCHEMA_VERSION]);
      await client.end();
    }
  });
});

describe('hostile search input', () => {
  it('is refused with 422 or answered correctly, never a 5xx', async () => {
    const running = await gateway({ store: postgres.url });
    const nasty = [`'; DROP TABLE portico_interfaces; --`, '$$ $1 $$', 'a"b\\c', '\u0000', 'é😀\uffff\ud800', ';'];
    const created = (await api(running, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 42 }] })).body;
    for (const label of nasty) {
      expect((await api(running, 'PATCH', `/v1/interfaces/${created.uuid}/label`, { label })).status).toBe(200);
      const found = await api(running, 'POST', '/v1/interfaces/search', { label, filters: [{ path: 'label', op: 'contains', value: label }] });
      expect(found.status).toBe(200);
      expect(found.body.items.map((item: { uuid: string }) => item.uuid)).toEqual([created.uuid]);
    }
    const bodies: unknown[] = [
      { config: { filters: [{ path: "a'; --", value: 1 }] } },
      { config: { filters: [{ path: 'start', op: "eq'; --", value: 1 }] } },
      { filters: [{ path: 'config.$$', value: 1 }] },
      { sort: [{ by: 'created_at; DROP TABLE x' }] },
      { sort: [{ by: 'a"b', config_layer: 'resolved' }] },
      { cursor: "'; --" },
      { config: { filters: [{ path: 'start', op: 'in', value: Array.from({ length: 10_000 }, (_, i) => i) }] } },
      { config: { filters: [{ path: 'start', op: 'nin', value: Array.from({ length: 10_000 }, (_, i) => `x${i}`) }] } },
      { config: { filters: [{ path: 'start', op: 'gt', value: 1e308 }, { path: 'start', op: 'lt', value: -1e308 }] } },
      { config: { filters: [{ path: 'é', value: 1 }] } },
      { config: { filters: [{ path: 'start.ünïcode', value: 'x' }] } },
      { filters: [{ path: 'config.start', op: 'contains', value: { '$$': ["'"] } }] },
    ];
    for (const body of bodies) {
      const answer = await api(running, 'POST', '/v1/interfaces/search', body);
      expect([200, 422]).toContain(answer.status);
    }
    const inList = await api(running, 'POST', '/v1/interfaces/search', { config: { filters: [{ path: 'start', op: 'in', value: Array.from({ length: 10_000 }, (_, i) => i) }] } });
    expect(inList.body.items.map((item: { uuid: string }) => item.uuid)).toEqual([created.uuid]);
  });
});

describe('losing the database', () => {
  it('answers 503 store_unavailable while it is down (its host only in the log) and serves again by itself when it is back', async () => {
    const logged: string[] = [];
    const running = await gateway({ store: postgres.url, log: (line) => logged.push(line) });
    const where = new URL(postgres.url).searchParams.get('host') ?? new URL(postgres.url).host;
    const created = (await api(running, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start: 1 }] })).body;
    await postgres.stop();
    try {
      for (const [method, pathname, body] of [
        ['GET', `/v1/interfaces/${created.uuid}`],
        ['POST', '/v1/interfaces/search', {}],
        ['PATCH', `/v1/interfaces/${created.uuid}/label`, { label: 'x' }],
      ] as const) {
        const answer = await api(running, method, pathname, body);
        expect(answer.status).toBe(503);
        expect(answer.body).toMatchObject({ code: 'store_unavailable', message: expect.stringContaining('cannot be reached') });
        // The database's address and the driver's words are the operator's, not the client's.
        expect(JSON.stringify(answer.body)).not.toContain(where);
      }
      expect(logged.some((line) => line.includes('store_unavailable') && line.includes(where))).toBe(true);
    } finally {
      await postgres.start();
    }
    expect((await until200(running, 'GET', `/v1/interfaces/${created.uuid}`)).body.uuid).toBe(created.uuid);
  });

  it('health and /metrics tell the truth: degraded with the store named while it is down, ok again once it is back', async () => {
    const running = await gateway({ store: postgres.url });
    const where = new URL(postgres.url).searchParams.get('host') ?? new URL(postgres.url).host;
    const storeUp = async () => /^portico_store_up (\d)$/m.exec((await (await fetch(`${running.url}/metrics`)).text()))?.[1];
    expect((await api(running, 'GET', '/v1/health')).body).toMatchObject({ status: 'ok', problems: [] });
    expect(await storeUp()).toBe('1');
    await postgres.stop();
    try {
      const down = await api(running, 'GET', '/v1/health');
      expect(down.status).toBe(200);
      expect(down.body).toMatchObject({ status: 'degraded', problems: [{ store: 'postgresql', status: 'unavailable', message: expect.stringContaining('cannot be reached') }] });
      expect(JSON.stringify(down.body)).not.toContain(where);
      const since = down.body.problems[0].since;
      expect((await api(running, 'GET', '/v1/health')).body.problems[0].since).toBe(since); // first found, not now
      expect(await storeUp()).toBe('0');
    } finally {
      await postgres.start();
    }
    await expect.poll(async () => (await api(running, 'GET', '/v1/health')).body.status, { timeout: 20_000 }).toBe('ok');
    expect((await api(running, 'GET', '/v1/health')).body.problems).toEqual([]);
    expect(await storeUp()).toBe('1');
  });

  it('a restart during a create load loses no acknowledged create; every answer is 200 or 503', async () => {
    const running = await gateway({ store: postgres.url });
    const acknowledged: string[] = [];
    const statuses = new Set<number>();
    let next = 0;
    // 8 writers, 400 creates in all; the database restarts while they run.
    const writer = async () => {
      while (next < 400) {
        const start = 1000 + next++;
        const answer = await api(running, 'POST', '/v1/interfaces', { target: 'counter', version: [{ start }] });
        statuses.add(answer.status);
        if (answer.status === 200) acknowledged.push(answer.body.uuid);
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, writer));
    while (next < 100) await new Promise((resolve) => setTimeout(resolve, 20));
    await postgres.stop();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await postgres.start();
    await load;
    expect([...statuses].filter((status) => status !== 200 && status !== 503)).toEqual([]);
    expect(acknowledged.length).toBeGreaterThan(0);
    for (const uuid of acknowledged) expect((await until200(running, 'GET', `/v1/interfaces/${uuid}`)).body.uuid).toBe(uuid);
    const searched = await until200(running, 'POST', '/v1/interfaces/search', { filters: [{ path: 'uuid', op: 'in', value: acknowledged }], limit: 1000 });
    expect(searched.body.total).toBe(acknowledged.length);
  });
});
