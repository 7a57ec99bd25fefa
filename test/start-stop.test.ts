/**
 * Starting and stopping like other servers: `npm start -- PROJECT [flags]` serves PROJECT; SIGTERM
 * or SIGINT to any process of the chain (npm, the gateway; `npx portico serve` too) stops the
 * gateway and leaves no process and no listener behind; a taken port is refused at once with the
 * process holding it and the --port way out; GET /v1 answers with the API's index, and /docs says
 * which version is Portico's and which the API's.
 */
import { createServer, type Server } from 'node:net';
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { API_VERSION, PROTOCOL_VERSION, VERSION } from '../packages/server/src/index.js';
import { api, cleanup, gateway, ROOT, tempProject } from './helpers.js';
import { children, freePort, groupGone, killGroup, launch, members, portFree, processGone, type Launched } from './support/processes.js';

afterAll(cleanup);

const launched: Launched[] = [];
afterEach(() => {
  while (launched.length) killGroup(launched.pop()!.group);
});

const BANNER = /Portico \S+ serving (.+)\n\s+Open\s+(http:\/\/127\.0\.0\.1:(\d+))\/[\s\S]*Stop\s+Ctrl\+C/;

/** `npm start -- …args` from `cwd` (the repository unless said), as a user types it. */
function npmStart(args: string[], cwd = ROOT): Launched {
  const started = launch('npm', [...(cwd === ROOT ? [] : ['--prefix', ROOT]), 'start', '--', ...args], { cwd });
  launched.push(started);
  return started;
}

/** A call that starts the project's Python worker: stopping must end it too. */
async function call(url: string): Promise<unknown> {
  return (await api({ url }, 'POST', '/v1/interfaces/call', { target: 'counter', method: 'add', args: [2] })).body;
}

describe('npm start -- PROJECT [flags]', { timeout: 180_000 }, () => {
  it('serves PROJECT on the port given, and GET /v1 (the banner’s API link) answers', async () => {
    const project = await tempProject();
    const port = await freePort();
    const started = npmStart([project, '--port', String(port)]);
    const [, served, url, printedPort] = await started.printed(BANNER);
    expect(served).toBe(realpathSync(project));
    expect(Number(printedPort)).toBe(port);
    expect(started.out()).toContain(`API ${url}/v1`);
    const index = await api({ url: url! }, 'GET', '/v1');
    expect(index.status).toBe(200);
    expect(index.body).toMatchObject({ name: 'Portico', version: VERSION, api_version: API_VERSION });
    expect(await call(url!)).toEqual({ payload: 2 });
    process.kill(started.group, 'SIGTERM');
    await groupGone(started.group);
    expect(await portFree(port)).toBe(true);
  });

  it('takes a relative PROJECT from the folder npm was started in', async () => {
    const project = await tempProject();
    const started = npmStart([path.basename(project), '--port', '0'], path.dirname(project));
    const [, served, url] = await started.printed(BANNER);
    expect(served).toBe(realpathSync(project));
    expect(await call(url!)).toEqual({ payload: 2 });
    process.kill(started.group, 'SIGTERM');
    await groupGone(started.group);
  });

  it.each([
    ['SIGTERM', 'npm'],
    ['SIGINT', 'npm'],
    ['SIGTERM', 'the gateway'],
    ['SIGINT', 'the gateway'],
  ] as const)('%s to %s alone stops the gateway: no process of the chain is left, the port is free', async (signal, target) => {
    const project = await tempProject();
    const started = npmStart([project, '--port', '0']);
    const [, , url, port] = await started.printed(BANNER);
    expect(await call(url!)).toEqual({ payload: 2 });
    const chain = members(started.group);
    const gatewayProcess = chain.find((p) => p.command.includes('scripts/start.mjs'));
    expect(gatewayProcess, JSON.stringify(chain)).toBeDefined();
    // The worker is the gateway's child in a session of its own (a terminal's Ctrl+C must not reach it), stopped with the rest.
    const worker = children(gatewayProcess!.pid).find((p) => /python/.test(p.command));
    expect(worker, JSON.stringify(children(gatewayProcess!.pid))).toBeDefined();
    expect(chain.some((p) => p.pid === worker!.pid)).toBe(false);
    process.kill(target === 'npm' ? started.group : gatewayProcess!.pid, signal);
    await groupGone(started.group);
    await processGone(worker!.pid);
    expect(await portFree(Number(port))).toBe(true);
  });
});

