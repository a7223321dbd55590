// GET /status, /nodes, /metadata/distrfunc, /version, /configuration, /status/space
import Router from '@koa/router';
import { spaceOf } from '../../metrics/filesystems';
import { RestDeps } from '../deps';
import { vdiskJson } from '../json';

export function statusRoutes(d: RestDeps): Router {
  const router = new Router();
  const { topology } = d;

  router.get('/status', (ctx) => {
    ctx.body = { name: topology.self.name, address: topology.self.address, vdisks: topology.vdisks.map((v) => vdiskJson(v)) };
  });

  router.get('/nodes', (ctx) => {
    ctx.body = topology.nodes.map((n) => ({
      name: n.name,
      address: n.address,
      vdisks: topology.vdisks.filter((v) => v.replicas.some((r) => r.node === n.name)).map((v) => vdiskJson(v, n.name)),
    }));
  });

  router.get('/metadata/distrfunc', (ctx) => {
    ctx.body = { func: 'Mod' };
  });

  router.get('/version', (ctx) => {
    // bob's shape; the engine takes pearl's place.
    ctx.body = {
      bob_version: { version: d.version.version, build_time: d.version.buildTime },
      pearl_version: { version: d.version.engine, build_time: d.version.buildTime },
    };
  });

  router.get('/configuration', (ctx) => {
    ctx.body = { blob_file_name_prefix: d.layout.blobFileNamePrefix, root_dir_name: d.layout.rootDirName };
  });

  router.get('/status/space', async (ctx) => {
    // Disks sharing a filesystem are counted once.
    const { total, free, used } = await spaceOf([...topology.self.disks.map((x) => x.path), d.layout.alienRoot]);
    const byDisk: Record<string, number> = {};
    for (const c of [...d.store.disks, d.store.alien]) {
      let bytes = 0;
      for (const v of c.vdisks.all()) for (const p of v.partitions.all) bytes += (await p.engine.stats()).diskBytes;
      byDisk[c.name] = (byDisk[c.name] ?? 0) + bytes;
    }
    ctx.body = {
      total_disk_space_bytes: total,
      free_disk_space_bytes: free,
      used_disk_space_bytes: used,
      occupied_disk_space_bytes: Object.values(byDisk).reduce((a, b) => a + b, 0),
      occupied_disk_space_by_disk: byDisk,
    };
  });

  return router;
}
