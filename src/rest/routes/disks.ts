// /disks/list, /disks/{name}/stop, /disks/{name}/start, /disks/{name}/accept, DELETE /blobs/outdated
import Router from '@koa/router';
import type { Context } from 'koa';
import { Disk } from '../../store/disk';
import { RestDeps } from '../deps';
import { notFound, reply } from '../status-ext';

export function diskRoutes(d: RestDeps): Router {
  const router = new Router();
  const { store } = d;

  router.get('/disks/list', (ctx) => {
    ctx.body = [
      // is_writable (Oyster's): false while the disk is below min_free_space and refuses writes.
      // refused (Oyster's): why the disk's identity keeps it out of service, when it does.
      ...store.disks.map((c) => ({ name: c.name, path: c.options.diskPath, is_active: c.isReady, is_writable: c.writable, ...refused(c) })),
      {
        name: d.layout.alienDiskName,
        path: d.layout.alienRoot.endsWith('/') ? d.layout.alienRoot : `${d.layout.alienRoot}/`,
        is_active: store.alien.isReady,
        is_writable: store.alien.writable,
        ...refused(store.alien),
      },
    ];
  });

  // A disk's name also selects the alien directory when it lives on that disk.
  const disksNamed = (ctx: Context) => {
    const found = store.disksNamed(ctx.params.name);
    if (found.length === 0) throw notFound(`Disk Controller with name '${ctx.params.name}' not found`);
    return found;
  };

  router.post('/disks/:name/stop', async (ctx) => {
    for (const c of disksNamed(ctx)) await c.stop(true);
    reply(ctx, 200, true, 'Disk Controllers are stopped');
  });

  router.post('/disks/:name/start', async (ctx) => {
    for (const c of disksNamed(ctx)) await c.start(true);
    reply(ctx, 200, true, `all disk controllers for disk '${ctx.params.name}' successfully started`);
  });

  // A replaced disk: an empty disk found in place of one this node
  // initialised gets a new identity, and anti-entropy refills it.
  router.post('/disks/:name/accept', async (ctx) => {
    const found = disksNamed(ctx);
    const disk = found.find((c) => !c.alien);
    if (!disk) throw notFound(`no disk named '${ctx.params.name}' on this node (the alien directory is accepted with its disk)`);
    await disk.accept();
    // The alien directory on it has its identity now.
    for (const a of found.filter((c) => c.alien)) await a.start(true);
    reply(ctx, 200, true, `disk '${disk.name}' accepted as a replacement; anti-entropy refills it from the other replicas`);
  });

  router.delete('/blobs/outdated', async (ctx) => {
    const now = Date.now();
    for (const c of [...store.disks, store.alien]) {
      if (!c.isReady) continue;
      // An explicit request does not wait for partitions to be idle.
      for (const v of c.vdisks.all()) await c.use(() => v.admin((ps) => ps.closeOutdatedActiveBlobs(now, 0)));
    }
    reply(ctx, 200, true, 'Successfully removed outdated blobs');
  });

  return router;
}

function refused(disk: Disk): { refused?: { reason: string; message: string } } {
  return disk.refusal ? { refused: { reason: disk.refusal.reason, message: disk.refusal.message } } : {};
}
