// Deletes and overwrites while a replica is down (4 nodes, 4 vdisks × 2
// replicas, quorum 2): the node that missed them still holds the old value
// when it comes back; the newest version must win through every node, and
// after the hand-off the returning replica holds it itself.
import t from 'tap';
import { GetSource, Status, failure, keyBytes } from '../helpers/grpc-client';
import { TestCluster, keyOn, ring, sleep, waitFor } from './lib';

const NODES = ['n0', 'n1', 'n2', 'n3'];
const VDISKS = 4;
const KEY_SIZE = 8;
const DOWN = 'n1'; // holds vdisks 0 and 1

/** Sleeps into the next wall-clock second, so that the next write has a newer REST timestamp. */
async function nextSecond(): Promise<void> {
  await sleep(1000 - (Date.now() % 1000) + 20);
}

async function handedOver(c: TestCluster, owner: string): Promise<void> {
  await waitFor(
    `every alien copy for ${owner} to be handed over`,
    async () => {
      for (const n of c.names) if ((await c.alienDir(n)).some((p) => p.startsWith(`${owner}/`))) return false;
      return true;
    },
    20_000,
  );
}

t.test('deletes while a replica is down', async (t) => {
  const c = await TestCluster.start(t, { nodes: NODES, replicas: ring(NODES, VDISKS, 2), keySize: KEY_SIZE, opts: { quorum: 2 } });
  await c.waitLinks();
  // Through a node without the vdisk, through the surviving replica, and one key never written.
  const cases = [
    { key: keyOn(0, VDISKS, 1), via: 'n2', what: 'vdisk 0 through n2 (no replica)' },
    { key: keyOn(0, VDISKS, 2), via: 'n0', what: 'vdisk 0 through n0 (the other replica)' },
    { key: keyOn(1, VDISKS, 3), via: 'n3', what: 'vdisk 1 through n3 (no replica)' },
    { key: keyOn(1, VDISKS, 4), via: 'n2', what: 'vdisk 1 through n2 (the other replica)' },
  ];
  for (const k of cases) await c.put('n0', k.key, `doomed ${k.key}`);
  const sameSecond = keyOn(0, VDISKS, 5);
  await nextSecond();
  await c.put('n3', sameSecond, 'deleted within its second');

  await c.kill(DOWN);
  await c.del('n2', sameSecond);
  await c.waitLinks();
  for (const k of cases) await c.del(k.via, k.key);
  const never = keyOn(0, VDISKS, 6);
  await c.del('n0', never);
  for (const k of [...cases.map((x) => x.key), sameSecond, never]) {
    for (const n of NODES.filter((x) => x !== DOWN)) t.equal(await c.get(n, k), null, `key ${k} gone through ${n} while ${DOWN} is down`);
  }
  const tombstones = (await Promise.all(NODES.filter((n) => n !== DOWN).map((n) => c.alienDir(n)))).flat();
  t.ok(
    tombstones.some((p) => p.startsWith(`${DOWN}/0/`)) && tombstones.some((p) => p.startsWith(`${DOWN}/1/`)),
    `alien tombstones held for ${DOWN} (${tombstones.join(', ')})`,
  );

  await c.startNode(DOWN);
  await c.waitLinks();
  // Deleted in a later second than written: the tombstone wins even before the hand-off.
  for (const k of cases) t.equal(await c.get(DOWN, k.key), null, `${k.what}: gone through ${DOWN} as soon as it is back`);
  await handedOver(c, DOWN);
  for (const k of [...cases.map((x) => x.key), sameSecond, never]) {
    for (const n of NODES) t.equal(await c.get(n, k), null, `key ${k} gone through ${n} after the hand-off`);
    const err = await failure(c.grpc(DOWN).get(keyBytes(k, KEY_SIZE), { force_node: true, source: GetSource.NORMAL }));
    t.equal(err.code, Status.NOT_FOUND, `key ${k}: ${DOWN}'s own replica reads NOT_FOUND`);
    t.same(await c.grpc(DOWN).exist([keyBytes(k, KEY_SIZE)]), [false], `key ${k}: Exist through ${DOWN} is false`);
  }
  const head = await c.rest(DOWN, 'HEAD', `/data/${cases[0].key}`);
  t.equal(head.status, 404, 'HEAD through the returned node is 404');
});

t.test('overwrites while a replica is down', async (t) => {
  const c = await TestCluster.start(t, { nodes: NODES, replicas: ring(NODES, VDISKS, 2), keySize: KEY_SIZE, opts: { quorum: 2 } });
  await c.waitLinks();
  const keys = [keyOn(0, VDISKS, 1), keyOn(1, VDISKS, 2), keyOn(0, VDISKS, 3)];
  for (const k of keys) await c.put('n3', k, `old ${k}`);
  const sameSecond = keyOn(1, VDISKS, 4);
  await nextSecond();
  await c.put('n0', sameSecond, `old ${sameSecond}`);
  const oldTs = (await c.grpc('n2').get(keyBytes(sameSecond, KEY_SIZE), { force_node: true, source: GetSource.NORMAL })).timestamp;

  await c.kill(DOWN);
  await c.put('n3', sameSecond, `new ${sameSecond}`);
  const newTs = (await c.grpc('n2').get(keyBytes(sameSecond, KEY_SIZE), { force_node: true, source: GetSource.NORMAL })).timestamp;
  t.comment(`same-second overwrite: old ${oldTs}, new ${newTs}${oldTs === newTs ? ' (same second)' : ''}`);
  await c.waitLinks();
  await nextSecond();
  await c.put('n2', keys[0], `new ${keys[0]}`); // no replica of vdisk 0
  await c.put('n2', keys[1], `new ${keys[1]}`); // the other replica of vdisk 1
  await c.put('n0', keys[2], `new ${keys[2]}`); // the other replica of vdisk 0
  await c.put('n0', keys[2], `newest ${keys[2]}`); // twice within a second: the later write wins
  const want = (k: number) => (k === keys[2] ? `newest ${k}` : `new ${k}`);

  await c.startNode(DOWN);
  await c.waitLinks();
  for (const k of keys) {
    for (const n of NODES) t.equal((await c.get(n, k))?.toString(), want(k), `key ${k} through ${n} once ${DOWN} is back`);
  }
  await handedOver(c, DOWN);
  for (const k of [...keys, sameSecond]) {
    for (const n of NODES) t.equal((await c.get(n, k))?.toString(), want(k), `key ${k} through ${n} after the hand-off`);
    const own = await c.grpc(DOWN).get(keyBytes(k, KEY_SIZE), { force_node: true, source: GetSource.NORMAL });
    t.equal(own.data.toString(), want(k), `key ${k}: ${DOWN}'s own replica holds the newest value`);
  }
});
