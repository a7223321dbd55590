// Large values read in a cluster, within http_body_memory_limit: a node
// holding one of a vdisk's replicas sends a large value in parts (REST) or
// read within the budget (gRPC), as a node holding its only replica does,
// while the other replica answers for its version; read repair of a large
// value holds no more than the budget either. Real oysterd processes over
// REST and gRPC.
import fs from 'node:fs';
import t, { Test } from 'tap';
import { BobClient, Status, codeOf, keyBytes } from '../helpers/grpc-client';
import { OysterProcess, startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { Rng } from '../robustness/lib';

const MiB = 1024 * 1024;
const VALUE = 12 * MiB;

function peakRss(pid: number): number {
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
}

/** Two nodes; both vdisks have a replica on each. */
async function pair(t: Test): Promise<Array<{ proc: OysterProcess; address: string }>> {
  const files = await writeCluster(
    tempDir(t),
    { nodes: [{ name: 'n1' }, { name: 'n2' }], replicas: [['n1/disk1', 'n2/disk1'], ['n1/disk1', 'n2/disk1']], keySize: 8 },
    { quorum: 2, httpMaxBodySize: '64 MiB', extra: { http_body_memory_limit: '16 MiB' } },
  );
  return Promise.all(
    ['n1', 'n2'].map(async (name) => {
      const proc = await startNode(files, name);
      t.teardown(async () => {
        if (proc.child.exitCode === null && proc.child.signalCode === null) await proc.stop();
      });
      return { proc, address: files.addresses[name] };
    }),
  );
}

t.test('8 REST GETs of 12 MiB at once on a node holding one of two replicas', async (t) => {
  const [n1] = await pair(t);
  const values = Array.from({ length: 8 }, (_, i) => new Rng(i + 1).bytes(VALUE));
  for (const [i, v] of values.entries()) t.equal((await fetch(`${n1.proc.url}/data/${700 + i}`, { method: 'POST', body: v })).status, 201);
  const before = peakRss(n1.proc.child.pid!);
  const got = await Promise.all(values.map(async (_, i) => Buffer.from(await (await fetch(`${n1.proc.url}/data/${700 + i}`)).arrayBuffer())));
  const grew = peakRss(n1.proc.child.pid!) - before;
  // Read whole, they took 72 MiB more than the writes before them.
  t.ok(grew < 32 * MiB, `peak resident set grew ${(grew / MiB).toFixed(0)} MiB`);
  for (const [i, v] of values.entries()) t.ok(got[i].equals(v), `value ${i} byte-exact`);
});

t.test('8 gRPC Gets of 12 MiB at once on a node holding one of two replicas', async (t) => {
  const [n1] = await pair(t);
  const clients = Array.from({ length: 8 }, () => new BobClient(n1.address, 60_000));
  t.teardown(() => clients.forEach((c) => c.close()));
  const values = Array.from({ length: 8 }, (_, i) => new Rng(i + 1).bytes(VALUE));
  for (const [i, v] of values.entries()) await clients[0].put(keyBytes(800 + i, 8), v, 1_700_000_000);
  const before = peakRss(n1.proc.child.pid!);
  const got = await Promise.all(clients.map((c, i) => c.get(keyBytes(800 + i, 8))));
  const grew = peakRss(n1.proc.child.pid!) - before;
  // Read whole without the budget, they took 156 MiB more than the writes before them.
  t.ok(grew < 64 * MiB, `peak resident set grew ${(grew / MiB).toFixed(0)} MiB`);
  for (const [i, v] of values.entries()) t.ok(got[i].data.equals(v), `value ${i} byte-exact`);
});

t.test('read repair of a large value read in parts', async (t) => {
  const [n1, n2] = await pair(t);
  const client = new BobClient(n1.address, 60_000);
  const peer = new BobClient(n2.address, 60_000);
  t.teardown(() => [client, peer].forEach((c) => c.close()));
  // Written to n1's replica alone: n2's misses it.
  const value = new Rng(42).bytes(VALUE);
  await client.put(keyBytes(900, 8), value, 1_700_000_000, { force_node: true });
  t.equal(codeOf(await peer.get(keyBytes(900, 8), { force_node: true }).catch((e: unknown) => e)), Status.NOT_FOUND, "n2's replica misses it");
  const got = Buffer.from(await (await fetch(`${n1.proc.url}/data/900`)).arrayBuffer());
  t.ok(got.equals(value), 'n1 answers it, in parts');
  let repaired: Buffer | null = null;
  for (let i = 0; i < 100 && repaired === null; i++) {
    repaired = await peer.get(keyBytes(900, 8), { force_node: true }).then(
      (b) => b.data,
      () => null,
    );
    if (repaired === null) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.ok(repaired?.equals(value), "read repair wrote it to n2's replica, byte-exact");
  const metrics = await (await fetch(`${n1.proc.url}/metrics`)).text();
  t.match(metrics, /^oyster_read_repairs_total\{outcome="repaired"\} 1$/m, 'by read repair');
});
