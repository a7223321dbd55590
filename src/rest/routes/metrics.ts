// GET /metrics: Prometheus text exposition.
import Router from '@koa/router';
import { RestDeps } from '../deps';

export function metricsRoutes(d: RestDeps): Router {
  const router = new Router();
  router.get('/metrics', async (ctx) => {
    ctx.type = d.registry.contentType;
    ctx.body = await d.registry.metrics();
  });
  return router;
}
