// Child of bench/http.ts: the ceiling of Oyster's HTTP stack — Koa and
// @koa/router with the same route shapes as the node's data API, answering
// from an in-memory Map (no key parsing, no storage, no middleware). Prints
// its port on stdout once listening. Usage: node http-ceiling.js
import http from 'node:http';
import Koa from 'koa';
import Router from '@koa/router';

const values = new Map<string, Buffer>();
const app = new Koa();
const router = new Router();

router.get('/data/:key', (ctx) => {
  const v = values.get(ctx.params.key);
  if (!v) {
    ctx.status = 404;
    ctx.body = { ok: false, msg: 'KeyNotFound' };
    return;
  }
  ctx.type = 'application/octet-stream';
  ctx.body = v;
});

router.post('/data/:key', async (ctx) => {
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    ctx.req.on('data', (c: Buffer) => chunks.push(c));
    ctx.req.on('end', resolve);
    ctx.req.on('error', reject);
  });
  values.set(ctx.params.key, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
  ctx.status = 201;
  ctx.body = { ok: true, msg: 'Created' };
});

app.use(router.routes());
app.use(router.allowedMethods());

const server = http.createServer(app.callback());
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(server.address() as { port: number }).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
