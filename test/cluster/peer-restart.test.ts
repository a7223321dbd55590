// A peer restarted under load is picked up again without a storm of
// reconnects: one operation stream carries everything to it, a new one opens
// only when the next operation comes for a peer the link manager holds up,
// so a restart costs the coordinator a handful of streams, not one per
// request; and every write acknowledged around the restart reads back.
import t from 'tap';
import { TestCluster, sleep, waitFor } from './lib';

function metric(text: string, name: string, labels: string): number {
  const m = new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

t.test('a peer restarted under load: few new streams, nothing acknowledged lost', async (t) => {
  const c = await TestCluster.start(t, {
    nodes: ['n0', 'n1'],
    replicas: [['n0', 'n1'], ['n1', 'n0']],
    keySize: 8,
    opts: { quorum: 1, checkInterval: '500ms', operationTimeout: '1s' },
  });
  await c.waitLinks();
  const streams = async () => metric((await c.rest('n0', 'GET', '/metrics')).text, 'oyster_peer_streams_opened_total', 'peer="n1"');
  const acked = new Map<number, string>();
  let next = 0;
  let stop = false;
  let requests = 0;
  const load = Promise.all(
    Array.from({ length: 16 }, async () => {
      while (!stop) {
        const k = next++;
        const value = `value ${k}`;
        const r = await c.rest('n0', 'POST', `/data/${k}`, value).catch(() => null);
        requests++;
        if (r?.status === 201) acked.set(k, value);
        else await sleep(20);
      }
    }),
  );
  await sleep(1500);
  const before = await streams();
  t.ok(before >= 1, `one stream to n1 carries the load (${before} opened so far)`);
  const requestsBefore = requests;
  await c.stop('n1');
  await sleep(1000);
  await c.startNode('n1');
  await waitFor('n0 to see n1 again', () => c.sees('n0', 'n1'), 15_000);
  await sleep(1500);
  stop = true;
  await load;
  const opened = (await streams()) - before;
  t.comment(`${requests} requests (${requests - requestsBefore} around the restart), ${acked.size} acknowledged, ${opened} streams opened for the restart`);
  t.ok(opened >= 1 && opened <= 5, `the restart cost ${opened} new streams, not one per request`);
  let lost = 0;
  for (const [k, value] of acked) {
    const r = await c.rest('n1', 'GET', `/data/${k}`);
    if (r.status !== 200 || r.text !== value) lost++;
  }
  t.equal(lost, 0, `all ${acked.size} acknowledged writes read back`);
});
