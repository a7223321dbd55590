// GET /alien, GET /alien/dir, POST /alien/detach (used by bob-tools' alien recovery)
import Router from '@koa/router';
import { RestDeps } from '../deps';
import { dirTree } from '../json';
import { reply } from '../status-ext';

export function alienRoutes(d: RestDeps): Router {
  const router = new Router();
  const alien = d.store.alien;

  router.get('/alien', (ctx) => {
    ctx.type = 'text/plain';
    ctx.body = 'alien';
  });

  router.get('/alien/dir', async (ctx) => {
    ctx.body = await dirTree(d.layout.alienRoot);
  });

  // Closes every alien partition so its files can be copied; the next alien
  // write reopens what it needs.
  router.post('/alien/detach', async (ctx) => {
    if (alien.isReady) {
      for (const { vdisk } of alien.vdisks.aliens()) await alien.use(() => vdisk.admin((ps) => ps.detachAll()));
    }
    reply(ctx, 200, true, '');
  });

  return router;
}
