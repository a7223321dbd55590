// Counts and times every request by its route pattern (not its path, which
// would make one time series per key).
import type { Context, Next } from 'koa';
import { NodeMetrics } from '../../metrics/registry';

export function requestMetrics(m: NodeMetrics) {
  return async function metrics(ctx: Context, next: Next): Promise<void> {
    const start = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const route = (ctx as Context & { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      m.restRequests.inc({ method: ctx.method, route, status: String(ctx.status) });
      m.restDuration.observe({ method: ctx.method, route }, Number(process.hrtime.bigint() - start) / 1e9);
    }
  };
}
