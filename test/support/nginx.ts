/**
 * Debian's nginx as the TLS reverse proxy in front of a gateway, or of several taking requests in
 * turn, as a deployment runs it: the site configuration the guide's "Behind a proxy" and "Several
 * gateways" show (`proxySite`, the one text those pages and the tests use), wrapped
 * in a main configuration of its own (pid, logs and temporary folders in a temporary folder, so it
 * needs no root-owned directory), with a throwaway self-signed certificate made by the openssl CLI.
 * Its access log names the gateway nginx sent each request to (`Proxy.access`).
 * `npm test` (and `npm run provision`) installs /usr/sbin/nginx and exports PORTICO_NGINX.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './processes.js';

export const NGINX = process.env.PORTICO_NGINX ?? '/usr/sbin/nginx';

export interface SiteOptions {
  /** Where nginx listens (`443`, `127.0.0.1:8443`). */
  listen: string;
  /**
   * The gateways, as `portico serve` printed them without the scheme (`127.0.0.1:8000`): one, or
   * several that nginx sends requests to in turn (round-robin, its default; each request and
   * each socket on its own, whatever connection the client or nginx reuses).
   */
  gateways: string[];
  certificate: string;
  key: string;
}

/**
 * The site: TLS, WebSocket upgrades on any path (the gateway's sockets are /v1/interfaces/ws and
 * /v1/executions/ws), and the X-Forwarded-* headers that `portico serve --trusted-proxy` believes.
 * Answers stream through unbuffered (reads, output), uploads too, and sockets stay open for as
 * long as the gateway keeps them (its heartbeat, not nginx's 60 s read timeout, finds dead peers).
 */
export function proxySite({ listen, gateways, certificate, key }: SiteOptions): string {
  return `map $http_upgrade $connection_upgrade {
    default upgrade;
    ''      '';
}

upstream portico {
${gateways.map((gateway) => `    server ${gateway};\n`).join('')}    keepalive 16;
}

server {
    listen ${listen} ssl;
    ssl_certificate     ${certificate};
    ssl_certificate_key ${key};
    client_max_body_size 0;

    location / {
        proxy_pass http://portico;
        proxy_http_version 1.1;
        proxy_set_header Upgrade $http_upgrade;
        proxy_set_header Connection $connection_upgrade;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_set_header X-Forwarded-Host $http_host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_buffering off;
        proxy_request_buffering off;
        proxy_read_timeout 1h;
        proxy_send_timeout 1h;
    }
}
`;
}

/** The example docs/operating/proxy.md shows: the site for a gateway on 127.0.0.1:8000. */
export const PROXY_PAGE_SITE = proxySite({ listen: '443', gateways: ['127.0.0.1:8000'], certificate: '/etc/ssl/portico/cert.pem', key: '/etc/ssl/portico/key.pem' });

/** The example docs/operating/several-gateways.md shows: the same site for three gateways on three hosts. */
export const GATEWAYS_PAGE_SITE = proxySite({
  listen: '443',
  gateways: ['10.0.0.11:8000', '10.0.0.12:8000', '10.0.0.13:8000'],
  certificate: '/etc/ssl/portico/cert.pem',
  key: '/etc/ssl/portico/key.pem',
});

/** A main configuration around `site` that writes only under `dir`. */
function mainConfig(dir: string, site: string): string {
  return `${process.getuid?.() === 0 ? 'user root;\n' : ''}daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events { worker_connections 256; }
http {
    log_format upstreams escape=json '{"request":"$request","status":$status,"upstream":"$upstream_addr","request_id":"$http_x_request_id"}';
    access_log ${dir}/access.log upstreams;
    client_body_temp_path ${dir}/client_body;
    proxy_temp_path ${dir}/proxy;
    fastcgi_temp_path ${dir}/fastcgi;
    uwsgi_temp_path ${dir}/uwsgi;
    scgi_temp_path ${dir}/scgi;
${site.replace(/^(?=.)/gm, '    ')}}
`;
}

export interface Proxy {
  /** e.g. https://127.0.0.1:41234 */
  url: string;
  port: number;
  /** The self-signed certificate (for 127.0.0.1) a client is told to trust. */
  certificate: string;
  /** nginx's error log, for a failing test's message. */
  errors(): Promise<string>;
  /** nginx's access log so far, a line per request ended (a socket's when it closed). */
  access(): Promise<AccessLine[]>;
  stop(): Promise<void>;
}

export interface AccessLine {
  /** `POST /v1/interfaces/call HTTP/1.1` */
  request: string;
  status: number;
  /** The gateway nginx sent it to (`127.0.0.1:41235`; several, comma-separated, when it tried more than one). */
  upstream: string;
  /** The request's X-Request-Id ('' without one). */
  request_id: string;
}

const run = promisify(execFile);

/**
 * Starts nginx on a free loopback port with TLS in front of the gateway at `gatewayUrls`
 * (http://host:port), or of the gateways there in turn.
 */
export async function startProxy(gatewayUrls: string | string[]): Promise<Proxy> {
  if (!existsSync(NGINX)) throw new Error(`no nginx at ${NGINX}: run \`npm run provision\` (installs Debian's nginx)`);
  const dir = await mkdtemp(path.join(tmpdir(), 'portico-nginx-'));
  const certificate = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', certificate]);
  const port = await freePort();
  const conf = path.join(dir, 'nginx.conf');
  const gateways = (typeof gatewayUrls === 'string' ? [gatewayUrls] : gatewayUrls).map((url) => new URL(url).host);
  await writeFile(conf, mainConfig(dir, proxySite({ listen: `127.0.0.1:${port}`, gateways, certificate, key })));
  const errorLog = path.join(dir, 'error.log');
  const errors = () => readFile(errorLog, 'utf8').catch(() => '');
  const access = async () =>
    (await readFile(path.join(dir, 'access.log'), 'utf8').catch(() => ''))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as AccessLine);
  const child: ChildProcess = spawn(NGINX, ['-p', dir, '-e', errorLog, '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    await rm(dir, { recursive: true, force: true });
  };
  // Ready once it accepts connections; an nginx that exits first says why.
  const url = `https://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const why = `${stderr}${await errors()}`;
      await stop();
      throw new Error(`nginx exited before it listened:\n${why}`);
    }
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (up) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { url, port, certificate, errors, access, stop };
}
