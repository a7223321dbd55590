// bob-tools' manual alien recovery still works beside the automatic
// hand-off, and cannot hide anything: the owner is stopped while alien copies
// are written; POST /alien/detach on every holder closes them, GET /alien/dir
// lists them and their directories are copied away. Detaching does not take
// them out of the hand-off's reach (that would hide acknowledged writes):
// when the owner returns, they are delivered. The copies, put into the
// owner's <disk>/bob/<vdisk>/ afterwards, are picked up on POST
// /vdisks/{id}/remount (vdisk 0) or POST /disks/disk1/stop + start (vdisk 1)
// and change nothing: they hold the same versions.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { GetSource, Status, keyBytes } from '../helpers/grpc-client';
import { TestCluster, keyOn, ls, ring, waitFor } from './lib';

const NODES = ['n0', 'n1', 'n2', 'n3'];
const VDISKS = 4;
const OWNER = 'n1'; // holds vdisks 0 and 1

t.test('manual alien recovery: detach, list, copy, remount / disk restart', async (t) => {
  const c = await TestCluster.start(t, { nodes: NODES, replicas: ring(NODES, VDISKS, 2), keySize: 8, opts: { quorum: 2 } });
  await c.waitLinks();
  await c.stop(OWNER);
  await c.waitLinks();

  const keys = new Map<number, number[]>([
    [0, [1, 2, 3, 4, 5].map((i) => keyOn(0, VDISKS, i))],
    [1, [1, 2, 3, 4, 5].map((i) => keyOn(1, VDISKS, i))],
  ]);
  for (const [v, ks] of keys) for (const k of ks) await c.put(c.others(v)[0], k, `manual ${k}`);
  const deleted = keys.get(0)![4];
  await c.del('n3', deleted);

  // bob-tools step 3: detach, then list, on every node.
  const live = NODES.filter((n) => n !== OWNER);
  const listed: Array<{ holder: string; vdisk: number; partition: string }> = [];
  for (const n of live) {
    const r = await c.rest(n, 'POST', '/alien/detach');
    t.equal(r.status, 200, `POST /alien/detach on ${n}`);
    t.same(JSON.parse(r.text).ok, true, 'ok: true');
    for (const p of await c.alienDir(n)) {
      const [owner, vdisk, partition] = p.split('/');
      t.equal(owner, OWNER, `${n} holds aliens only for ${OWNER} (${p})`);
      listed.push({ holder: n, vdisk: Number(vdisk), partition });
    }
  }
  for (const v of [0, 1]) t.ok(listed.some((l) => l.vdisk === v), `GET /alien/dir lists alien partitions of vdisk ${v}`);

  // bob-tools step 4: copy the partition directories away (the owner is still down).
  const staging = path.join(c.files.dir, 'staging');
  for (const l of listed) {
    fs.cpSync(path.join(c.alienRoot(l.holder), OWNER, String(l.vdisk), l.partition), path.join(staging, String(l.vdisk), l.partition), { recursive: true });
  }

  // The owner returns: the detached copies are handed over all the same.
  await c.startNode(OWNER);
  await c.waitLinks();
  await waitFor(
    'the detached alien copies to be handed over',
    async () => {
      for (const n of live) if ((await c.alienDir(n)).length > 0) return false;
      return true;
    },
    20_000,
  );
  for (const [v, ks] of keys) {
    for (const k of ks) {
      const got = await c
        .grpc(OWNER)
        .get(keyBytes(k, 8), { force_node: true, source: GetSource.NORMAL })
        .then((b) => b.data.toString(), (err: { code: number }) => (err.code === Status.NOT_FOUND ? null : `error ${err.code}`));
      t.equal(got, k === deleted ? null : `manual ${k}`, `vdisk ${v}, key ${k}: handed over to ${OWNER}'s replica although detached`);
    }
  }
  const before = new Map<number, number>();
  for (const v of [0, 1]) before.set(v, await c.recordsCount(OWNER, v));

  // bob-tools step 5: the copies go into the owner's vdisk directories.
  for (const l of listed) {
    const to = path.join(c.vdiskDir(OWNER, l.vdisk), l.partition);
    t.notOk(fs.existsSync(to), `${l.partition} does not collide with ${OWNER}'s own partitions (${ls(c.vdiskDir(OWNER, l.vdisk)).join(', ')})`);
    fs.cpSync(path.join(staging, String(l.vdisk), l.partition), to, { recursive: true });
  }

  const verify = async (v: number, how: string) => {
    const count = await c.recordsCount(OWNER, v);
    t.ok(count > before.get(v)!, `${how}: vdisk ${v} records count on ${OWNER} grew from ${before.get(v)} to ${count}`);
    const parts = (await c.rest(OWNER, 'GET', `/vdisks/${v}/partitions`)).json<{ partitions: string[] }>().partitions;
    for (const l of listed.filter((x) => x.vdisk === v)) t.ok(parts.includes(l.partition), `vdisk ${v}: ${l.partition} is served`);
    for (const k of keys.get(v)!) {
      const got = await c
        .grpc(OWNER)
        .get(keyBytes(k, 8), { force_node: true, source: GetSource.NORMAL })
        .then((b) => b.data.toString(), (err: { code: number }) => (err.code === Status.NOT_FOUND ? null : `error ${err.code}`));
      t.equal(got, k === deleted ? null : `manual ${k}`, `key ${k}: ${OWNER}'s own replica ${k === deleted ? 'has the tombstone' : 'serves it'}`);
      t.equal((await c.get(OWNER, k))?.toString() ?? null, k === deleted ? null : `manual ${k}`, `key ${k} through REST on ${OWNER}`);
    }
  };

  // Step 6: remount vdisk 0, restart the disk for vdisk 1.
  const remount = await c.rest(OWNER, 'POST', '/vdisks/0/remount');
  t.equal(remount.status, 200, `POST /vdisks/0/remount: ${remount.text}`);
  await verify(0, 'after the remount');
  const parts1 = (await c.rest(OWNER, 'GET', '/vdisks/1/partitions')).json<{ partitions: string[] }>().partitions;
  t.notOk(listed.some((l) => l.vdisk === 1 && parts1.includes(l.partition)), 'vdisk 1 is not rescanned by the remount of vdisk 0');
  t.equal((await c.rest(OWNER, 'POST', '/disks/disk1/stop')).status, 200, 'POST /disks/disk1/stop');
  t.equal((await c.rest(OWNER, 'POST', '/disks/disk1/start')).status, 200, 'POST /disks/disk1/start');
  await verify(1, 'after the disk restart');
  await verify(0, 'after the disk restart');
});
