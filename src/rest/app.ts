// The REST application: error bodies, metrics and access log around one
// router per area of the API.
import http from 'node:http';
import Koa from 'koa';
import Router from '@koa/router';
import { Authenticator } from '../auth/authenticator';
import { NodeMetrics } from '../metrics/registry';
import { RestDeps } from './deps';
import { accessLog, accessLogEnabled } from './middleware/access-log';
import { authorize } from './middleware/auth';
import { errorBodies } from './middleware/errors';
import { expectContinue } from './middleware/expect-continue';
import { inOrder } from './middleware/in-order';
import { requestMetrics } from './middleware/request-metrics';
import { alienRoutes } from './routes/alien';
import { dataRoutes } from './routes/data';
import { diskRoutes } from './routes/disks';
import { metricsRoutes } from './routes/metrics';
import { statusRoutes } from './routes/status';
import { vdiskRoutes } from './routes/vdisks';

export function createRestApp(deps: RestDeps, metrics: NodeMetrics, auth: Authenticator): Koa {
  const app = new Koa();
  app.proxy = false;
  app.silent = true; // errors are answered and logged by errorBodies
  app.use(requestMetrics(metrics));
  // A middleware layer costs on every request: the access log only when its lines are written.
  if (accessLogEnabled(deps.log)) app.use(accessLog(deps.log));
  // Outside errorBodies: it sees the answer as it will be sent.
  app.use(expectContinue());
  app.use(errorBodies(deps.log));
  app.use(inOrder());
  // The data API goes first on a router of its own: a data request is
  // matched against its four routes, not against every route of the API.
  // A wrong method on it still ends in 405 below (the match is kept in ctx.matched).
  const data = dataRoutes(deps);
  // Every method Node parses is known: one a route lacks is 405, not 501.
  const api = new Router({ methods: http.METHODS });
  for (const routes of [statusRoutes, vdiskRoutes, diskRoutes, alienRoutes, metricsRoutes]) {
    const r = routes(deps);
    api.use(r.routes());
  }
  if (auth.enabled) app.use(authorize(auth, [data, api]));
  app.use(data.routes());
  app.use(api.routes());
  app.use(api.allowedMethods());
  return app;
}
