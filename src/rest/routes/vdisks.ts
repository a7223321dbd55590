// /vdisks...: vdisk descriptions, records count, partitions (list, attach,
// detach, delete), remount, local replica directories.
import Router from '@koa/router';
import type { Context } from 'koa';
import { errors } from '../../model/errors';
import { LocalReplica } from '../../store/place';
import { RestDeps } from '../deps';
import { dirTree, vdiskJson } from '../json';
import { timestampParam, vdiskIdParam } from '../params';
import { badRequest, notFound, reply } from '../status-ext';

export function vdiskRoutes(d: RestDeps): Router {
  const router = new Router();
  const { topology, store } = d;
  const self = topology.self.name;

  const vdiskOf = (ctx: Context) => {
    const id = vdiskIdParam(ctx.params.id);
    const v = topology.vdisk(id);
    if (!v) throw errors.vdiskNotFound(id);
    return v;
  };

  // The vdisk's replica on this node (the first, as bob does when a node holds several).
  const localReplica = (ctx: Context): LocalReplica => {
    const v = vdiskOf(ctx);
    const r = store.localReplicas(v.id)[0];
    if (!r) throw notFound(`vdisk ${v.id} has no replica on node ${self}`);
    return r;
  };

  router.get('/vdisks', (ctx) => {
    ctx.body = topology.vdisks.map((v) => vdiskJson(v));
  });

  router.get('/vdisks/:id', (ctx) => {
    ctx.body = vdiskJson(vdiskOf(ctx));
  });

  // Partition listings go through Vdisk.admin: a vdisk being remounted
  // answers 503 rather than looking empty for a moment.
  router.get('/vdisks/:id/records/count', async (ctx) => {
    ctx.body = await localReplica(ctx).run((v) => v.admin((ps) => ps.recordsCount()));
  });

  router.get('/vdisks/:id/partitions', async (ctx) => {
    const r = localReplica(ctx);
    const partitions = (await r.run((v) => v.admin((ps) => ps.info()))).map((p) => p.name);
    ctx.body = { vdisk_id: r.id, node_name: self, disk_name: r.disk.name, partitions };
  });

  router.get('/vdisks/:id/partitions/:partition', async (ctx) => {
    const r = localReplica(ctx);
    const p = (await r.run((v) => v.admin((ps) => ps.info()))).find((i) => i.name === ctx.params.partition);
    if (!p) throw notFound(`partition with id: ${ctx.params.partition} in vdisk ${r.id} not found`);
    ctx.body = {
      vdisk_id: r.id,
      node_name: self,
      disk_name: r.disk.name,
      timestamp: p.start,
      records_count: p.recordsCount,
      // Oyster: space, and what compaction would give back of it.
      disk_bytes: p.diskBytes,
      reclaimable_bytes: p.reclaimableBytes,
      reclaimable_records: p.reclaimableRecords,
    };
  });

  // Oyster: compaction of the vdisk's replicas on this node. POST compacts
  // every closed blob with anything to reclaim now and answers when done
  // (?wait=false: at once, 202); GET tells where compaction of their disks stands.
  const compactorsOf = (ctx: Context) => {
    const v = vdiskOf(ctx);
    const replicas = store.localReplicas(v.id);
    if (replicas.length === 0) throw notFound(`vdisk ${v.id} has no replica on node ${self}`);
    return { id: v.id, compactors: d.compactors.filter((c) => replicas.some((r) => r.disk === c.disk)) };
  };

  router.post('/vdisks/:id/compact', async (ctx) => {
    const { id, compactors } = compactorsOf(ctx);
    const wait = ctx.query.wait !== 'false';
    const runs = compactors.map((c) => c.compactNow(id));
    if (wait) {
      ctx.body = { vdisk_id: id, disks: await Promise.all(runs) };
    } else {
      for (const run of runs) run.catch((err: Error) => d.log.warn({ vdisk: id, err: err.message }, 'compaction asked for failed'));
      ctx.status = 202;
      ctx.body = { vdisk_id: id, disks: compactors.map((c) => c.status) };
    }
  });

  router.get('/vdisks/:id/compact', (ctx) => {
    const { id, compactors } = compactorsOf(ctx);
    ctx.body = { vdisk_id: id, disks: compactors.map((c) => c.status) };
  });

  const changeState = async (ctx: Context) => {
    const r = localReplica(ctx);
    const id = r.id;
    const action = ctx.params.action;
    if (action !== 'attach' && action !== 'detach') throw badRequest(`unknown action ${JSON.stringify(action)}: expected attach or detach`);
    const ts = timestampParam(ctx.params.ts);
    if (ts === null) throw notFound(`partition with timestamp ${ctx.params.ts} not found on vdisk ${id}`);
    await r.run((v) =>
      v.admin(async (ps) => {
        if (action === 'attach') await ps.attach(ts);
        else await ps.detach(ts, nowSeconds());
      }),
    );
    reply(ctx, 200, true, `partitions with timestamp ${ts} on vdisk ${id} is successfully ${action === 'attach' ? 'Attached' : 'Detached'}`);
  };
  // bob serves POST; its OpenAPI document said PUT for years: both work.
  router.post('/vdisks/:id/partitions/by_timestamp/:ts/:action', changeState);
  router.put('/vdisks/:id/partitions/by_timestamp/:ts/:action', changeState);

  router.delete('/vdisks/:id/partitions/by_timestamp/:ts', async (ctx) => {
    const r = localReplica(ctx);
    const ts = timestampParam(ctx.params.ts);
    if (ts === null) throw notFound(`partition with timestamp ${ctx.params.ts} not found on vdisk ${r.id}`);
    const removed = await r.run((v) => v.admin((ps) => ps.drop(ts, nowSeconds())));
    reply(ctx, 200, true, removed.map((n) => `partition ${n} deleted with timestamp ${ts}`).join('\n'));
  });

  router.post('/vdisks/:id/remount', async (ctx) => {
    const r = localReplica(ctx);
    await r.run((v) => v.remount());
    reply(ctx, 200, true, `vdisk ${r.id} successfully restarted`);
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
