// A disk replaced by an empty one is refilled from the other replicas: in a
// 2-node cluster (every vdisk on both nodes) n1's disk is wiped while n1 is
// down; n1 returns and refuses the empty disk (it lacks the identity n1 gave
// its disk) until the operator accepts it; then reads through either node never
// answer 404 for a key the other replica holds, and anti-entropy copies
// everything back — n0's closed partition files whole, the rest key by key
// (progress in the log and the metrics).
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { GetSource, keyBytes, Status } from '../helpers/grpc-client';
import { TestCluster, waitFor } from '../cluster/lib';
import { Rest } from '../versions/lib';

const NODES = ['n0', 'n1'];
const KEYS = 3_000;

t.test('an empty disk replacing a full one is refilled, and reads never miss meanwhile', async (t) => {
  const c = await TestCluster.start(t, {
    nodes: NODES,
    replicas: [NODES, NODES, NODES, NODES],
    keySize: 8,
    // Small blobs: most of n0's records sit in closed blobs, which the refill copies whole.
    opts: { quorum: 1, checkInterval: '500ms', maxDataInBlob: 300, extra: { anti_entropy: { interval: '2s' } } },
  });
  await c.waitLinks();
  const rest = new Rest();
  t.teardown(() => rest.close());
  const value = (k: number) => Buffer.from(`value of ${k} `.repeat(1 + (k % 50)));
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < KEYS) {
        const k = next++;
        const r = await rest.request(c.url('n0'), 'POST', `/data/${k}`, value(k));
        if (r.status !== 201) throw new Error(`POST ${k}: ${r.status}`);
      }
    }),
  );
  const deleted = Array.from({ length: 100 }, (_, i) => i * 7);
  for (const k of deleted) t.equal((await rest.request(c.url('n0'), 'DELETE', `/data/${k}`)).status, 200);
  const gone = new Set(deleted);

  // The disk is replaced while n1 is down: an empty directory in its place.
  await c.stop('n1');
  const disk = c.diskPath('n1');
  for (const entry of fs.readdirSync(disk)) fs.rmSync(path.join(disk, entry), { recursive: true, force: true });
  await c.startNode('n1');
  await c.waitLinks();

  // Restarted with --init-folders, n1 refuses the empty disk: it initialised
  // that disk and the empty one lacks its identity (an unmounted disk looks
  // the same). Its own replica answers "unavailable", never "absent".
  const list = JSON.parse((await c.rest('n1', 'GET', '/disks/list')).text) as Array<{ name: string; is_active: boolean; refused?: { reason: string } }>;
  t.same(list.map((d) => [d.is_active, d.refused?.reason]), [[false, 'no_identity'], [false, 'no_identity']], 'the disk and the alien directory on it are refused');
  t.same(fs.readdirSync(disk), [], 'nothing was written on the refused disk');
  const own = await c.grpc('n1').get(keyBytes(1, 8), { force_node: true, source: GetSource.NORMAL }).then(
    () => 'found',
    (err: { code?: number }) => err.code,
  );
  t.equal(own, Status.UNAVAILABLE, "n1's own replica: UNAVAILABLE, not NOT_FOUND");
  t.equal((await rest.request(c.url('n1'), 'GET', '/data/1')).status, 200, 'a read through n1 is answered by n0');
  t.equal(c.proc('n1').output.filter((l) => l.includes('"level":"error"') && l.includes('no oyster-disk.json')).length, 2, 'one error line for the disk and one for its alien directory');
  // The operator accepts it as a replacement: anti-entropy refills it.
  const accepted = await rest.request(c.url('n1'), 'POST', `/disks/${list[0].name}/accept`);
  t.equal(accepted.status, 200, `POST /disks/${list[0].name}/accept: ${accepted.body.toString()}`);

  // Reads through both nodes while it refills.
  const misses: string[] = [];
  let reads = 0;
  const reading = (async () => {
    for (let round = 0; round < 2; round++) {
      for (let k = 0; k < KEYS; k += 3) {
        for (const n of NODES) {
          const r = await rest.request(c.url(n), 'GET', `/data/${k}`);
          reads++;
          const ok = gone.has(k) ? r.status === 404 : r.status === 200 && r.body.equals(value(k));
          if (!ok) misses.push(`key ${k} through ${n}: ${r.status}`);
        }
      }
    }
  })();

  const onN1 = async () => {
    let wrong = 0;
    for (let k = 0; k < KEYS; k++) {
      try {
        const b = await c.grpc('n1').get(keyBytes(k, 8), { force_node: true, source: GetSource.NORMAL });
        if (gone.has(k) || !b.data.equals(value(k))) wrong++;
      } catch (err) {
        if ((err as { code?: number }).code !== Status.NOT_FOUND || !gone.has(k)) wrong++;
      }
    }
    return wrong;
  };
  const started = Date.now();
  await waitFor('n1 to be refilled', async () => (await onN1()) === 0, 60_000, 1000).catch(() => undefined);
  t.equal(await onN1(), 0, `n1's own replica holds all ${KEYS} keys again (deletes as deletes), ${((Date.now() - started) / 1000).toFixed(1)} s after it returned`);
  await reading;
  t.same(misses.slice(0, 10), [], `${reads} reads through both nodes while n1 refilled: none missed a key (${misses.length} did)`);
  const metrics = (await c.rest('n1', 'GET', '/metrics')).text;
  const copied = Number(/oyster_anti_entropy_records_total\{[^}]*source="n0"[^}]*\} (\d+)/.exec(metrics)?.[1] ?? 0);
  // The reads meanwhile repaired some of them first (read repair, counted on n0 and n1).
  const repaired = await Promise.all(
    NODES.map(async (n) => Number(/oyster_read_repairs_total\{[^}]*outcome="repaired"[^}]*\} (\d+)/.exec((await c.rest(n, 'GET', '/metrics')).text)?.[1] ?? 0)),
  );
  t.ok(copied > 0 && copied + repaired[0] + repaired[1] >= KEYS, `anti-entropy copied ${copied} records to n1, read repair wrote ${repaired[0] + repaired[1]}`);
  t.ok(c.proc('n1').output.some((l) => l.includes('anti-entropy: replica refilled with whole partitions') && l.includes('"source":"n0"')), 'whole partitions were copied, and that is logged');
});
