// GET (and HEAD), POST, DELETE /data/{key}: the data API, coordinated by
// this node, with HTTP's validators, conditional requests and ranges
// (src/rest/http/).
import Router from '@koa/router';
import type { Context } from 'koa';
import { errors } from '../../model/errors';
import { StoredValue, Version } from '../../model/version';
import { KeyError, keyToHex, parseRestKey } from '../../keys/key';
import { RestDeps } from '../deps';
import { requestValue } from '../middleware/streamed-body';
import { isOpened, OpenedValue } from '../../model/value';
import { describeOpened, sendOpened } from '../http/opened-value';
import { evaluate, hasPreconditions } from '../http/preconditions';
import { requestedRange } from '../http/range';
import { representationOf } from '../http/representation';
import { etagOf, httpDateOf } from '../http/validators';
import { HttpError, badRequest, reply } from '../status-ext';

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

  // A conditional write reads the newest value first (absence is no error here: it is what If-Match checks).
  const checkPreconditions = async (ctx: Context, key: Buffer): Promise<void> => {
    if (!hasPreconditions(ctx)) return;
    const verdict = evaluate(ctx, await d.data.get(key), false);
    if (verdict !== null) throw new HttpError(412, `Precondition Failed: ${verdict.why}`);
  };

  // HEAD takes this route too (the router adds it to GET's): the same
  // answer, its body left out by Koa, which keeps its Content-Length.
  // Coordinated: 503 when no replica of the key's vdisk could answer, never 404.
  // A value read from memory is answered at once, without a promise.
  router.get('/data/:key', (ctx) => {
    const key = keyOf(ctx);
    const r = d.data.get(key, true);
    if (!(r instanceof Promise)) return isOpened(r) ? sendLarge(ctx, r) : sendValue(ctx, key, r);
    return r.then((v) => (isOpened(v) ? sendLarge(ctx, v) : sendValue(ctx, key, v)));
  });

  // A value too large to hold whole, read and sent in parts.
  const sendLarge = async (ctx: Context, v: OpenedValue): Promise<void> => {
    describeOpened(ctx, v);
    const verdict = hasPreconditions(ctx) ? evaluate(ctx, v, true) : null;
    const range = verdict === null ? requestedRange(ctx, v.version, v.size) : null;
    if (verdict !== null || range?.kind === 'unsatisfiable') {
      v.reader.close();
      if (verdict?.status === 412) throw new HttpError(412, `Precondition Failed: ${verdict.why}`);
      if (verdict?.status === 304) {
        ctx.status = 304;
        return;
      }
      return unsatisfiable(ctx, v.size);
    }
    if (range?.kind === 'part') {
      ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${v.size}`);
      ctx.status = 206;
      return sendOpened(ctx, v, range.start, range.end, d);
    }
    ctx.status = 200;
    return sendOpened(ctx, v, 0, v.size - 1, d);
  };

  router.post('/data/:key', async (ctx) => {
    const key = keyOf(ctx);
    const value = await requestValue(ctx, d.bodyLimit, d.bodyBudget);
    await checkPreconditions(ctx, key);
    setValidators(ctx, await d.data.put(key, value));
    reply(ctx, 201, true, 'Created');
  });

  router.delete('/data/:key', async (ctx) => {
    const key = keyOf(ctx);
    await checkPreconditions(ctx, key);
    await d.data.delete(key);
    reply(ctx, 200, true, 'Done');
  });

  return router;
}

function sendValue(ctx: Context, key: Buffer, r: StoredValue | null): void {
  if (!r) throw errors.keyNotFound(keyToHex(key));
  const rep = representationOf(r);
  ctx.set('ETag', rep.etag);
  if (rep.lastModified !== undefined) ctx.set('Last-Modified', rep.lastModified);
  // Where download tools look for it; on every GET it would cost more than it tells.
  if (ctx.method === 'HEAD') ctx.set('Accept-Ranges', 'bytes');
  // A full MIME type already: set as it is, without Koa's lookup of short names.
  ctx.set('Content-Type', rep.contentType);
  const verdict = hasPreconditions(ctx) ? evaluate(ctx, r, true) : null;
  if (verdict?.status === 412) throw new HttpError(412, `Precondition Failed: ${verdict.why}`);
  if (verdict?.status === 304) {
    ctx.status = 304;
    return;
  }
  sendRange(ctx, r);
}

function unsatisfiable(ctx: Context, size: number): void {
  ctx.set('Content-Range', `bytes */${size}`);
  reply(ctx, 416, false, `Range Not Satisfiable: the value has ${size} bytes`);
}

function setValidators(ctx: Context, v: Version): void {
  ctx.set('ETag', etagOf(v));
  const modified = httpDateOf(v);
  if (modified !== undefined) ctx.set('Last-Modified', modified);
}

function sendRange(ctx: Context, r: StoredValue): void {
  const size = r.value.length;
  const range = requestedRange(ctx, r.version, size);
  if (range.kind === 'whole') {
    ctx.body = r.value;
    return;
  }
  if (range.kind === 'unsatisfiable') return unsatisfiable(ctx, size);
  ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
  ctx.body = r.value.subarray(range.start, range.end + 1);
  ctx.status = 206;
}
