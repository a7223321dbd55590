// Requests pipelined on one connection take effect in order: Node parses
// them as they come and hands each to the app at once, so without this a GET
// sent right behind a POST of the same key could be answered before the
// write lands. Node gives a response its connection only once the responses
// before it are done (and so their handlers, which end before their
// responses do): a request whose response has no connection yet waits for
// it, or for the connection to close. The common case, one request at a
// time, costs one property read.
//
// A waiting request holds its request, response and context (a few KB).
// Node stops reading a connection whose answers' bytes pile up, but a large
// value goes out past Node's stream (sendfile), so a client that pipelined
// GETs of one and read nothing had Node parse them as fast as they came:
// 127,000 of them on one connection took 170 MB. So once MAX_WAITING
// requests wait on a connection it is paused the way Node pauses it
// (`socket._paused`: its parser stops after the bytes of the read at hand),
// and it is resumed once half of them went on. A connection that closes
// drops the requests still waiting on it: none was acknowledged, and nobody
// would see their answers (the metrics count them with nginx's 499, "client
// closed request").
import type { Socket } from 'node:net';
import type { Context, Next } from 'koa';

const MAX_WAITING = 16;

const waiting = Symbol('requests waiting on the connection');

// What of Node's HTTP server this relies on; without it (a server that
// differs) a connection is never paused here.
interface HttpSocket extends Socket {
  _paused?: boolean;
  parser?: { resume(): void } | null;
  [waiting]?: number;
}

export function inOrder() {
  return function inOrder(ctx: Context, next: Next): Promise<void> {
    if (ctx.res.socket !== null) return next();
    const connection = ctx.req.socket as HttpSocket;
    const count = (connection[waiting] ?? 0) + 1;
    connection[waiting] = count;
    if (count > MAX_WAITING && connection._paused === false) {
      connection._paused = true;
      connection.pause();
    }
    return new Promise<boolean>((resolve) => {
      const go = (served: boolean) => () => {
        ctx.res.off('socket', toServe);
        connection.off('close', toDrop);
        resolve(served);
      };
      const toServe = go(true);
      const toDrop = go(false);
      ctx.res.once('socket', toServe);
      connection.once('close', toDrop);
    }).then((served) => {
      const left = connection[waiting]! - 1;
      connection[waiting] = left;
      if (left <= MAX_WAITING / 2 && connection._paused === true && !connection.destroyed) {
        connection._paused = false;
        connection.parser?.resume();
        connection.resume();
      }
      if (served) return next();
      ctx.respond = false;
      ctx.res.statusCode = 499;
    });
  };
}
