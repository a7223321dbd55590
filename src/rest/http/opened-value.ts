// A value too large to hold whole, sent as it is read: each part is read
// into one of two buffers while the other is written to the socket, so an
// answer holds at most 2 × CHUNK bytes whatever the value's size (one
// buffer for a value of one part); those bytes are taken from the node's
// budget of values in flight (http_body_memory_limit), and the buffers are
// kept for the next answers, up to that budget.
//
// Each part is checked before it is sent. A part that fails its checksum
// ends the answer by closing the connection: the client has received fewer
// bytes than Content-Length announced and cannot take what it got for the
// whole value. (A value stored without block checksums, from before they
// existed, is checked as a whole when its last part is read: the parts
// before were sent unchecked, and the connection is closed all the same.)
import type { Context } from 'koa';
import { OpenedValue } from '../../model/value';
import { BodyBudget } from '../body-budget';
import { sniffContentType } from '../content-type';

export const CHUNK = 1024 * 1024;
// What the content type is guessed from: the longest signature sniffed is shorter.
const SNIFF_BYTES = 512;
// Buffers kept for the next answers, up to the budget they were taken
// from: a fresh 1 MiB buffer per answer costs page faults and collections.
const spare: Buffer[] = [];

const takeBuffer = (): Buffer => spare.pop() ?? Buffer.allocUnsafeSlow(CHUNK);
const giveBuffer = (budget: BodyBudget, b: Buffer): void => {
  if ((spare.length + 1) * CHUNK <= budget.limit) spare.push(b);
};

/**
 * Answers with value bytes [start, end] (inclusive) of `v`, the status and
 * headers set on ctx, and the Content-Type guessed from the value's first
 * bytes; the caller closes the reader once this settles. Rejects before
 * anything is sent (503 when the budget has no room, a damaged first part);
 * once the first byte is out, a failure closes the connection and the
 * promise resolves.
 */
export async function sendOpened(
  ctx: Context,
  v: OpenedValue,
  start: number,
  end: number,
  { bodyBudget: budget, sendTimeoutMs }: { bodyBudget: BodyBudget; sendTimeoutMs: number },
): Promise<void> {
  const length = end - start + 1;
  if (ctx.method === 'HEAD') {
    // Koa answers a HEAD with the headers set, Content-Length included, and no body.
    ctx.set('Content-Type', await sniffed(v));
    ctx.length = length;
    return;
  }
  // A value of one part needs one buffer.
  const count = length > CHUNK ? 2 : 1;
  const room = count * Math.min(CHUNK, length);
  if (!(await budget.take(room))) {
    ctx.set('Retry-After', '5');
    ctx.throw(503, `the node holds ${budget.inUse} bytes of values in flight (http_body_memory_limit ${budget.limit}); retry later`);
  }
  const res = ctx.res;
  const buffers = count === 2 ? [takeBuffer(), takeBuffer()] : [takeBuffer()];
  let sending = false;
  try {
    let pos = start;
    let which = 0;
    let piece = await read(v, buffers[which], pos, end);
    ctx.set('Content-Type', start === 0 ? sniffContentType(piece) : await sniffed(v));
    ctx.respond = false;
    res.statusCode = ctx.status;
    res.setHeader('Content-Length', length);
    sending = true;
    const gone = new Promise<never>((_, reject) => res.once('close', () => reject(new Error('connection closed'))));
    gone.catch(() => undefined);
    for (;;) {
      pos += piece.length;
      which = (which + 1) % count;
      const next = pos <= end ? read(v, buffers[which], pos, end) : null;
      next?.catch(() => undefined);
      await Promise.race([write(res, piece, sendTimeoutMs), gone]);
      if (next === null) break;
      piece = await Promise.race([next, gone]);
    }
    res.end();
  } catch (err) {
    // Before the first byte the error is the answer; after it, the
    // connection is closed (storage counted and logged a damaged part; a
    // client that left is no news).
    if (!sending) throw err;
    res.destroy();
  } finally {
    budget.give(room);
    // A buffer may still be read into when the answer failed: not used again then.
    if (!sending || res.writableFinished) for (const b of buffers) giveBuffer(budget, b);
  }
}

// The value's first bytes, for its Content-Type.
async function sniffed(v: OpenedValue): Promise<string> {
  const head = Buffer.allocUnsafe(Math.min(SNIFF_BYTES, v.size));
  await v.reader.read(0, head);
  return sniffContentType(head);
}

async function read(v: OpenedValue, buffer: Buffer, pos: number, end: number): Promise<Buffer> {
  const piece = buffer.subarray(0, Math.min(CHUNK, end + 1 - pos));
  await v.reader.read(pos, piece);
  return piece;
}

// A client that takes nothing for `timeoutMs` would hold its share of the
// budget for as long as it keeps the connection: it is cut off.
function write(res: Context['res'], piece: Buffer, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the client read nothing')), timeoutMs);
    res.write(piece, (err) => {
      clearTimeout(timer);
      if (err) reject(err);
      else resolve();
    });
  });
}
