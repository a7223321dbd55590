// Counts and times every request by its route pattern (not its path, which
// would make one time series per key).
//
// A request's time starts when the event-loop turn that read it began: the
// node reads every request that arrived while it was busy in one turn and
// handles them one after the other, so under load a request waits for the
// others of its turn — a wait its client sees, and which timing from the
// moment its handler ran would hide. (Time spent before the turn began, in
// the socket while the turn before ran, is not seen from here.)
//
// Not an async function, and the metrics' children resolved once per route:
// this runs on every request.
import type { Context, Next } from 'koa';
import { CounterChild, HistogramChild, secondsSince } from '../../metrics/hot';
import { NodeMetrics } from '../../metrics/registry';

/** The children of one method and route pattern. */
interface RouteMetrics {
  readonly duration: HistogramChild;
  /** By status code. */
  readonly counts: CounterChild[];
}

export function requestMetrics(m: NodeMetrics) {
  const byRoute = new Map<string, Map<string, RouteMetrics>>();
  const metricsOf = (method: string, route: string): RouteMetrics => {
    let methods = byRoute.get(route);
    if (methods === undefined) byRoute.set(route, (methods = new Map()));
    let rm = methods.get(method);
    if (rm === undefined) methods.set(method, (rm = { duration: m.restDuration.child(method, route), counts: [] }));
    return rm;
  };
  const record = (ctx: Context, start: number): void => {
    const method = ctx.req.method ?? 'GET';
    const route = (ctx as Context & { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
    const rm = metricsOf(method, route);
    const status = ctx.res.statusCode;
    (rm.counts[status] ??= m.restRequests.child(method, route, String(status))).inc();
    rm.duration.observe(secondsSince(start));
  };
  return function metrics(ctx: Context, next: Next): Promise<void> {
    const start = turnStart();
    return next().then(
      () => record(ctx, start),
      (err: unknown) => {
        record(ctx, start);
        throw err;
      },
    );
  };
}

// The start of the current event-loop turn, read by its first request; the
// check phase that ends the turn forgets it.
let started = -1;
const endTurn = () => (started = -1);

function turnStart(): number {
  if (started < 0) {
    started = performance.now();
    setImmediate(endTurn);
  }
  return started;
}
