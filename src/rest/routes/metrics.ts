// GET /metrics: Prometheus text exposition, or bob's JSON to a client that
// prefers it (Accept: application/json); node.yaml metrics.rest_format: bob
// makes JSON the answer to clients that name neither, as bob's tools do,
// while Prometheus, which always names its formats, still gets text.
// GET /metrics/bob: bob's JSON whatever the client accepts.
import Router from '@koa/router';
import type { Context } from 'koa';
import { MetricsFormat } from '../../config/node-config';
import { RestDeps } from '../deps';

export function metricsRoutes(d: RestDeps): Router {
  const router = new Router();
  const bob = async (ctx: Context) => {
    ctx.body = await d.bobMetrics();
  };
  router.get('/metrics', async (ctx) => {
    ctx.vary('Accept');
    if (preferredFormat(ctx.get('accept'), d.metricsFormat) === 'bob') return bob(ctx);
    ctx.type = d.registry.contentType;
    ctx.body = await d.registry.metrics();
  });
  router.get('/metrics/bob', bob);
  return router;
}

/**
 * The format an Accept header prefers: Prometheus text (text/plain or
 * application/openmetrics-text, whatever their parameters) or bob's JSON
 * (application/json). Each type's quality is that of the most specific range
 * matching it; a tie (no header, or only the full wildcard) goes to `fallback`.
 */
export function preferredFormat(accept: string, fallback: MetricsFormat): MetricsFormat {
  const ranges = (accept || '*/*').split(',').map((range) => {
    const [type, ...params] = range.split(';').map((p) => p.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    return { type, q: q === undefined ? 1 : Number(q.slice(2)) || 0 };
  });
  const quality = (mediaType: string) => {
    const major = `${mediaType.split('/')[0]}/*`;
    const match = ranges.find((r) => r.type === mediaType) ?? ranges.find((r) => r.type === major) ?? ranges.find((r) => r.type === '*/*');
    return match?.q ?? 0;
  };
  const text = Math.max(quality('text/plain'), quality('application/openmetrics-text'));
  const json = quality('application/json');
  return text === json ? fallback : json > text ? 'bob' : 'prometheus';
}