describe('npx portico serve', { timeout: 120_000 }, () => {
  it('SIGTERM to npx alone stops the gateway: its shell dies of it without passing it on, and the gateway, orphaned, stops', async () => {
    const project = await tempProject();
    const started = launch('npx', ['portico', 'serve', project, '--port', '0'], { cwd: ROOT });
    launched.push(started);
    const [, , url, port] = await started.printed(BANNER);
    expect(await call(url!)).toEqual({ payload: 2 });
    process.kill(started.group, 'SIGTERM');
    await groupGone(started.group);
    expect(await portFree(Number(port))).toBe(true);
    expect(started.err()).toContain('npm, which started the gateway, is gone, stopping');
  });
});

describe('a taken port', { timeout: 120_000 }, () => {
  let holder: Server;
  let port: number;
  const hold = () =>
    new Promise<void>((resolve) => {
      holder = createServer();
      holder.listen(0, '127.0.0.1', () => {
        port = (holder.address() as { port: number }).port;
        resolve();
      });
    });
  afterEach(() => new Promise<void>((resolve) => holder.close(() => resolve())));

  /** The one line of the refusal: the port, the process holding it (this test's), and the way out. */
  const refusal = () =>
    new RegExp(
      `^portico: Port ${port} on 127\\.0\\.0\\.1 is already in use by process ${process.pid} \\(.+\\): stop it, or pick another port with --port N \\(--port 0 picks a free one\\)$`,
      'm',
    );

  it('portico serve names the port, the process holding it and --port N / --port 0, exits 1, and opens no index', async () => {
    await hold();
    const project = await tempProject();
    const started = launch(process.execPath, [path.join(ROOT, 'packages/server/bin/portico.js'), 'serve', project, '--port', String(port)], { cwd: ROOT });
    launched.push(started);
    expect(await started.exited).toBe(1);
    expect(started.err()).toMatch(refusal());
    expect(started.err().trim().split('\n')).toHaveLength(1);
    expect(existsSync(path.join(project, '.portico'))).toBe(false);
  });

  it('npm start -- PROJECT --port N says the same and fails', async () => {
    await hold();
    const project = await tempProject();
    const started = npmStart([project, '--port', String(port)]);
    expect(await started.exited).not.toBe(0);
    expect(started.err()).toMatch(refusal());
    await groupGone(started.group);
  });
});

describe('GET /v1 and /docs', () => {
  it('GET /v1 is the index of the API: Portico’s version beside the API’s and the protocol’s, and links that answer', async () => {
    const g = await gateway();
    const res = await api(g, 'GET', '/v1');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      name: 'Portico',
      version: VERSION,
      api_version: API_VERSION,
      protocol_version: PROTOCOL_VERSION,
      links: expect.objectContaining({ docs: '/docs', openapi: '/openapi.json', health: '/v1/health', protocol: '/v1/protocol' }),
    });
    const links = res.body.links as Record<string, string>;
    const doc = (await api(g, 'GET', '/openapi.json')).body;
    for (const [name, link] of Object.entries(links)) {
      if (name.endsWith('websocket')) continue;
      // A link answers its method: GET, or the one POST-only resource it names (search, minting a token).
      if (doc.paths[link] && !doc.paths[link].get) expect(Object.keys(doc.paths[link]), link).toEqual(['post']);
      else expect((await api(g, 'GET', link)).status, link).toBe(200);
    }
    expect(doc.paths['/v1']).toBeDefined();
    // Every top-level resource of /v1 is linked (the module list at /v1/project among them).
    const resources = new Set(Object.keys(doc.paths).map((p) => p.split('/').slice(0, 3).join('/')).filter((p) => p.startsWith('/v1/')));
    for (const resource of resources) expect(Object.values(links).some((link) => link === resource || link.startsWith(`${resource}/`)), resource).toBe(true);
  });

  it('GET /v1 needs the credential like the rest of /v1', async () => {
    const g = await gateway({ apiToken: 'index-token' });
    expect((await api(g, 'GET', '/v1')).status).toBe(401);
    expect((await api(g, 'GET', '/v1', undefined, { authorization: 'Bearer index-token' })).status).toBe(200);
  });

  it('/docs labels which version is Portico’s and which the API’s', async () => {
    const g = await gateway();
    const page = await fetch(`${g.url}/docs`).then((r) => r.text());
    expect(page).toContain(`<title>Portico ${VERSION} · API ${API_VERSION}</title>`);
    const { info } = (await api(g, 'GET', '/openapi.json')).body;
    expect(info.version).toBe(API_VERSION);
    expect(info.description).toContain(`Portico ${VERSION} (the gateway) · REST API ${API_VERSION} · WebSocket protocol ${PROTOCOL_VERSION}`);
    expect(info.description).toContain("The badge beside the title is the REST API's version");
  });
});
