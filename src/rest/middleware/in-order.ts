// Requests pipelined on one connection take effect in order: Node parses
// them as they come and hands each to the app at once, so without this a GET
// sent right behind a POST of the same key could be answered before the
// write lands. A request waits only while an earlier one on its connection
// is still in the app; the common case (one request at a time) allocates
// nothing.
import type { Socket } from 'node:net';
import type { Context, Next } from 'koa';

const queue = Symbol('oyster.inOrder');

interface Pipeline {
  busy: boolean;
  waiting: Array<() => void>;
}

type QueuedSocket = Socket & { [queue]?: Pipeline };

export function inOrder() {
  return async function inOrder(ctx: Context, next: Next): Promise<void> {
    const socket = ctx.req.socket as QueuedSocket;
    let p = socket[queue];
    if (p === undefined) p = socket[queue] = { busy: false, waiting: [] };
    if (p.busy) await new Promise<void>((resolve) => p!.waiting.push(resolve));
    p.busy = true;
    try {
      await next();
    } finally {
      const wake = p.waiting.shift();
      if (wake) wake();
      else p.busy = false;
    }
  };
}
