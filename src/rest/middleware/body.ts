// Reads a raw request body up to a limit, within the node's budget of body
// memory (../body-budget.ts). A body announced (Content-Length) or found to
// be larger than the limit is refused with 413 without being buffered whole;
// one the budget has no room for within its wait is refused with 503 and
// Retry-After, unread.
import type { Context } from 'koa';
import { BodyBudget, SMALL_BODY } from '../body-budget';
import { HttpError } from '../status-ext';
import { askForBody, bodyHeld } from './expect-continue';

// After a 413 the rest of the body is read and dropped, up to this much:
// a client still busy sending would otherwise meet a closed connection and
// report that (EPIPE, ECONNRESET) instead of the answer. A client that keeps
// sending beyond it is cut off.
const DISCARD_LIMIT = 16 * 1024 * 1024;
const RETRY_AFTER_SECONDS = 5;

export async function readBody(ctx: Context, limit: number, budget: BodyBudget): Promise<Buffer> {
  const declared = ctx.request.length;
  if (declared !== undefined && declared > limit) {
    discardRest(ctx, declared);
    throw new HttpError(413, `request body of ${declared} bytes exceeds the limit of ${limit} bytes`);
  }
  const held = new Held(ctx, budget);
  if (declared !== undefined && declared >= SMALL_BODY && !(await held.take(declared))) throw busy(ctx, budget);
  return collect(ctx, limit, declared, held, budget);
}

/** The budget a request holds, given back once its response is done or its connection gone. */
export class Held {
  private bytes = 0;

  constructor(
    private readonly ctx: Context,
    private readonly budget: BodyBudget,
  ) {}

  async take(bytes: number): Promise<boolean> {
    if (!(await this.budget.take(bytes))) return false;
    if (this.bytes === 0) this.ctx.res.once('close', () => this.budget.give(this.bytes));
    this.bytes += bytes;
    return true;
  }
}

export function busy(ctx: Context, budget: BodyBudget): HttpError {
  ctx.set('Retry-After', String(RETRY_AFTER_SECONDS));
  ctx.set('Connection', 'close'); // the body stays unread
  return new HttpError(503, `the node holds ${budget.inUse} bytes of request bodies (http_body_memory_limit ${budget.limit}); retry later`);
}

export const incomplete = (): HttpError => new HttpError(400, 'request body incomplete: the client closed the connection');

// Stream events rather than an async iterator: this is on the path of every
// write, and the iterator costs several times more per request.
function collect(ctx: Context, limit: number, declared: number | undefined, held: Held, budget: BodyBudget): Promise<Buffer> {
  const req = ctx.req;
  if (req.destroyed) return Promise.reject(incomplete());
  askForBody(req, ctx.res);
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // A body without Content-Length takes budget as it grows past SMALL_BODY.
    let covered = declared ?? SMALL_BODY;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        done();
        discardRest(ctx);
        reject(new HttpError(413, `request body exceeds the limit of ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
      if (size <= covered) return;
      const more = Math.max(size - covered, SMALL_BODY);
      covered += more;
      req.pause();
      void held.take(more).then((ok) => {
        if (ok) {
          req.resume();
          return;
        }
        done();
        reject(busy(ctx, budget));
      });
    };
    const onEnd = () => {
      done();
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    };
    // The client went away mid-body: its fault, and nothing is stored.
    const onError = (err: NodeJS.ErrnoException) => {
      done();
      reject(err.code === 'ECONNRESET' ? incomplete() : err);
    };
    const onClose = () => {
      done();
      reject(incomplete());
    };
    const done = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** Drops the unread rest of a refused body while the answer goes out; `declared` is its announced length. */
export function discardRest(ctx: Context, declared?: number): void {
  const req = ctx.req;
  // A body held back is never asked for: expectContinue closes the connection.
  if (bodyHeld(req)) return;
  if (declared !== undefined && declared > DISCARD_LIMIT) {
    ctx.set('Connection', 'close'); // not worth reading: Node closes the connection after the answer
    return;
  }
  let left = DISCARD_LIMIT;
  req.on('data', (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) req.socket.destroy();
  });
  req.resume();
}
