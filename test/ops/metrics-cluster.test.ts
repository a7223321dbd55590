// Cluster metrics of a 2-node cluster (docs/OPERATIONS.md): calls to the
// peer (oyster_peer_requests_total, its latency, oyster_peer_up), the peer's
// force_node requests on the local path, and aliens: with the replica node
// stopped a write leaves alien copies (oyster_aliens_pending_records); once it
// is back they are handed over (oyster_aliens_handed_over_total), which is
// logged at info.
import t from 'tap';
import { TestCluster, keyOn, waitFor } from '../cluster/lib';
import { LEVEL, logs, promtoolCheck, sample, scrape } from './lib';

const NODES = ['n1', 'n2'];
const VDISKS = 2;

t.test('metrics of a 2-node cluster', async (t) => {
  const c = await TestCluster.start(t, {
    nodes: NODES,
    replicas: [
      ['n1', 'n2'],
      ['n2', 'n1'],
    ],
    keySize: 8,
  });
  await c.waitLinks();
  const metrics = (n: string) => scrape(`${c.url(n)}/metrics`);
  const keys = (base: number) => Array.from({ length: 6 }, (_, i) => keyOn(i % VDISKS, VDISKS, i, base));

  t.test('peer calls and the local path', async (t) => {
    const m1 = await metrics('n1');
    const m2 = await metrics('n2');
    t.equal(sample(m1, 'oyster_peer_up', { peer: 'n2' }), 1, 'n1 sees n2 up');
    t.equal(sample(m2, 'oyster_peer_up', { peer: 'n1' }), 1, 'n2 sees n1 up');
    t.ok(sample(m1, 'oyster_peer_requests_total', { peer: 'n2', operation: 'ping', outcome: 'ok' }) >= 1, 'pings are peer calls');
    const written = keys(1000);
    for (const k of written) await c.put('n1', k, `value ${k}`);
    for (const k of written) t.equal((await c.get('n2', k))?.toString(), `value ${k}`);
    const moved = (after: string, before: string, name: string, labels: Record<string, string>) => sample(after, name, labels) - sample(before, name, labels);
    // With quorum 1 a write is acknowledged once one replica has it: the other may still be on its way.
    const a1 = await waitFor(
      'n1 to finish its calls to n2',
      async () => {
        const now = await metrics('n1');
        return moved(now, m1, 'oyster_peer_request_duration_seconds_count', { peer: 'n2', operation: 'put' }) >= written.length ? now : '';
      },
      5000,
    );
    const a2 = await metrics('n2');
    t.equal(moved(a1, m1, 'oyster_peer_requests_total', { peer: 'n2', operation: 'put', outcome: 'ok' }), written.length, 'n1 put every key to n2');
    t.equal(moved(a1, m1, 'oyster_peer_request_duration_seconds_count', { peer: 'n2', operation: 'put' }), written.length, 'and timed the calls');
    t.equal(moved(a1, m1, 'oyster_requests_total', { interface: 'rest', operation: 'put', path: 'coordinated', outcome: 'ok' }), written.length, 'n1 coordinated the puts');
    t.equal(moved(a2, m2, 'oyster_requests_total', { interface: 'grpc', operation: 'put', path: 'local', outcome: 'ok' }), written.length, 'n2 served them on the local path');
    t.equal(moved(a2, m2, 'oyster_requests_total', { interface: 'grpc', operation: 'put', path: 'coordinated' }), 0, 'not as coordinated requests');
    t.equal(moved(a2, m2, 'oyster_requests_total', { interface: 'rest', operation: 'get', path: 'coordinated', outcome: 'ok' }), written.length, 'n2 coordinated the gets');
    promtoolCheck(t, a1, 'a cluster node exposition');
  });

  t.test('aliens pending and handed over', async (t) => {
    await c.stop('n2');
    await waitFor('n1 to see n2 down', async () => sample(await metrics('n1'), 'oyster_peer_up', { peer: 'n2' }) === 0, 10_000);
    t.pass('oyster_peer_up{peer="n2"} is 0 on n1');
    const written = keys(2000);
    for (const k of written) await c.put('n1', k, `alien ${k}`);
    // With quorum 1 a write is acknowledged once the local replica has it; the alien copy follows.
    const m = await waitFor(
      'the alien copies',
      async () => {
        const now = await metrics('n1');
        return sample(now, 'oyster_aliens_pending_records', { owner: 'n2' }) === written.length ? now : '';
      },
      5000,
    );
    t.pass('oyster_aliens_pending_records{owner="n2"}: n1 holds an alien copy of every key for n2');
    const handedBefore = sample(m, 'oyster_aliens_handed_over_total', { owner: 'n2' });
    promtoolCheck(t, m, 'an exposition with aliens');

    await c.startNode('n2');
    // A partition leaves the pending gauge a moment before it is counted as handed over: wait for both.
    const after = await waitFor(
      'the hand-off to n2',
      async () => {
        const now = await metrics('n1');
        const done = sample(now, 'oyster_aliens_pending_records', { owner: 'n2' }) === 0;
        return done && sample(now, 'oyster_aliens_handed_over_total', { owner: 'n2' }) - handedBefore === written.length ? now : '';
      },
      20_000,
    );
    t.pass('oyster_aliens_handed_over_total{owner="n2"} counts every record, none is pending');
    t.equal(sample(after, 'oyster_peer_up', { peer: 'n2' }), 1, 'n2 is up again');
    const m2 = await metrics('n2');
    t.ok(sample(m2, 'oyster_requests_total', { interface: 'grpc', operation: 'put', path: 'local', outcome: 'ok' }) >= written.length, 'the restarted n2 received them on the local path');
    // The log lines come over a pipe of their own: they may arrive a little after the scrape.
    const handedOver = () => logs(c.proc('n1')).filter((l) => l.msg === 'alien partition handed over to its owner');
    await waitFor('the hand-off log lines', () => handedOver().reduce((n, l) => n + Number(l.records), 0) === written.length, 5000);
    t.pass('the hand-off is logged, and the logged record counts add up');
    t.ok(
      handedOver().every((l) => l.level === LEVEL.info && l.owner === 'n2' && typeof l.partition === 'string' && l.node === 'n1'),
      'at info, with the owner, the partition and the records delivered',
    );
    for (const k of written) t.equal((await c.get('n2', k))?.toString(), `alien ${k}`, `key ${k} through n2`);
  });
});
