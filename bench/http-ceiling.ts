// Child of bench/http.ts: the ceiling of Oyster's HTTP stack — Koa and
// @koa/router with the same route shapes as the node's data API, giving the
// same answers (status, body, and the headers the API promises: ETag and
// Last-Modified on GET and on POST's 201, Content-Type on GET) from an
// in-memory Map, with no key parsing, no storage and no middleware. A
// value's validators are made once, when it is written, as a server
// answering from memory would make them. Prints its port on stdout once
// listening. Usage: node http-ceiling.js [--bare] (--bare: no validators,
// the ceiling before the API had them).
import http from 'node:http';
import Koa from 'koa';
import Router from '@koa/router';

interface Held {
  value: Buffer;
  etag: string;
  lastModified: string;
}

const BARE = process.argv.includes('--bare');
const values = new Map<string, Held>();
const app = new Koa();
const router = new Router();
let lastTick = 0;

// A version as Oyster stamps one: seconds, then a microsecond tick that
// never repeats, then the node.
function validators(): { etag: string; lastModified: string } {
  const now = Date.now();
  lastTick = Math.max(lastTick + 1, now * 1000);
  const seconds = Math.floor(now / 1000);
  return { etag: `"${seconds}-${lastTick}-1"`, lastModified: new Date(seconds * 1000).toUTCString() };
}

router.get('/data/:key', (ctx) => {
  const v = values.get(ctx.params.key);
  if (!v) {
    ctx.status = 404;
    ctx.body = { ok: false, msg: 'KeyNotFound' };
    return;
  }
  if (!BARE) {
    ctx.set('ETag', v.etag);
    ctx.set('Last-Modified', v.lastModified);
  }
  ctx.type = 'application/octet-stream';
  ctx.body = v.value;
});

router.post('/data/:key', async (ctx) => {
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    ctx.req.on('data', (c: Buffer) => chunks.push(c));
    ctx.req.on('end', resolve);
    ctx.req.on('error', reject);
  });
  const held = { value: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks), ...validators() };
  values.set(ctx.params.key, held);
  if (!BARE) {
    ctx.set('ETag', held.etag);
    ctx.set('Last-Modified', held.lastModified);
  }
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
