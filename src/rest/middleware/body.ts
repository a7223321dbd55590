// Reads a raw request body up to a limit. A body announced (Content-Length)
// or found to be larger is refused with 413 without being buffered whole.
import type { Context } from 'koa';
import { HttpError } from '../status-ext';

// After a 413 the rest of the body is read and dropped, up to this much:
// a client still busy sending would otherwise meet a closed connection and
// report that (EPIPE, ECONNRESET) instead of the answer. A client that keeps
// sending beyond it is cut off.
const DISCARD_LIMIT = 16 * 1024 * 1024;

export function readBody(ctx: Context, limit: number): Promise<Buffer> {
  const declared = ctx.request.length;
  if (declared !== undefined && declared > limit) {
    discardRest(ctx, declared);
    return Promise.reject(new HttpError(413, `request body of ${declared} bytes exceeds the limit of ${limit} bytes`));
  }
  // Stream events rather than an async iterator: this is on the path of every
  // write, and the iterator costs several times more per request.
  const req = ctx.req;
  const incomplete = () => new HttpError(400, 'request body incomplete: the client closed the connection');
  if (req.destroyed) return Promise.reject(incomplete());
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      done();
      discardRest(ctx);
      reject(new HttpError(413, `request body exceeds the limit of ${limit} bytes`));
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
function discardRest(ctx: Context, declared?: number): void {
  const req = ctx.req;
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
