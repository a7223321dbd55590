// Expect: 100-continue (RFC 9110 §10.1.1): a client that sends it holds its
// body back until the node asks for it. Node's HTTP server would ask at
// once, before the app has looked at the request; here the body is asked
// for where it is about to be read (askForBody), so a request refused first
// (401, 404, 412, 413, 503) costs its client no upload. Such a request's
// connection is closed after the answer: the client may still send the body
// it held back, or send its next request in its place, and neither can be
// told from the other.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context, Next } from 'koa';

const held = new WeakSet<IncomingMessage>();

/** For the server's 'checkContinue' event: the request's body is asked for by askForBody, not now. */
export function holdBody(req: IncomingMessage): void {
  held.add(req);
}

/** Whether the request's client still holds its body back (Expect: 100-continue, not yet asked). */
export function bodyHeld(req: IncomingMessage): boolean {
  return held.has(req);
}

/** Asks a client holding its body back for it (100 Continue); nothing for any other request. Call just before reading a body. */
export function askForBody(req: IncomingMessage, res: ServerResponse): void {
  if (held.delete(req) && !res.headersSent) res.writeContinue();
}

export function expectContinue() {
  // Not an async function: most requests pass with one lookup.
  return function expectContinue(ctx: Context, next: Next): Promise<void> {
    if (!held.has(ctx.req)) return next();
    return next().finally(() => {
      if (held.has(ctx.req) && !ctx.res.headersSent) ctx.set('Connection', 'close');
    });
  };
}
