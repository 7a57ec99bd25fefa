/**
 * A REST request for a live instance another gateway owns, forwarded there (docs/operating/several-gateways.md):
 * the same path with the parsed body, the peer secret and the client's user,
 * project and interpreter; the owner's answer (status, type, body) streams back as it came.
 * An owner that cannot be reached had nothing of the request: `relayToOwner` then rejects with
 * `unreachable` set and the caller asks where the instance lives again. One that goes away
 * while answering fails the request with `owner_lost` (the call may have run), and so does one
 * that lost its lease while the request waits on it (frozen, or cut off without a reset: it
 * answers nothing and its connection stays open), asked of the index once per lease time.
 */
import http from 'node:http';
import https from 'node:https';
import type Koa from 'koa';
import { PorticoError } from '../errors.js';
import type { RequestContext } from '../service/context.js';
import type { Gateway } from '../service/gateway.js';
import { peerRefused, type Owner } from '../service/ownership.js';

/** Connections to owners are kept and reused, as a client's to the gateway. */
const AGENTS = { http: new http.Agent({ keepAlive: true, maxSockets: 256 }), https: new https.Agent({ keepAlive: true, maxSockets: 256 }) };
/** The owner's answer headers a client sees. */
const PASSED = ['content-type', 'content-length', 'retry-after', 'allow', 'etag'];
/** Connection errors that mean the owner never got the request. */
const NOT_REACHED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);

type Unreachable = PorticoError & { unreachable?: boolean };

/** How a forward checks on its owner while it waits: `still` once every `everyMs`. */
interface OwnerWatch {
  everyMs: number;
  still: () => Promise<boolean>;
}

function relayToOwner(ctx: Koa.Context, address: string, headers: Record<string, string>, params: Record<string, string>, body: unknown, watch: OwnerWatch): Promise<http.IncomingMessage> {
  const url = new URL(ctx.path + (ctx.querystring ? `?${ctx.querystring}` : ''), address);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = transport.request(
      url,
      {
        method: ctx.method,
        agent: url.protocol === 'https:' ? AGENTS.https : AGENTS.http,
        headers: { ...headers, ...(data ? { 'content-type': 'application/json', 'content-length': String(data.length) } : {}) },
      },
      (res) => {
        res.once('close', stop);
        resolve(res);
      },
    );
    let done = false;
    // A client that goes away before the owner answered cancels the call there too (the owner
    // cancels what a closed connection was waiting for).
    let clientGone = false;
    const onClientGone = () => {
      if (done || ctx.res.writableEnded) return;
      clientGone = true;
      req.destroy(new Error('the client went away'));
    };
    ctx.res.once('close', onClientGone);
    const timer = setInterval(() => {
      void watch.still().then((still) => still || done || req.destroy(new Error('it lost its lease during the request (it stopped renewing it)')));
    }, watch.everyMs);
    timer.unref();
    const stop = () => {
      done = true;
      clearInterval(timer);
      ctx.res.off('close', onClientGone);
    };
    req.once('error', (err: NodeJS.ErrnoException) => {
      stop();
      if (clientGone) return reject(new PorticoError('cancelled', 'The client went away; its call was cancelled'));
      const reached = !NOT_REACHED.has(err.code ?? '');
      const error: Unreachable = reached
        ? new PorticoError('owner_lost', 'The gateway that owns this live instance went away during the request; its next use makes the instance again on the gateway that takes it over', { internal: `owner ${address}: ${err.message}` })
        : Object.assign(new PorticoError('owner_lost', 'The gateway that owns this live instance cannot be reached', { internal: `owner ${address}: ${err.message}` }), { unreachable: true });
      reject(error);
    });
    req.end(data);
  });
}

/**
 * Where the live instance of `uuid` lives, for a REST request: local when this gateway owns it
 * (or takes it now: with `claim: false`, when nobody has it), else the request went to its owner
 * with `body` (the parsed body, as the owner should read it) and the owner's answer is the
 * response (set on `ctx`).
 */
export async function atOwner(ctx: Koa.Context, gateway: Gateway, bound: RequestContext, uuid: string, body: unknown, { claim = true } = {}): Promise<Owner> {
  for (let attempt = 1; ; attempt++) {
    const owner = await gateway.ownership.locate(bound, uuid, { claim });
    if (owner.local) return owner;
    let res: http.IncomingMessage;
    try {
      const id = ctx.get('x-request-id');
      const watch = { everyMs: gateway.ownership.leaseMs, still: () => gateway.ownership.stillOwns(bound, uuid, owner.owner) };
      res = await relayToOwner(ctx, owner.address, { ...gateway.ownership.forwardHeaders(bound), ...(id ? { 'x-request-id': id } : {}) }, gateway.ownership.forwardParams(bound), body, watch);
    } catch (err) {
      // Only what the network said counts against the owner (not a cancel, not a local failure).
      if (err instanceof PorticoError && err.code === 'owner_lost') gateway.ownership.unreachable(owner.owner);
      if (!(err as Unreachable).unreachable || attempt >= 3) throw err;
      continue;
    }
    // The owner refused this gateway's credential: the gateways' settings, not the client's fault.
    if (res.statusCode === 401) {
      res.resume();
      throw peerRefused(401);
    }
    // An owner that says instance_moved no longer has it: asked again, once it is known who does.
    const text = res.statusCode === 503 ? await bodyOf(res) : undefined;
    if (text && attempt < 3 && errorCode(text) === 'instance_moved') {
      gateway.ownership.forget(bound, uuid);
      continue;
    }
    ctx.status = res.statusCode ?? 502;
    for (const name of PASSED) {
      const value = res.headers[name];
      if (value !== undefined) ctx.set(name, String(value));
    }
    ctx.body = text ?? res;
    return owner;
  }
}

async function bodyOf(res: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function errorCode(text: Buffer): string | undefined {
  try {
    return (JSON.parse(text.toString('utf8')) as { code?: string }).code;
  } catch {
    return undefined;
  }
}
