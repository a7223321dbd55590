// bob's alien scenario, over REST: on a 4-node cluster (4 vdisks × 2
// replicas, quorum 2) batch i of keys is written through node i, then node i
// is stopped (i = 0..2; they stay stopped while the next batches are written),
// so the later batches find one, two, then three nodes down and fall back to
// alien copies — the last one with only n3 alive, holding every copy itself.
// Then every node comes back: every key is readable through every node at
// once, and after the hand-off each key's replicas hold it themselves.
import t from 'tap';
import { GetSource, keyBytes } from '../helpers/grpc-client';
import { TestCluster, keyOn, ring, waitFor } from './lib';

const NODES = ['n0', 'n1', 'n2', 'n3'];
const VDISKS = 4;
const KEY_SIZE = 8;
const PER_BATCH = 12; // 3 keys per vdisk

t.test('alien scenario: batches written while nodes go down one by one', async (t) => {
  const c = await TestCluster.start(t, { nodes: NODES, replicas: ring(NODES, VDISKS, 2), keySize: KEY_SIZE, opts: { quorum: 2 } });
  await c.waitLinks();

  const batches: number[][] = [];
  const value = (key: number) => `batch value ${key}`;
  for (let i = 0; i < 4; i++) {
    const batch = Array.from({ length: PER_BATCH }, (_, j) => keyOn(j % VDISKS, VDISKS, i * 100 + j));
    for (const key of batch) await c.put(NODES[i], key, value(key));
    batches.push(batch);
    t.pass(`batch ${i} written through ${NODES[i]} (${NODES.slice(0, i).join(', ') || 'no node'} down)`);
    if (i < 3) {
      await c.stop(NODES[i]);
      await c.waitLinks();
    }
  }
  const all = batches.flat();
  const aliensOnN3 = await c.alienDir('n3');
  t.ok(
    ['n0', 'n1', 'n2'].every((owner) => aliensOnN3.some((p) => p.startsWith(`${owner}/`))),
    `n3 holds alien copies for n0, n1 and n2 (${aliensOnN3.join(', ')})`,
  );

  await Promise.all(['n0', 'n1', 'n2'].map((n) => c.startNode(n)));
  await c.waitLinks();
  let unreadable = 0;
  for (const n of NODES) {
    for (const key of all) {
      const got = (await c.get(n, key))?.toString();
      if (got !== value(key)) {
        unreadable++;
        t.equal(got, value(key), `key ${key} through ${n}`);
      }
    }
  }
  t.equal(unreadable, 0, `all ${all.length} keys readable through all 4 nodes right after the restart`);

  const restarted = Date.now();
  await waitFor(
    'every alien copy to be handed over',
    async () => {
      for (const n of NODES) if ((await c.alienDir(n)).length > 0) return false;
      return true;
    },
    20_000,
  );
  t.pass(`alien directories empty on every node ${Date.now() - restarted} ms after the restart`);

  let missing = 0;
  for (const key of all) {
    const v = key % VDISKS;
    for (const holder of c.holders(v)) {
      const got = await c
        .grpc(holder)
        .get(keyBytes(key, KEY_SIZE), { force_node: true, source: GetSource.NORMAL })
        .then((b) => b.data.toString(), (err: Error) => err.message);
      if (got !== value(key)) {
        missing++;
        t.equal(got, value(key), `key ${key} in ${holder}'s replica of vdisk ${v}`);
      }
    }
  }
  t.equal(missing, 0, 'every key is in both of its replicas (force_node Get NORMAL)');
  for (let v = 0; v < VDISKS; v++) {
    const keys = all.filter((k) => k % VDISKS === v).length;
    for (const holder of c.holders(v)) {
      t.ok((await c.recordsCount(holder, v)) >= keys, `records count of vdisk ${v} on ${holder} covers its ${keys} keys`);
    }
  }
  for (const n of NODES) {
    for (const key of all) {
      if ((await c.get(n, key))?.toString() !== value(key)) t.fail(`key ${key} through ${n} after the hand-off`);
    }
  }
  t.pass('every key still readable through every node after the hand-off');
});
