/** /v1/python: the Python client, installable with pip from the gateway itself. */
import type { TLSSocket } from 'node:tls';
import type Koa from 'koa';
import { z } from '../../contract/zod.js';
import type { Gateway } from '../../service/gateway.js';
import { clientView, trustedProxies } from '../forwarded.js';
import { route } from '../route.js';

const PythonIndex = z
  .object({
    version: z.string().describe("The package's version: the gateway's own (GET /v1/health)."),
    wheels: z.array(
      z.object({
        filename: z.string().describe('portico-<version>-py3-none-any.whl'),
        url: z.string().describe('Where pip gets it, on this gateway as the request reached it.'),
        sha256: z.string().describe('Hex SHA-256 of the wheel; the same for a version wherever it is built.'),
        size: z.number().int(),
      }),
    ),
    pip: z.string().describe('The command that installs it: `pip install <url>` (in a notebook, `%pip install <url>`).'),
  })
  .openapi('PythonIndex');

const WheelParams = z.object({ filename: z.string().min(1).max(200) });

export function pythonRoutes(gateway: Gateway) {
  const trusted = trustedProxies(gateway.options.trustedProxies);
  /** This gateway's base URL as the client reached it (through a trusted proxy: as the proxy says). */
  const baseOf = (ctx: Koa.Context) => {
    const { host, proto } = clientView(ctx.req, trusted);
    return `${proto ?? ((ctx.req.socket as TLSSocket).encrypted ? 'https' : 'http')}://${host}`;
  };
  return [
    route({
      method: 'get',
      path: '/v1/python',
      tag: 'meta',
      summary: 'The Python client, for pip',
      description:
        "The wheel of Portico's Python package (`portico`, with `portico.client`; standard library only) that pip installs from this gateway: `pip install <url>`, or `%pip install <url>` in a notebook. Its version is the gateway's.",
      response: PythonIndex,
      errors: [401, 503],
      handler: async (ctx) => gateway.pythonPackage.index(baseOf(ctx)),
    }),
    route({
      method: 'get',
      path: '/v1/python/{filename}',
      tag: 'meta',
      summary: 'The Python client wheel',
      params: WheelParams,
      response: z.string().describe('The wheel (a zip archive).'),
      responseType: 'application/octet-stream',
      errors: [401, 404, 503],
      handler: async (ctx, { params }) => {
        const wheel = await gateway.pythonPackage.file(params.filename);
        ctx.type = 'application/octet-stream';
        ctx.set('Content-Disposition', `attachment; filename="${wheel.filename}"`);
        ctx.set('ETag', `"${wheel.sha256}"`);
        ctx.body = wheel.bytes;
      },
    }),
  ];
}
