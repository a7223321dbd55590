// Quorum replication over REST on a 4-node cluster (4 vdisks × 2 replicas,
// quorum 2): a write through a node without a replica lands on both replicas
// and nowhere else; with one replica SIGKILLed, writes still succeed and the
// missing copy is held as an alien on a live node until the owner returns and
// the hand-off delivers it.
import t from 'tap';
import { GetSource, Status, failure, keyBytes } from '../helpers/grpc-client';
import { TestCluster, keyOn, ring, waitFor } from './lib';

const NODES = ['n0', 'n1', 'n2', 'n3'];
const VDISKS = 4;
const KEY_SIZE = 8;

t.test('4 nodes, 4 vdisks × 2 replicas, quorum 2', async (t) => {
  const c = await TestCluster.start(t, { nodes: NODES, replicas: ring(NODES, VDISKS, 2), keySize: KEY_SIZE, opts: { quorum: 2 } });
  await c.waitLinks();

  await t.test('a write through a node without a replica is readable everywhere, stored on both replicas only', async (t) => {
    for (let v = 0; v < VDISKS; v++) {
      const holders = c.holders(v);
      const [writer, other] = c.others(v);
      const before = await Promise.all(holders.map((h) => c.recordsCount(h, v)));
      const key = keyOn(v, VDISKS, 1);
      await c.put(writer, key, `value of ${key}`);
      for (const n of NODES) t.equal((await c.get(n, key))?.toString(), `value of ${key}`, `vdisk ${v}: key ${key} through ${n}`);
      const after = await Promise.all(holders.map((h) => c.recordsCount(h, v)));
      t.same(
        after.map((a, i) => a - before[i]),
        [1, 1],
        `vdisk ${v}: records count grew by one on ${holders.join(' and ')}`,
      );
      for (const n of [writer, other]) {
        const r = await c.rest(n, 'GET', `/vdisks/${v}/records/count`);
        t.equal(r.status, 404, `vdisk ${v}: ${n} has no replica to count`);
        const err = await failure(c.grpc(n).get(keyBytes(key, KEY_SIZE), { force_node: true, source: GetSource.ALL }));
        t.equal(err.code, Status.NOT_FOUND, `vdisk ${v}: ${n} holds no copy of the key, not even an alien one`);
      }
    }
    for (const n of NODES) t.same(await c.alienDir(n), [], `no alien copies on ${n}`);
  });

  await t.test('a replica SIGKILLed: writes succeed, aliens on live nodes, handed over when it returns', async (t) => {
    const dead = 'n1'; // holds vdisks 0 and 1
    const deadVdisks = [0, 1];
    const before = new Map<number, number>();
    for (const v of deadVdisks) before.set(v, await c.recordsCount(dead, v));
    await c.kill(dead);

    // The first write right after the kill, before the link managers noticed.
    const keys = new Map<number, number[]>(deadVdisks.map((v) => [v, []]));
    const writeKey = async (v: number, i: number) => {
      const key = keyOn(v, VDISKS, i);
      await c.put(c.others(v)[0], key, `alien ${key}`);
      keys.get(v)!.push(key);
    };
    await writeKey(0, 100);
    await c.waitLinks();
    for (const v of deadVdisks) for (let i = 101; i < 106; i++) await writeKey(v, i);
    // Writes to vdisks that do not involve the dead node are unaffected.
    await c.put('n0', keyOn(2, VDISKS, 100), 'unaffected');

    const live = NODES.filter((n) => n !== dead);
    for (const v of deadVdisks) {
      for (const key of keys.get(v)!) {
        for (const n of live) t.equal((await c.get(n, key))?.toString(), `alien ${key}`, `key ${key} readable through ${n} meanwhile`);
      }
    }
    const aliens = (await Promise.all(live.map(async (n) => (await c.alienDir(n)).map((p) => ({ holder: n, p }))))).flat();
    for (const v of deadVdisks) {
      const here = aliens.filter((a) => a.p.startsWith(`${dead}/${v}/`));
      t.ok(here.length > 0, `alien/${dead}/${v}/<partition> exists on a live node (${here.map((a) => `${a.holder}:${a.p}`).join(', ')})`);
      for (const a of here) t.notOk(c.holders(v).includes(a.holder), `the alien copy of vdisk ${v} is not on its other replica (${a.holder})`);
      t.match(here[0]?.p ?? '', new RegExp(`^${dead}/${v}/\\d+_.+$`), 'alien partition named <ts>_<hash>');
    }
    t.same(
      aliens.filter((a) => !a.p.startsWith(`${dead}/`)),
      [],
      'aliens only for the dead node',
    );

    const restarted = Date.now();
    await c.startNode(dead);
    for (const v of deadVdisks) {
      const want = before.get(v)! + keys.get(v)!.length;
      await waitFor(`records count of vdisk ${v} on ${dead} to reach ${want}`, async () => (await c.recordsCount(dead, v)) >= want, 20_000);
    }
    await waitFor(
      'the alien copies to be gone',
      async () => {
        for (const n of live) {
          if ((await c.alienDir(n)).some((p) => p.startsWith(`${dead}/`))) return false;
          for (const v of deadVdisks) if (c.alienPartitions(n, dead, v).length > 0) return false;
        }
        return true;
      },
      20_000,
    );
    t.pass(`handed over within ${Date.now() - restarted} ms of the restart`);
    let delivered = 0;
    for (const n of live) {
      const m = /^oyster_aliens_handed_over_total\{[^}]*owner="n1"[^}]*\} (\d+)/m.exec((await c.rest(n, 'GET', '/metrics')).text);
      delivered += m ? Number(m[1]) : 0;
    }
    t.ok(delivered >= keys.get(0)!.length + keys.get(1)!.length, `oyster_aliens_handed_over_total{owner="${dead}"} counts the delivered records (${delivered})`);
    for (const v of deadVdisks) {
      for (const key of keys.get(v)!) {
        t.equal((await c.get(dead, key))?.toString(), `alien ${key}`, `key ${key} read through ${dead}`);
        const local = await c.grpc(dead).get(keyBytes(key, KEY_SIZE), { force_node: true, source: GetSource.NORMAL });
        t.equal(local.data.toString(), `alien ${key}`, `key ${key} in ${dead}'s own replica of vdisk ${v}`);
      }
    }
  });
});
