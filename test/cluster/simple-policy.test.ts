// cluster_policy: simple on 3 nodes, 3 vdisks × 2 replicas,
// quorum 2: put, get and delete work through every node; a write or delete
// needs `quorum` replicas — with one replica down it fails, and no alien copy
// is made — while reads still succeed from the remaining replica.
import t from 'tap';
import { Status, failure, keyBytes } from '../helpers/grpc-client';
import { TestCluster, keyOn, ring } from './lib';

const NODES = ['n0', 'n1', 'n2'];
const VDISKS = 3;

t.test('simple policy', async (t) => {
  const c = await TestCluster.start(t, {
    nodes: NODES,
    replicas: ring(NODES, VDISKS, 2),
    keySize: 8,
    opts: { quorum: 2, clusterPolicy: 'simple' },
  });
  await c.waitLinks();

  await t.test('put, get, delete through every node', async (t) => {
    for (const via of NODES) {
      for (let v = 0; v < VDISKS; v++) {
        const key = keyOn(v, VDISKS, NODES.indexOf(via));
        await c.put(via, key, `simple ${key}`);
        for (const h of c.holders(v)) t.ok((await c.recordsCount(h, v)) > 0, `vdisk ${v}: stored on replica ${h}`);
        for (const n of NODES) t.equal((await c.get(n, key))?.toString(), `simple ${key}`, `vdisk ${v} key written through ${via}, read through ${n}`);
        t.equal((await c.rest(via, 'HEAD', `/data/${key}`)).status, 200, 'HEAD 200');
      }
    }
    const key = keyOn(0, VDISKS, 0);
    await c.del('n2', key);
    for (const n of NODES) t.equal(await c.get(n, key), null, `deleted: 404 through ${n}`);
    t.equal((await c.rest('n1', 'HEAD', `/data/${key}`)).status, 404, 'HEAD 404');
    const g = c.grpc('n1');
    await g.put(keyBytes(keyOn(1, VDISKS, 9), 8), Buffer.from('grpc'), 1_700_000_000);
    t.equal((await c.grpc('n0').get(keyBytes(keyOn(1, VDISKS, 9), 8))).data.toString(), 'grpc', 'gRPC put and get');
    t.same(await c.grpc('n2').exist([keyBytes(keyOn(1, VDISKS, 9), 8), keyBytes(key, 8)]), [true, false], 'gRPC Exist');
  });

  await t.test('a write needs quorum replicas', async (t) => {
    const key = keyOn(0, VDISKS, 20); // vdisk 0: n0 and n1
    await c.put('n2', key, 'before');
    await c.kill('n1');
    await c.waitLinks();
    for (const via of ['n0', 'n2']) {
      const r = await c.rest(via, 'POST', `/data/${key}`, 'after');
      t.ok(r.status >= 500, `PUT of vdisk 0 through ${via} with 1 of 2 replicas: ${r.status} ${r.text}`);
      t.equal(JSON.parse(r.text).ok, false, 'StatusExt ok: false');
    }
    const err = await failure(c.grpc('n2').put(keyBytes(key, 8), Buffer.from('after'), 1_800_000_000));
    t.not(err.code, Status.OK, `gRPC Put fails too (${Status[err.code]}: ${err.details})`);
    const del = await c.rest('n2', 'DELETE', `/data/${key}`);
    t.ok(del.status >= 500, `DELETE needs quorum as well: ${del.status}`);
    for (const n of ['n0', 'n2']) t.same(await c.alienDir(n), [], `no alien copies on ${n}`);
    t.ok((await c.get('n2', key)) !== null, 'reads still succeed from the remaining replica');
    // vdisk 2 (n2, n0) does not involve the dead node.
    const other = keyOn(2, VDISKS, 20);
    await c.put('n0', other, 'fine');
    t.equal((await c.get('n2', other))?.toString(), 'fine', 'writes to vdisks with both replicas up succeed');
  });
});
