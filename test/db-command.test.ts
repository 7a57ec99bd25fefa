/**
 * `portico db start|stop|status` as a user runs it (the built CLI): a PostgreSQL cluster of the
 * project's own in .portico/postgres, whose printed URL a gateway serves from; and what a gateway
 * says when its database refuses it.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanup, tempProject } from './helpers.js';
import { runPortico } from './support/processes.js';

/** Clusters a test started, stopped at the end whatever happened. */
const started: string[] = [];

afterAll(async () => {
  for (const project of started) await run(['db', 'stop', '--project', project]).exited;
  await cleanup();
});

const run = runPortico;

/** A project folder the postgres user may enter (as root the server runs as postgres; mkdtemp makes 0700). */
async function project(): Promise<string> {
  const dir = await tempProject();
  await chmod(dir, 0o755);
  return dir;
}

/** `portico db start` for `dir`, remembered for the final stop. */
async function dbStart(dir: string) {
  started.push(dir);
  const p = run(['db', 'start', '--project', dir]);
  return { code: await p.exited, out: p.out(), err: p.err() };
}

describe('portico db', () => {
  it('start makes a cluster in .portico/postgres and prints the URL a gateway serves from; again, says it runs; stop stops it', async () => {
    const dir = await project();
    const first = await dbStart(dir);
    expect(first.code, first.err).toBe(0);
    // stdout is the URL alone, naming the user and the database; the socket is in the project.
    const user = process.getuid?.() === 0 ? 'postgres' : (await import('node:os')).userInfo().username;
    const url = `postgres://${user}@localhost/portico?host=${dir}/.portico/postgres`;
    expect(first.out).toBe(`${url}\n`);
    expect(first.err).toContain(`Started PostgreSQL`);
    expect(first.err).toContain(`portico serve ${dir} --store '${url}'`);
    expect(existsSync(path.join(dir, '.portico/postgres/.s.PGSQL.5432'))).toBe(true);

    const again = await dbStart(dir);
    expect(again.code).toBe(0);
    expect(again.err).toMatch(/is already running \(pid \d+\)/);
    expect(again.out).toBe(`${url}\n`);

    // A gateway serves the project from it: a record created through it is a row in the database.
    const gateway = run(['serve', dir, '--port', '0', '--store', url], process.env, /Stop/);
    await gateway.ready;
    expect(gateway.out()).toMatch(/Store\s+PostgreSQL at postgres:\/\/.*\.portico\/postgres/);
    const api = /API\s+(http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(gateway.out())![1];
    const res = await fetch(`${api}/v1/interfaces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ target: 'counter', version: [{ start: 3 }] }) });
    const created = (await res.json()) as { uuid: string };
    expect(res.status, JSON.stringify(created)).toBeLessThan(300);
    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query('SELECT count(*)::int AS n FROM portico_interfaces WHERE project = $1', [dir]);
      expect(rows[0].n).toBe(1);
    } finally {
      await client.end();
    }

    const status = run(['db', 'status', '--project', dir]);
    expect(await status.exited).toBe(0);
    expect(status.out()).toBe(`${url}\n`);
    const stop = run(['db', 'stop', '--project', dir]);
    expect(await stop.exited).toBe(0);
    expect(stop.err()).toContain('Stopped the PostgreSQL cluster');
    const stopped = run(['db', 'status', '--project', dir]);
    expect(await stopped.exited).toBe(3);
    expect(stopped.err()).toContain('is stopped: start it with `portico db start');
  });

  it('as root, refuses a project the postgres user cannot enter, naming the folder and the fix, and makes nothing', async (ctx) => {
    if (process.getuid?.() !== 0) ctx.skip('only root runs the server as another user');
    const dir = await tempProject(); // mkdtemp: mode 0700
    const p = run(['db', 'start', '--project', dir]);
    expect(await p.exited).toBe(1);
    expect(p.err()).toContain(`cannot enter ${dir} (mode 700)`);
    expect(p.err()).toContain(`chmod o+x ${dir}`);
    expect(existsSync(path.join(dir, '.portico'))).toBe(false);
  });

  it('without the server programs, says which Debian package to install', async () => {
    const empty = await mkdtemp(path.join(tmpdir(), 'portico-no-pg-'));
    try {
      const p = run(['db', 'start', '--project', await project()], { ...process.env, PORTICO_POSTGRES_BIN: empty });
      expect(await p.exited).toBe(1);
      expect(p.err()).toContain('apt-get install -y postgresql');
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});

describe('a gateway whose database refuses it', () => {
  it('says what to do: name a user, create the role or database, start the server', async () => {
    const dir = await project();
    const { code, out, err } = await dbStart(dir);
    expect(code, err).toBe(0);
    const socket = `${dir}/.portico/postgres`;
    const serve = async (store: string, env: NodeJS.ProcessEnv = process.env) => {
      const p = run(['serve', dir, '--port', '0', '--store', store], env);
      expect(await p.exited).toBe(1);
      return p.err();
    };
    // Debian as root in a container: $USER is empty and the URL names nobody.
    const { USER: _user, ...noUser } = process.env;
    expect(await serve(`postgres:///portico?host=${socket}`, noUser)).toContain(`name the user in the URL, as in postgres://USER@localhost/portico?host=${socket}`);
    expect(await serve(`postgres://ada@localhost/portico?host=${socket}`)).toContain("PostgreSQL has no user (role) 'ada': name an existing one in the URL, or create it");
    const user = new URL(out.trim()).username;
    expect(await serve(`postgres://${user}@localhost/lab?host=${socket}`)).toContain(`PostgreSQL has no database 'lab': create it (createdb -h ${socket} -U ${user} lab)`);
    expect((await run(['db', 'stop', '--project', dir]).exited)).toBe(0);
    expect(await serve(out.trim())).toMatch(/cannot be reached: connect ENOENT .*No PostgreSQL server listens in the socket folder .*`portico db start --project P`/);
  });
});
