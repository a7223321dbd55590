// A replica that missed writes catches up by anti-entropy alone: node n2 is
// down while 10 000 puts and deletes go through n0 and n1, the alien copies
// kept for it are thrown away, and n2 comes back. Within the documented time
// (anti_entropy.interval plus one pass; 2 s here) its own replicas hold
// every key's last acknowledged write, deletes included.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { GetSource, keyBytes, Status } from '../helpers/grpc-client';
import { TestCluster, ring, waitFor } from '../cluster/lib';
import { KeyModel, Rest } from '../versions/lib';

const NODES = ['n0', 'n1', 'n2'];
const VDISKS = 3;
const OPS = 10_000;
const KEYS = 2_000;

t.test('a replica down during 10 000 writes, its aliens lost, catches up by anti-entropy', async (t) => {
  const c = await TestCluster.start(t, {
    nodes: NODES,
    replicas: ring(NODES, VDISKS, 2),
    keySize: 8,
    opts: { quorum: 1, checkInterval: '500ms', extra: { anti_entropy: { interval: '2s' } } },
  });
  await c.waitLinks();
  await c.stop('n2');
  await c.waitLinks();

  const rest = new Rest();
  t.teardown(() => rest.close());
  const models = Array.from({ length: KEYS }, () => new KeyModel());
  let next = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: 32 }, async (_, w) => {
      while (next < OPS) {
        const i = next++;
        const key = (i * 7919) % KEYS;
        const via = NODES[w % 2];
        const del = i % 5 === 4;
        const value = del ? null : Buffer.from(`op ${i} key ${key}`);
        const r = del ? await rest.request(c.url(via), 'DELETE', `/data/${key}`) : await rest.request(c.url(via), 'POST', `/data/${key}`, value!);
        // One writer per key at a time is not guaranteed here: keys are spread so that a key's ops are far apart.
        if (r.status === (del ? 200 : 201)) models[key].ack(value);
        else {
          models[key].fail(value);
          failed++;
        }
      }
    }),
  );
  t.equal(failed, 0, `${OPS} writes and deletes acknowledged while n2 was down`);

  // Throw away every alien copy kept for n2, then bring it back.
  for (const n of ['n0', 'n1']) {
    t.equal((await c.rest(n, 'POST', '/alien/detach')).status, 200, `alien partitions detached on ${n}`);
    fs.rmSync(path.join(c.alienRoot(n), 'n2'), { recursive: true, force: true });
  }
  const restarted = Date.now();
  await c.startNode('n2');
  await c.waitLinks();

  const heldByN2 = Array.from({ length: KEYS }, (_, k) => k).filter((k) => c.holders(k % VDISKS).includes('n2'));
  const behind = async () => {
    const wrong: string[] = [];
    for (const k of heldByN2) {
      let state: Buffer | null;
      try {
        state = (await c.grpc('n2').get(keyBytes(k, 8), { force_node: true, source: GetSource.NORMAL })).data;
      } catch (err) {
        if ((err as { code?: number }).code !== Status.NOT_FOUND) throw err;
        state = null;
      }
      if (!models[k].allows(state)) wrong.push(`key ${k}: ${state === null ? 'absent' : state.toString()}; ${models[k].describe()}`);
    }
    return wrong;
  };
  // The documented bound is anti_entropy.interval plus a pass; the margin is for a loaded machine.
  await waitFor('n2 to catch up', async () => (await behind()).length === 0, 45_000, 500).catch(() => undefined);
  const wrong = await behind();
  const seconds = (Date.now() - restarted) / 1000;
  t.same(wrong.slice(0, 10), [], `n2's replicas hold the last acknowledged write of all ${heldByN2.length} of its keys ${seconds.toFixed(1)} s after it returned (${wrong.length} wrong)`);
  const metrics = (await c.rest('n2', 'GET', '/metrics')).text;
  t.match(metrics, /oyster_anti_entropy_records_total\{[^}]*source="n[01]"[^}]*\} [1-9]/, 'the copied records are counted by source');
  t.ok(c.proc('n2').output.some((l) => l.includes('anti-entropy: records copied from another replica')), 'and logged');
});
