// Floor for REST calls: a raw Node `http` server in its own process (no Koa, no gateway, no Python)
// that reads a small JSON body and answers a small JSON result, as /v1/interfaces/call does.
import http from 'node:http';

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const { args } = JSON.parse(Buffer.concat(chunks).toString() || '{}');
    const body = JSON.stringify({ result: args?.[0] ?? null });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
