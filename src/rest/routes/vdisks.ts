// /vdisks...: vdisk descriptions, records count, partitions (list, attach,
// detach, delete), remount, local replica directories.
import Router from '@koa/router';
import type { Context } from 'koa';
import { DiskController } from '../../backend/disk-controller';
import { errors } from '../../backend/errors';
import { Group } from '../../backend/group';
import { RestDeps } from '../deps';
import { dirTree, vdiskJson } from '../json';
import { timestampParam, vdiskIdParam } from '../params';
import { badRequest, notFound, reply } from '../status-ext';

export function vdiskRoutes(d: RestDeps): Router {
  const router = new Router();
  const { topology, backend } = d;
  const self = topology.self.name;

  const vdiskOf = (ctx: Context) => {
    const id = vdiskIdParam(ctx.params.id);
    const v = topology.vdisk(id);
    if (!v) throw errors.vdiskNotFound(id);
    return v;
  };

  // The vdisk's replica on this node (the first, as bob does when a node holds several).
  const localReplica = (ctx: Context): { id: number; disk: DiskController; group: Group } => {
    const v = vdiskOf(ctx);
    const r = topology.localReplicas(v.id)[0];
    if (!r) throw notFound(`vdisk ${v.id} has no replica on node ${self}`);
    const disk = backend.disk(r.disk)!;
    const group = disk.isReady ? disk.group(v.id) : undefined;
    if (!group) throw errors.diskNotReady(disk.name);
    return { id: v.id, disk, group };
  };

  router.get('/vdisks', (ctx) => {
    ctx.body = topology.vdisks.map((v) => vdiskJson(v));
  });

  router.get('/vdisks/:id', (ctx) => {
    ctx.body = vdiskJson(vdiskOf(ctx));
  });

  // Partition listings go through partitionInfo: a vdisk being remounted
  // answers 503 rather than looking empty for a moment.
  router.get('/vdisks/:id/records/count', async (ctx) => {
    const { disk, group } = localReplica(ctx);
    ctx.body = (await disk.use(() => group.partitionInfo())).reduce((n, p) => n + p.recordsCount, 0);
  });

  router.get('/vdisks/:id/partitions', async (ctx) => {
    const { id, disk, group } = localReplica(ctx);
    const partitions = (await disk.use(() => group.partitionInfo())).map((p) => p.name);
    ctx.body = { vdisk_id: id, node_name: self, disk_name: disk.name, partitions };
  });

  router.get('/vdisks/:id/partitions/:partition', async (ctx) => {
    const { id, disk, group } = localReplica(ctx);
    const p = (await disk.use(() => group.partitionInfo())).find((i) => i.name === ctx.params.partition);
    if (!p) throw notFound(`partition with id: ${ctx.params.partition} in vdisk ${id} not found`);
    ctx.body = { vdisk_id: id, node_name: self, disk_name: disk.name, timestamp: p.start, records_count: p.recordsCount };
  });

  const changeState = async (ctx: Context) => {
    const { id, disk, group } = localReplica(ctx);
    const action = ctx.params.action;
    if (action !== 'attach' && action !== 'detach') throw badRequest(`unknown action ${JSON.stringify(action)}: expected attach or detach`);
    const ts = timestampParam(ctx.params.ts);
    if (ts === null) throw notFound(`partition with timestamp ${ctx.params.ts} not found on vdisk ${id}`);
    await disk.use(async () => {
      if (action === 'attach') await group.attach(ts);
      else await group.detach(ts, nowSeconds());
    });
    reply(ctx, 200, true, `partitions with timestamp ${ts} on vdisk ${id} is successfully ${action === 'attach' ? 'Attached' : 'Detached'}`);
  };
  // bob serves POST; its OpenAPI document said PUT for years: both work.
  router.post('/vdisks/:id/partitions/by_timestamp/:ts/:action', changeState);
  router.put('/vdisks/:id/partitions/by_timestamp/:ts/:action', changeState);

  router.delete('/vdisks/:id/partitions/by_timestamp/:ts', async (ctx) => {
    const { id, disk, group } = localReplica(ctx);
    const ts = timestampParam(ctx.params.ts);
    if (ts === null) throw notFound(`partition with timestamp ${ctx.params.ts} not found on vdisk ${id}`);
    const removed = await disk.use(() => group.drop(ts, nowSeconds()));
    reply(ctx, 200, true, removed.map((n) => `partition ${n} deleted with timestamp ${ts}`).join('\n'));
  });

  router.post('/vdisks/:id/remount', async (ctx) => {
    const { id, disk, group } = localReplica(ctx);
    await disk.use(() => group.remount());
    reply(ctx, 200, true, `vdisk ${id} successfully restarted`);
  });

  router.get('/vdisks/:id/replicas/local/dirs', async (ctx) => {
    const v = vdiskOf(ctx);
    const local = topology.localReplicas(v.id);
    if (local.length === 0) throw notFound(`vdisk ${v.id} has no replica on node ${self}`);
    ctx.body = await Promise.all(local.map((r) => dirTree(r.path)));
  });

  return router;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
