// Large values read in a cluster, within http_body_memory_limit: a node
// holding one of a vdisk's replicas sends a large value in parts (REST) or
// read within the budget (gRPC), as a node holding its only replica does,
// while the other replica answers for its version; read repair of a large
// value holds no more than the budget either, and reads it from a replica
// that holds it, or from the alien copy it was found in. A node that holds no replica of the key passes the value
// on from its peer in parts: its memory stays within the budget, ranges and
// HEAD are answered as on the holder, and a damaged part ends the answer
// short; alien copies, read while a replica is down, come the same way.
// Real oysterd processes over REST and gRPC.
import fs from 'node:fs';
import path from 'node:path';
import t, { Test } from 'tap';
import { flipByte, recordsIn } from '../helpers/blob-files';
import { BobClient, Status, codeOf, keyBytes } from '../helpers/grpc-client';
import { OysterProcess, startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { Rng } from '../robustness/lib';
import { peakRss } from '../helpers/memory';
import { waitFor } from './lib';

const MiB = 1024 * 1024;
const VALUE = 12 * MiB;

type Node = { proc: OysterProcess; address: string; disk: string };

/** The nodes `names`, both vdisks with a replica on each of `holders`, a 16 MiB budget. */
async function cluster(t: Test, names: string[], holders: string[], quorum: number, opts: { checkInterval?: string; extra?: Record<string, unknown> } = {}): Promise<Node[]> {
  const replicas = [0, 1].map(() => holders.map((n) => `${n}/disk1`));
  const files = await writeCluster(
    tempDir(t),
    { nodes: names.map((name) => ({ name })), replicas, keySize: 8 },
    { quorum, httpMaxBodySize: '64 MiB', checkInterval: opts.checkInterval, extra: { http_body_memory_limit: '16 MiB', ...opts.extra } },
  );
  return Promise.all(
    names.map(async (name) => {
      const proc = await startNode(files, name);
      t.teardown(async () => {
        if (proc.child.exitCode === null && proc.child.signalCode === null) await proc.stop();
      });
      return { proc, address: files.addresses[name], disk: files.disks[name].disk1 };
    }),
  );
}

/** Two nodes; both vdisks have a replica on each, or (`n1Only`) on n1 alone. */
function pair(t: Test, n1Only = false): Promise<Node[]> {
  return n1Only ? cluster(t, ['n1', 'n2'], ['n1'], 1) : cluster(t, ['n1', 'n2'], ['n1', 'n2'], 2);
}

/** What `node`'s own replica holds of key once it holds a value (read repair is in the background); null after 5 s. */
async function repairedOn(node: BobClient, key: Buffer): Promise<Buffer | null> {
  for (let i = 0; i < 100; i++) {
    const held = await node.get(key, { force_node: true }).then(
      (b) => b.data,
      () => null,
    );
    if (held !== null) return held;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return null;
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
  t.ok((await repairedOn(peer, keyBytes(900, 8)))?.equals(value), "read repair wrote it to n2's replica, byte-exact");
  const metrics = await (await fetch(`${n1.proc.url}/metrics`)).text();
  t.match(metrics, /^oyster_read_repairs_total\{outcome="repaired"\} 1$/m, 'by read repair');
});

t.test('a node holding no replica passes large values on in parts', async (t) => {
  const [n1, n2] = await pair(t, true);
  const values = Array.from({ length: 8 }, (_, i) => new Rng(i + 50).bytes(VALUE));
  for (const [i, v] of values.entries()) t.equal((await fetch(`${n1.proc.url}/data/${1000 + i}`, { method: 'POST', body: v })).status, 201);
  const before = peakRss(n2.proc.child.pid!);
  const got = await Promise.all(values.map(async (_, i) => Buffer.from(await (await fetch(`${n2.proc.url}/data/${1000 + i}`)).arrayBuffer())));
  const grew = peakRss(n2.proc.child.pid!) - before;
  // Held whole, as values from peers were, they took 151 MiB; in parts, the
  // budget (16 MiB) and the parts' buffers not yet collected (40-44 MiB).
  t.ok(grew < 80 * MiB, `REST: n2's peak resident set grew ${(grew / MiB).toFixed(0)} MiB`);
  for (const [i, v] of values.entries()) t.ok(got[i].equals(v), `value ${i} byte-exact through n2`);

  const clients = Array.from({ length: 8 }, () => new BobClient(n2.address, 60_000));
  t.teardown(() => clients.forEach((c) => c.close()));
  const before2 = peakRss(n2.proc.child.pid!);
  const viaGrpc = await Promise.all(clients.map((c, i) => c.get(keyBytes(1000 + i, 8))));
  const grew2 = peakRss(n2.proc.child.pid!) - before2;
  t.ok(grew2 < 80 * MiB, `gRPC: n2's peak resident set grew ${(grew2 / MiB).toFixed(0)} MiB`);
  for (const [i, v] of values.entries()) t.ok(viaGrpc[i].data.equals(v), `value ${i} byte-exact through n2 over gRPC`);

  const v = values[0];
  const range = await fetch(`${n2.proc.url}/data/1000`, { headers: { Range: 'bytes=5000000-5000099' } });
  t.equal(range.status, 206);
  t.equal(range.headers.get('content-range'), `bytes 5000000-5000099/${VALUE}`);
  t.ok(Buffer.from(await range.arrayBuffer()).equals(v.subarray(5000000, 5000100)), 'a range through n2');
  const suffix = await fetch(`${n2.proc.url}/data/1000`, { headers: { Range: 'bytes=-3' } });
  t.ok(Buffer.from(await suffix.arrayBuffer()).equals(v.subarray(VALUE - 3)), 'a suffix range through n2');
  const head = await fetch(`${n2.proc.url}/data/1000`, { method: 'HEAD' });
  t.equal(head.headers.get('content-length'), String(VALUE), 'HEAD through n2');
  const direct = await fetch(`${n1.proc.url}/data/1000`, { method: 'HEAD' });
  t.equal(head.headers.get('etag'), direct.headers.get('etag'), 'the same ETag as on the holder');
});

t.test('a damaged part of a value passed on by a node holding no replica ends the answer short', async (t) => {
  const [n1, n2] = await pair(t, true);
  const value = new Rng(77).bytes(VALUE);
  t.equal((await fetch(`${n1.proc.url}/data/1100`, { method: 'POST', body: value })).status, 201);
  const key = keyBytes(1100, 8);
  let flipped = 0;
  const vdiskDir = path.join(n1.disk, 'bob', String(1100 % 2));
  for (const part of fs.readdirSync(vdiskDir)) {
    for (const f of fs.readdirSync(path.join(vdiskDir, part)).filter((n) => n.endsWith('.blob'))) {
      const blob = path.join(vdiskDir, part, f);
      const rec = recordsIn(blob, 8).find((r) => r.key.equals(key));
      if (!rec) continue;
      flipByte(blob, rec.offset + rec.headerSize + 8 * MiB + 5);
      flipped++;
    }
  }
  t.equal(flipped, 1, 'one byte flipped 8 MiB into the value');
  const res = await fetch(`${n2.proc.url}/data/1100`);
  let received = 0;
  let aborted = false;
  try {
    for await (const piece of res.body as unknown as AsyncIterable<Uint8Array>) received += piece.length;
  } catch {
    aborted = true;
  }
  t.ok(res.status >= 500 || aborted, `the read through n2 fails (${res.status}, ${aborted ? 'aborted' : 'complete'})`);
  t.ok(received < 8 * MiB + 64 * 1024, `no byte of the damaged block or after it is sent (${received} bytes)`);
  const before = await fetch(`${n2.proc.url}/data/1100`, { headers: { Range: `bytes=0-${MiB - 1}` } });
  t.ok(Buffer.from(await before.arrayBuffer()).equals(value.subarray(0, MiB)), 'a range before the damage reads through n2');
});

t.test('large alien copies are read in parts while a replica is down', async (t) => {
  const [n1, n2, n3] = (await cluster(t, ['n1', 'n2', 'n3'], ['n1', 'n2'], 1)).map((n) => n.proc);
  await n1.stop();
  const value = new Rng(88).bytes(VALUE);
  // n1's copy goes to an alien directory once n3 has seen n1 go.
  let status = 0;
  for (let i = 0; i < 100 && status !== 201; i++) {
    status = (await fetch(`${n3.url}/data/1200`, { method: 'POST', body: value })).status;
    if (status !== 201) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.equal(status, 201, 'written while a replica is down');
  // Written after the answer (the quorum was reached), read back from n2's replica.
  const alienHeld = async () => {
    const aliens = await Promise.all([n2, n3].map(async (n) => JSON.stringify(await (await fetch(`${n.url}/alien/dir`)).json())));
    return aliens.some((tree) => tree.includes('"n1"'));
  };
  await waitFor('an alien copy for n1', alienHeld, 30_000, 50).catch(() => undefined);
  t.ok(await alienHeld(), 'an alien copy for n1 is held');
  // A read through n3 asks n2's replica and, a replica missing, the alien copies: all opened, one answers, the others closed.
  for (const n of [n3, n2, n3]) {
    const got = await fetch(`${n.url}/data/1200`);
    t.equal(got.status, 200, n.name);
    t.ok(Buffer.from(await got.arrayBuffer()).equals(value), `${n.name} reads it, byte-exact`);
    const part = await fetch(`${n.url}/data/1200`, { headers: { Range: 'bytes=7000000-7000009' } });
    t.ok(Buffer.from(await part.arrayBuffer()).equals(value.subarray(7000000, 7000010)), `${n.name}: a range of it`);
  }
});

t.test('read repair of a large value passed on by a node holding no replica', async (t) => {
  const [n1, n2, { proc: n3 }] = await cluster(t, ['n1', 'n2', 'n3'], ['n1', 'n2'], 2);
  const client = new BobClient(n1.address, 60_000);
  const peer = new BobClient(n2.address, 60_000);
  t.teardown(() => [client, peer].forEach((c) => c.close()));
  // Written to n1's replica alone: n2's misses it. n3 holds neither.
  const value = new Rng(43).bytes(VALUE);
  await client.put(keyBytes(1300, 8), value, 1_700_000_000, { force_node: true });
  const got = Buffer.from(await (await fetch(`${n3.url}/data/1300`)).arrayBuffer());
  t.ok(got.equals(value), 'n3 passes it on, in parts');
  t.ok((await repairedOn(peer, keyBytes(1300, 8)))?.equals(value), "read repair wrote it to n2's replica, byte-exact");
  const metrics = await (await fetch(`${n3.url}/metrics`)).text();
  t.match(metrics, /^oyster_read_repairs_total\{outcome="repaired"\} 1$/m, 'by read repair, from n3');
});

t.test('read repair of a large value found only in alien copies reads it from them', async (t) => {
  // Alien hand-off (every check_interval) and anti-entropy kept away: only read repair delivers.
  const [n1, n2, n3] = await cluster(t, ['n1', 'n2', 'n3'], ['n1', 'n2'], 1, { checkInterval: '60s', extra: { anti_entropy: { enabled: false } } });
  const clients = [n1, n2, n3].map((n) => new BobClient(n.address, 60_000));
  t.teardown(() => clients.forEach((c) => c.close()));
  const [c1, c2, c3] = clients;
  // Alien copies for both replicas' owners on n3, which holds no replica; the replicas hold nothing.
  const values = [new Rng(44).bytes(VALUE), new Rng(45).bytes(VALUE)];
  for (const [i, v] of values.entries()) await c3.put(keyBytes(1400 + i, 8), v, 1_700_000_000, { force_node: true, remote_nodes: ['n1', 'n2'] });
  for (const c of [c1, c2]) t.equal(codeOf(await c.get(keyBytes(1400, 8), { force_node: true }).catch((e: unknown) => e)), Status.NOT_FOUND, 'a replica misses it');
  // Read through n3 (its own alien copy) and through n1 (n3's, asked once the replicas hold nothing): large values, read in parts.
  for (const [i, n] of [n3, n1].entries()) {
    const got = Buffer.from(await (await fetch(`${n.proc.url}/data/${1400 + i}`)).arrayBuffer());
    t.ok(got.equals(values[i]), `${n.proc.name} answers it from an alien copy`);
    for (const c of [c1, c2]) t.ok((await repairedOn(c, keyBytes(1400 + i, 8)))?.equals(values[i]), `read repair through ${n.proc.name} wrote it to a replica, byte-exact`);
    const metrics = await (await fetch(`${n.proc.url}/metrics`)).text();
    t.match(metrics, /^oyster_read_repairs_total\{outcome="repaired"\} 2$/m, `both replicas repaired by ${n.proc.name}, read again from the alien copy`);
    t.notMatch(metrics, /^oyster_read_repairs_total\{outcome="failed"\} [1-9]/m, 'no repair failed');
  }
});
