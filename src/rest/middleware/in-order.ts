// Requests pipelined on one connection take effect in order: Node parses
// them as they come and hands each to the app at once, so without this a GET
// sent right behind a POST of the same key could be answered before the
// write lands. Node gives a response its connection only once the responses
// before it are done (and so their handlers, which end before their
// responses do): a request whose response has no connection yet waits for
// it, or for the connection to close. The common case, one request at a
// time, costs one property read.
import type { Context, Next } from 'koa';

export function inOrder() {
  return function inOrder(ctx: Context, next: Next): Promise<void> {
    if (ctx.res.socket !== null) return next();
    const connection = ctx.req.socket;
    return new Promise<void>((resolve) => {
      const go = () => {
        ctx.res.off('socket', go);
        connection.off('close', go);
        resolve();
      };
      ctx.res.once('socket', go);
      connection.once('close', go);
    }).then(next);
  };
}
