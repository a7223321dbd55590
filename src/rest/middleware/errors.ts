// Turns every failure into a StatusExt JSON body with a fitting status, and
// every 4xx/5xx produced downstream (unknown route, wrong method) as well.
import type { Context, Next } from 'koa';
import { ErrorKind, OysterError } from '../../model/errors';
import { Logger } from '../../logging/logger';
import { HttpError, reply } from '../status-ext';

const STATUS_BY_KIND: Record<ErrorKind, number> = {
  KeyNotFound: 404,
  VDiskNotFound: 404,
  NotFound: 404,
  Conflict: 409,
  PearlChangeState: 409,
  InvalidArgument: 400,
  DCIsNotAvailable: 503,
  VDiskIsNotReady: 503,
  HolderTemporaryUnavailable: 503,
  PossibleDiskDisconnection: 503,
  RequestFailedCompletely: 503,
  Failed: 503,
  Timeout: 503,
  Storage: 503,
  NoSpace: 507,
  Unsupported: 501,
  Corruption: 500,
  Internal: 500,
};

export function statusOf(err: unknown): number {
  if (err instanceof HttpError) return err.status;
  if (err instanceof OysterError) return STATUS_BY_KIND[err.kind];
  const s = (err as { status?: unknown; statusCode?: unknown } | null)?.status ?? (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof s === 'number' && s >= 400 && s < 600 ? s : 500;
}

export function errorBodies(log: Logger) {
  const failed = (ctx: Context, err: unknown): void => {
    const status = statusOf(err);
    const msg = err instanceof Error ? err.message : String(err);
    // Unavailability (503) and a full disk (507) are the state of a disk or
    // peer, logged where it changes or rate-limited where it is met.
    if (status >= 500 && status !== 503 && status !== 507) log.error({ method: ctx.method, path: ctx.path, status, err: msg }, 'request failed');
    else log.debug({ method: ctx.method, path: ctx.path, status, err: msg }, 'request refused');
    reply(ctx, status, false, msg);
  };
  // Responses that no route produced (unknown path, wrong method) still get
  // a StatusExt body; one written past Koa, or dropped, is left as it is.
  const done = (ctx: Context): void => {
    if (ctx.respond !== false && ctx.status >= 400 && (ctx.body === undefined || ctx.body === null || typeof ctx.body === 'string')) {
      const msg = typeof ctx.body === 'string' && ctx.body ? ctx.body : ctx.message;
      reply(ctx, ctx.status, false, msg);
    }
  };
  // Not an async function: a promise and a turn of the microtask queue less on every request.
  return function errors(ctx: Context, next: Next): Promise<void> {
    return next().then(
      () => done(ctx),
      (err: unknown) => failed(ctx, err),
    );
  };
}
