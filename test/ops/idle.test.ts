// An idle node leaves the machine alone: its event loop sleeps between the
// node's timers instead of waking every few milliseconds (prom-client's
// event-loop delay histogram sampled every 10 ms by default, 100 wake-ups a
// second; docs/OPERATIONS.md). Counted from outside, as an operator would:
// the voluntary context switches of the node's main thread in /proc.
import fs from 'node:fs';
import t from 'tap';
import { writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { runNode } from './lib';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Times the main thread of `pid` gave up the CPU to wait, so far. */
function mainThreadWaits(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
  return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1]);
}

t.test('an idle node wakes rarely', { skip: process.platform !== 'linux' ? 'reads /proc' : false }, async (t) => {
  const dir = tempDir(t, 'oyster-idle-');
  const files = await writeCluster(dir, { nodes: [{ name: 'n1' }], replicas: [['n1/disk1'], ['n1/disk1']], keySize: 8 });
  const proc = await runNode(t, files, 'n1');
  const pid = proc.child.pid!;
  // Scraped once, so that the metrics' collectors have run as under Prometheus.
  t.equal((await fetch(`${proc.url}/metrics`)).status, 200);
  await sleep(2000);
  const seconds = 4;
  const before = mainThreadWaits(pid);
  await sleep(seconds * 1000);
  const perSecond = (mainThreadWaits(pid) - before) / seconds;
  // 16 a second measured on this design; 100 and more with a 10 ms sampler.
  t.ok(perSecond < 50, `the main thread woke ${perSecond} times a second while idle`);
});
