// Nodes killed and restarted at random while large values are written: for
// 15 s, 6 writers put (most values large enough to go to the replicas in
// parts, some of them several MiB) and delete their own keys through any of
// three nodes, each vdisk on two of them with quorum 2, while one node at a
// time is SIGKILLed or stopped and started again. A write that fails is sent
// again, through another node, until it is acknowledged; so every
// acknowledged write is below quorum on its replicas only when it has alien
// copies (of a value written in parts: read back from the replica that took
// it), and every key's last acknowledged write is what the model holds.
// Afterwards (every node up, the alien copies handed over) each replica
// holds, read with force_node, and each node returns, exactly that.
// OYSTER_TEST_SEED replays a run.
import t from 'tap';
import { GetSource, keyBytes, Status } from '../helpers/grpc-client';
import { TestCluster, ring, sleep, waitFor } from '../cluster/lib';
import { Rest, Rng, seedFromEnv } from '../versions/lib';

const NODES = ['n0', 'n1', 'n2'];
const VDISKS = 3;
const WRITERS = 6;
const KEYS_PER_WRITER = 12;
const RUN_MS = 15_000;
const KiB = 1024;

/** A value as the test tells values apart: its tag and its length. */
const brief = (v: Buffer) => `${v.subarray(0, v.indexOf(';') + 1).toString()} (${v.length} bytes)`;

t.test('nodes killed and restarted under large writes: every acknowledged write on every replica', async (t) => {
  const seed = seedFromEnv();
  t.comment(`seed ${seed}`);
  const rng = new Rng(seed);
  const replicas = ring(NODES, VDISKS, 2);
  const c = await TestCluster.start(t, {
    nodes: NODES,
    replicas,
    keySize: 8,
    opts: { quorum: 2, operationTimeout: '2s', checkInterval: '500ms', extra: { anti_entropy: { interval: '2s' } } },
  });
  await c.waitLinks();
  const rest = new Rest();
  t.teardown(() => rest.close());

  let running = true;
  const down = new Set<string>();
  const faults = { killed: 0, stopped: 0 };
  const chaos = (async () => {
    while (running) {
      await sleep(200 + rng.int(800));
      if (!running) break;
      const n = rng.pick(NODES);
      down.add(n);
      if (rng.next() < 0.7) {
        await c.kill(n);
        faults.killed++;
      } else {
        await c.stop(n);
        faults.stopped++;
      }
      await sleep(200 + rng.int(1300));
      await c.startNode(n);
      down.delete(n);
    }
  })();

  // The model: every key's last acknowledged write (null: deleted or never written).
  const model = new Map<number, Buffer | null>();
  const stats = { acked: 0, retries: 0, large: 0 };
  const end = Date.now() + RUN_MS;
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      const r = new Rng(seed + 31 * (w + 1));
      let seq = 0;
      while (Date.now() < end) {
        const k = w * KEYS_PER_WRITER + r.int(KEYS_PER_WRITER);
        const tag = `w${w} ${seq++};`;
        const roll = r.next();
        const value =
          roll < 0.12 ? null : roll < 0.4 ? Buffer.from(tag.repeat(1 + r.int(60))) : Buffer.alloc(roll < 0.85 ? 128 * KiB + r.int(900 * KiB) : 1024 * KiB + r.int(2048 * KiB), tag);
        if (value !== null && value.length >= 128 * KiB) stats.large++;
        // Sent again through another node until acknowledged: its outcome must be known before the key's next write.
        for (let attempt = 0; ; attempt++) {
          const up = NODES.filter((n) => !down.has(n));
          const via = up.length > 0 ? r.pick(up) : r.pick(NODES);
          const answer = await rest.request(c.url(via), value === null ? 'DELETE' : 'POST', `/data/${k}`, value ?? undefined, 10_000).catch(() => ({ status: 0 }));
          // A delete of a key no replica holds answers 404: deleted all the same.
          if (answer.status === 201 || answer.status === 200 || (value === null && answer.status === 404)) break;
          if (Date.now() > end + 60_000) throw new Error(`key ${k}: not acknowledged after ${attempt + 1} attempts (last ${answer.status})`);
          stats.retries++;
          await sleep(20 + r.int(100));
        }
        model.set(k, value);
        stats.acked++;
      }
    }),
  );
  running = false;
  await chaos;
  t.comment(JSON.stringify({ ...stats, ...faults }));
  t.ok(stats.acked > 200 && stats.large > 50, `${stats.acked} writes acknowledged (${stats.large} large, ${stats.retries} attempts sent again), ${faults.killed} nodes killed, ${faults.stopped} stopped`);
  await c.waitLinks();

  const expected = (k: number) => {
    const v = model.get(k) ?? null;
    return v === null ? 'absent' : brief(v);
  };
  const grpc = new Map(NODES.map((n) => [n, c.freshGrpc(n, 10_000)]));
  t.teardown(() => grpc.forEach((g) => g.close()));
  const wrongReplicas = async () => {
    const out: string[] = [];
    for (const [k] of model) {
      for (const n of replicas[k % VDISKS]) {
        const seen = await grpc
          .get(n)!
          .get(keyBytes(k, 8), { force_node: true, source: GetSource.NORMAL })
          .then(
            (b) => brief(b.data),
            (err: { code?: number }) => (err.code === Status.NOT_FOUND ? 'absent' : `error ${err.code}`),
          );
        if (seen !== expected(k)) out.push(`key ${k} on ${n}: ${seen}, acknowledged ${expected(k)}`);
      }
    }
    return out;
  };
  const aliensLeft = async () => (await Promise.all(NODES.map((n) => c.alienDir(n)))).flat().length;
  // The hand-off every check_interval, anti-entropy every 2 s; the margin is for a loaded machine.
  await waitFor('the alien copies to be handed over and the replicas to agree', async () => (await aliensLeft()) === 0 && (await wrongReplicas()).length === 0, 60_000, 1000).catch(() => undefined);
  t.equal(await aliensLeft(), 0, 'every alien copy handed over');
  const wrong = await wrongReplicas();
  t.same(wrong.slice(0, 10), [], `every replica holds the last acknowledged write of all ${model.size} keys (${wrong.length} differ)`);

  const through: string[] = [];
  for (const [k] of model) {
    for (const n of NODES) {
      const r = await rest.request(c.url(n), 'GET', `/data/${k}`);
      const seen = r.status === 200 ? brief(r.body) : r.status === 404 ? 'absent' : String(r.status);
      if (seen !== expected(k)) through.push(`key ${k} through ${n}: ${seen}, acknowledged ${expected(k)}`);
    }
  }
  t.same(through.slice(0, 10), [], 'every node returns the last acknowledged write of every key');
});
