// GET (and HEAD), POST, DELETE /data/{key}: the data API, coordinated by
// this node, with HTTP's validators, conditional requests and ranges
// (src/rest/http/).
import Router from '@koa/router';
import type { Context } from 'koa';
import { errors } from '../../model/errors';
import { StoredValue, Version } from '../../model/version';
import { KeyError, keyToHex, parseRestKey } from '../../keys/key';
import { RestDeps } from '../deps';
import { bodyHeld } from '../middleware/expect-continue';
import { requestValue } from '../middleware/streamed-body';
import { isOpened, OpenedValue } from '../../model/value';
import { sendOpened } from '../http/opened-value';
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

  // A value too large to hold whole, read and sent in parts; its reader
  // is closed whatever the answer.
  const sendLarge = async (ctx: Context, v: OpenedValue): Promise<void> => {
    setValidators(ctx, v.version);
    try {
      await answerRead(ctx, v, v.size, (start, end) => sendOpened(ctx, v, start, end, d));
    } finally {
      v.reader.close();
    }
  };

  router.post('/data/:key', async (ctx) => {
    const key = keyOf(ctx);
    // A client holding its body back until asked (Expect: 100-continue) is
    // spared the upload when the write would fail; the check after the body
    // arrived is the one that counts, closest to the write.
    if (bodyHeld(ctx.req)) await checkPreconditions(ctx, key);
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
  // A full MIME type already: set as it is, without Koa's lookup of short names.
  ctx.set('Content-Type', rep.contentType);
  const size = r.value.length;
  answerRead(ctx, r, size, (start, end) => {
    ctx.body = start === 0 && end === size - 1 ? r.value : r.value.subarray(start, end + 1);
  });
}

/**
 * The answer to a GET or HEAD of a value of `size` bytes at `current`'s
 * version, its validators set: 412 or 304 as its preconditions say, 416 for
 * a range past its end, else 200 or 206 with the bytes [start, end] that
 * `send` sends.
 */
function answerRead<R>(ctx: Context, current: { version: Version }, size: number, send: (start: number, end: number) => R): R | undefined {
  // Where download tools look for it; on every GET it would cost more than it tells.
  if (ctx.method === 'HEAD') ctx.set('Accept-Ranges', 'bytes');
  const verdict = hasPreconditions(ctx) ? evaluate(ctx, current, true) : null;
  if (verdict?.status === 412) throw new HttpError(412, `Precondition Failed: ${verdict.why}`);
  if (verdict?.status === 304) {
    ctx.status = 304;
    return undefined;
  }
  const range = requestedRange(ctx, current.version, size);
  if (range.kind === 'unsatisfiable') {
    unsatisfiable(ctx, size);
    return undefined;
  }
  if (range.kind === 'whole') {
    ctx.status = 200;
    return send(0, size - 1);
  }
  ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
  ctx.status = 206;
  return send(range.start, range.end);
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
