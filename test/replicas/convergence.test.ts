// Replicas converge: three coordinators write the same keys at once (REST,
// some values large enough to go to replicas in parts, and gRPC with shared
// timestamps) while replicas are stopped (SIGSTOP) and
// resumed at random; some keys are deleted at the end. After healing, within
// the documented time (anti_entropy.interval plus a pass; 2 s here, with the
// alien hand-off), every replica holds the same version of every key, every
// coordinator returns it, and the deleted keys stay deleted.
// OYSTER_TEST_SEED replays a run.
import t from 'tap';
import { GetSource, keyBytes, Status } from '../helpers/grpc-client';
import { TestCluster, ring, sleep, waitFor } from '../cluster/lib';
import { Rest, Rng, seedFromEnv } from '../versions/lib';

const NODES = ['n0', 'n1', 'n2'];

/** A value as the test tells values apart: a large one by its first tag and its length. */
const brief = (v: Buffer) => (v.length > 100 ? `${v.subarray(0, v.indexOf(';') + 1).toString()} (${v.length} bytes)` : v.toString());
const KEYS = 300;
const RUN_MS = 15_000;

t.test('concurrent coordinators and stopped replicas: all replicas converge', async (t) => {
  const seed = seedFromEnv();
  t.comment(`seed ${seed}`);
  const rng = new Rng(seed);
  const c = await TestCluster.start(t, {
    nodes: NODES,
    replicas: ring(NODES, 3, 3),
    keySize: 8,
    opts: { quorum: 2, operationTimeout: '1s', checkInterval: '500ms', extra: { anti_entropy: { interval: '2s' } } },
  });
  await c.waitLinks();
  const rest = new Rest();
  t.teardown(() => rest.close());
  const key = (k: number) => keyBytes(k, 8);

  let running = true;
  const stopped = new Set<string>();
  const chaos = (async () => {
    while (running) {
      await sleep(300 + rng.int(700));
      const n = rng.pick(NODES);
      // At most one replica stopped at a time: the quorum (2 of 3) stays reachable.
      if (stopped.size > 0 || !running) continue;
      stopped.add(n);
      c.proc(n).child.kill('SIGSTOP');
      await sleep(300 + rng.int(1500));
      c.proc(n).child.kill('SIGCONT');
      stopped.delete(n);
    }
  })();

  const stats = { acked: 0, failed: 0 };
  const deleted = new Set(Array.from({ length: 30 }, (_, i) => i * 10));
  const end = Date.now() + RUN_MS;
  await Promise.all(
    NODES.flatMap((via, w) =>
      Array.from({ length: 4 }, async (_, j) => {
        const r = new Rng(seed + 31 * (w * 4 + j + 1));
        const grpc = c.freshGrpc(via, 3000);
        let seq = 0;
        while (Date.now() < end) {
          const k = r.int(KEYS);
          const tag = `${via}#${j} ${seq++}`;
          const overRest = r.next() < 0.5;
          // Some REST values large enough to go to the other replicas in parts as they arrive.
          const v = overRest && r.next() < 0.1 ? Buffer.alloc(256 * 1024 + r.int(768 * 1024), `${tag};`) : Buffer.from(tag);
          const ok = overRest
              ? (await rest.request(c.url(via), 'POST', `/data/${k}`, v, 3000)).status === 201
              : await grpc
                  .put(key(k), v, 1_700_000_000 + (seq % 3))
                  .then(() => true, () => false);
          if (ok) stats.acked++;
          else stats.failed++;
        }
        grpc.close();
      }),
    ),
  );
  running = false;
  await chaos;
  for (const k of deleted) {
    await waitFor(`the delete of ${k}`, async () => (await rest.request(c.url(NODES[k % 3]), 'DELETE', `/data/${k}`)).status === 200, 10_000);
  }
  t.comment(JSON.stringify(stats));
  t.ok(stats.acked > 500, `${stats.acked} writes acknowledged under stops (${stats.failed} failed)`);

  const healed = Date.now();
  const disagreements = async () => {
    const out: string[] = [];
    for (let k = 0; k < KEYS; k++) {
      const seen = await Promise.all(
        NODES.map((n) =>
          c
            .grpc(n)
            .get(key(k), { force_node: true, source: GetSource.NORMAL })
            .then(
              (b) => brief(b.data),
              (err: { code?: number }) => (err.code === Status.NOT_FOUND ? 'absent' : `error ${err.code}`),
            ),
        ),
      );
      if (new Set(seen).size !== 1) out.push(`key ${k}: ${NODES.map((n, i) => `${n}=${seen[i]}`).join(' ')}`);
      else if (deleted.has(k) && seen[0] !== 'absent') out.push(`key ${k} was deleted but reads ${seen[0]}`);
    }
    return out;
  };
  // The documented bound is anti_entropy.interval plus a pass; the margin is for a loaded machine.
  await waitFor('the replicas to converge', async () => (await disagreements()).length === 0, 45_000, 1000).catch(() => undefined);
  const left = await disagreements();
  const seconds = (Date.now() - healed) / 1000;
  t.same(left.slice(0, 10), [], `every replica holds the same version of all ${KEYS} keys, ${seconds.toFixed(1)} s after healing (${left.length} differ)`);

  const through: string[] = [];
  for (let k = 0; k < KEYS; k++) {
    const answers = await Promise.all(NODES.map((n) => rest.request(c.url(n), 'GET', `/data/${k}`).then((r) => (r.status === 200 ? brief(r.body) : String(r.status)))));
    if (new Set(answers).size !== 1) through.push(`key ${k}: ${answers.join(' / ')}`);
    else if (deleted.has(k) && answers[0] !== '404') through.push(`key ${k} deleted, reads ${answers[0]}`);
  }
  t.same(through.slice(0, 10), [], 'every coordinator returns the same value; deleted keys stay deleted');
});
