// GET, HEAD, POST, DELETE /data/{key}: the data API, coordinated by this node.
import Router from '@koa/router';
import type { Context } from 'koa';
import { errors } from '../../model/errors';
import { KeyError, keyToHex, parseRestKey } from '../../keys/key';
import { RestDeps } from '../deps';
import { sniffContentType } from '../content-type';
import { readBody } from '../middleware/body';
import { badRequest, reply } from '../status-ext';

export function dataRoutes(d: RestDeps): Router {
  const router = new Router();

  const keyOf = (ctx: Context): Buffer => {
    try {
      return parseRestKey(ctx.params.key, d.keySize);
    } catch (err) {
      if (err instanceof KeyError) throw badRequest(err.message);
      throw err;
    }
  };
  // Coordinated like GET's: 503 when no replica of the key's vdisk could answer, never 404.
  router.head('/data/:key', async (ctx) => {
    const key = keyOf(ctx);
    const [exists] = await d.data.exist([key]);
    if (!exists) throw errors.keyNotFound(keyToHex(key));
    ctx.status = 200;
  });

  router.get('/data/:key', async (ctx) => {
    const key = keyOf(ctx);
    const r = await d.data.get(key);
    if (!r) throw errors.keyNotFound(keyToHex(key));
    // A full MIME type already: set as it is, without Koa's lookup of short names.
    ctx.set('Content-Type', sniffContentType(r.value));
    ctx.body = r.value;
  });

  router.post('/data/:key', async (ctx) => {
    const key = keyOf(ctx);
    const value = await readBody(ctx, d.bodyLimit);
    await d.data.put(key, value);
    reply(ctx, 201, true, 'Created');
  });

  router.delete('/data/:key', async (ctx) => {
    await d.data.delete(keyOf(ctx));
    reply(ctx, 200, true, 'Done');
  });

  return router;
}
