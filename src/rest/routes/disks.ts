// /disks/list, /disks/{name}/stop, /disks/{name}/start, DELETE /blobs/outdated
import Router from '@koa/router';
import type { Context } from 'koa';
import { RestDeps } from '../deps';
import { notFound, reply } from '../status-ext';

export function diskRoutes(d: RestDeps): Router {
  const router = new Router();
  const { backend } = d;

  router.get('/disks/list', (ctx) => {
    ctx.body = [
      ...backend.disks.map((c) => ({ name: c.name, path: c.options.diskPath, is_active: c.isReady })),
      { name: d.layout.alienDiskName, path: d.layout.alienRoot.endsWith('/') ? d.layout.alienRoot : `${d.layout.alienRoot}/`, is_active: backend.alien.isReady },
    ];
  });

  // A disk's name also selects the alien controller when the alien directory lives on it.
  const controllers = (ctx: Context) => {
    const found = backend.controllersNamed(ctx.params.name);
    if (found.length === 0) throw notFound(`Disk Controller with name '${ctx.params.name}' not found`);
    return found;
  };

  router.post('/disks/:name/stop', async (ctx) => {
    for (const c of controllers(ctx)) await c.stop(true);
    reply(ctx, 200, true, 'Disk Controllers are stopped');
  });

  router.post('/disks/:name/start', async (ctx) => {
    for (const c of controllers(ctx)) await c.start(true);
    reply(ctx, 200, true, `all disk controllers for disk '${ctx.params.name}' successfully started`);
  });

  router.delete('/blobs/outdated', async (ctx) => {
    const now = Date.now();
    for (const c of [...backend.disks, backend.alien]) {
      if (!c.isReady) continue;
      // An explicit request does not wait for partitions to be idle.
      for (const g of c.allGroups()) await c.use(() => g.closeOutdatedActiveBlobs(now, 0));
    }
    reply(ctx, 200, true, 'Successfully removed outdated blobs');
  });

  return router;
}
