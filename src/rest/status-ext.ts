// StatusExt: bob's acknowledgement and error body {"ok": bool, "msg": string},
// sent as real JSON (bob hand-formats it without escaping).
import type { Context } from 'koa';

export interface StatusExt {
  ok: boolean;
  msg: string;
}

export function reply(ctx: Context, status: number, ok: boolean, msg: string): void {
  ctx.status = status;
  ctx.body = { ok, msg } satisfies StatusExt;
}

/** An error with the HTTP status it should produce; thrown by route handlers. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const badRequest = (msg: string) => new HttpError(400, msg);
export const notFound = (msg: string) => new HttpError(404, msg);
