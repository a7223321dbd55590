// Counts and times every request by its route pattern (not its path, which
// would make one time series per key).
import type { Context, Next } from 'koa';
import { secondsSince } from '../../metrics/hot';
import { NodeMetrics } from '../../metrics/registry';

export function requestMetrics(m: NodeMetrics) {
  return async function metrics(ctx: Context, next: Next): Promise<void> {
    const start = performance.now();
    try {
      await next();
    } finally {
      const route = (ctx as Context & { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      m.restRequests.child(ctx.method, route, statusText(ctx.status)).inc();
      m.restDuration.child(ctx.method, route).observe(secondsSince(start));
    }
  };
}

const STATUS_TEXT: string[] = [];
const statusText = (status: number): string => (STATUS_TEXT[status] ??= String(status));
