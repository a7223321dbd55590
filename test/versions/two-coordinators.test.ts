// Two coordinators write the same keys at the same moment (bob clients over
// gRPC with the same timestamp, and REST clients within the same second):
// every replica keeps the same winner, so the replicas agree and every node
// reads the same value.
import t from 'tap';
import { GetSource, keyBytes } from '../helpers/grpc-client';
import { TestCluster, ring } from '../cluster/lib';

const NODES = ['n0', 'n1', 'n2'];
const KEYS = 200;

t.test('same-moment writes through two coordinators: one winner on every replica', async (t) => {
  const c = await TestCluster.start(t, { nodes: NODES, replicas: ring(NODES, 3, 3), keySize: 8, opts: { quorum: 2 } });
  await c.waitLinks();

  // gRPC: one timestamp for both writes of a key, sent at once.
  const ts = Math.floor(Date.now() / 1000);
  await Promise.all(
    Array.from({ length: KEYS }, (_, i) =>
      Promise.all([
        c.grpc('n0').put(keyBytes(i, 8), Buffer.from(`A${i}`), ts),
        c.grpc('n1').put(keyBytes(i, 8), Buffer.from(`B${i}`), ts),
      ]),
    ),
  );
  // REST: stamped by each coordinator, in the same second.
  const restKeys = Array.from({ length: KEYS }, (_, i) => KEYS + i);
  await Promise.all(restKeys.map((k) => Promise.all([c.put('n0', k, `A${k}`), c.put('n2', k, `C${k}`)])));
  // Replica writes beyond the quorum finish in the background.
  await new Promise((r) => setTimeout(r, 500));

  const differing: string[] = [];
  const winners = { first: 0, second: 0 };
  for (let k = 0; k < 2 * KEYS; k++) {
    const seen = await Promise.all(NODES.map((n) => c.grpc(n).get(keyBytes(k, 8), { force_node: true, source: GetSource.NORMAL }).then((b) => b.data.toString())));
    if (new Set(seen).size !== 1) differing.push(`key ${k}: ${NODES.map((n, i) => `${n}=${seen[i]}`).join(' ')}`);
    if (seen[0].startsWith('A')) winners.first++;
    else winners.second++;
    const read = await Promise.all(NODES.map((n) => c.get(n, k).then((b) => b?.toString())));
    if (new Set(read).size !== 1 || read[0] !== seen[0]) differing.push(`key ${k} read through the nodes: ${read.join(' ')}; replicas hold ${seen[0]}`);
  }
  t.comment(`winners: ${JSON.stringify(winners)}`);
  t.same(differing.slice(0, 10), [], `all ${2 * KEYS} keys: every replica and every node agree (${differing.length} disagree)`);
});
