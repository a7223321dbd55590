// Large values written in a cluster: a value that replicas on other Oyster
// nodes store goes to them in parts as it arrives (Operation PUT_PART), so
// the coordinator and the replicas hold a few MiB of it whatever its size,
// and a value several times http_body_memory_limit is stored — held whole,
// it was refused with 413. A replica that dies in the middle misses the
// value and holds nothing of it; the coordinator writes an alien copy for it,
// read back from a replica that took the value, as it does for a replica down
// from the start, and hands it over in parts on the replica's return; and
// anti-entropy or a read's repair brings it the value, a part at a time, as
// well. A client that hangs up leaves nothing on
// any node; a peer's put in parts that stops following its parts (out of
// order, aborted, its stream gone, idle past http_request_timeout) is
// dropped with nothing readable. Real oysterd processes over REST, gRPC and
// operations links.
import http from 'node:http';
import * as grpc from '@grpc/grpc-js';
import t, { Test } from 'tap';
import { newOperation } from '../../src/grpc/operation-codec';
import { OperationKind, OperationMsg, ResultMsg } from '../../src/grpc/proto';
import { bobApiService, keyBytes } from '../helpers/grpc-client';
import { hello, RawLink } from '../helpers/link-client';
import { RawStream } from '../helpers/raw-stream';
import { peakRss } from '../helpers/memory';
import { startRestNode } from '../rest/lib/node';
import { Rng } from '../robustness/lib';
import { sleep, TestCluster, waitFor } from './lib';

const MiB = 1024 * 1024;
const LIMIT = '16 MiB';
const VALUE = 96 * MiB;

/** Nodes `names`, both vdisks with a replica on each of `holders`, node.yaml's `extra` keys (a 16 MiB budget for values in flight unless they say otherwise). */
function cluster(t: Test, names: string[], holders: string[], quorum: number, extra: Record<string, unknown> = { http_body_memory_limit: LIMIT }, checkInterval?: string): Promise<TestCluster> {
  return TestCluster.start(t, {
    nodes: names,
    replicas: [holders, holders],
    keySize: 8,
    opts: { quorum, checkInterval, httpMaxBodySize: '128 MiB', extra },
  });
}

/** Whether `node`'s own storage holds a record of key (gRPC Exist with force_node). */
async function holds(c: TestCluster, node: string, key: number): Promise<boolean> {
  return (await c.grpc(node).exist([keyBytes(key, 8)], { force_node: true }))[0];
}

/** POST of `value` to key, its body written in 1 MiB pieces; `during(sent)` runs after each. Resolves with the status, or 0 when the request failed. */
function slowPost(url: string, key: number, value: Buffer, during: (sent: number, req: http.ClientRequest) => Promise<void> = async () => undefined): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(`${url}/data/${key}`, { method: 'POST', headers: { 'content-length': value.length } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    void (async () => {
      for (let at = 0; at < value.length && !req.destroyed; at += MiB) {
        if (!req.write(value.subarray(at, at + MiB))) await new Promise((r) => req.once('drain', r));
        await during(at + MiB, req);
      }
      if (!req.destroyed) req.end();
    })();
  });
}

t.test('a value six times http_body_memory_limit goes to the peer replica in parts', async (t) => {
  const c = await cluster(t, ['n1', 'n2'], ['n1', 'n2'], 2);
  await c.waitLinks();
  const value = new Rng(7).bytes(VALUE);
  const pids = ['n1', 'n2'].map((n) => c.proc(n).child.pid!);
  const before = pids.map(peakRss);
  const res = await fetch(`${c.url('n1')}/data/501`, { method: 'POST', body: value });
  t.equal(res.status, 201, `a ${VALUE / MiB} MiB value is stored with a ${LIMIT} limit`);
  pids.forEach((pid, i) => {
    const grew = peakRss(pid) - before[i];
    // Held whole, the value alone is 96 MiB on the coordinator.
    t.ok(grew < 64 * MiB, `n${i + 1}: peak resident set grew ${(grew / MiB).toFixed(0)} MiB`);
  });
  for (const n of ['n1', 'n2']) {
    t.ok(await holds(c, n, 501), `${n}'s own replica holds the record`);
    const got = Buffer.from(await (await fetch(`${c.url(n)}/data/501`)).arrayBuffer());
    t.ok(got.equals(value), `read through ${n}, byte-exact`);
  }
});

t.test('a node that holds no replica passes the value on in parts to both', async (t) => {
  const c = await cluster(t, ['n1', 'n2', 'n3'], ['n2', 'n3'], 2);
  await c.waitLinks();
  const value = new Rng(8).bytes(VALUE);
  const pid = c.proc('n1').child.pid!;
  const before = peakRss(pid);
  t.equal((await fetch(`${c.url('n1')}/data/502`, { method: 'POST', body: value })).status, 201);
  const grew = peakRss(pid) - before;
  t.ok(grew < 64 * MiB, `the coordinator's peak resident set grew ${(grew / MiB).toFixed(0)} MiB`);
  t.same(await Promise.all(['n1', 'n2', 'n3'].map((n) => holds(c, n, 502))), [false, true, true], 'n2 and n3 hold it, n1 nothing');
  for (const n of ['n2', 'n3']) {
    const got = Buffer.from(await (await fetch(`${c.url(n)}/data/502`)).arrayBuffer());
    t.ok(got.equals(value), `read through ${n}, byte-exact`);
  }
});

t.test('64 uploads of 8 MiB at once through a cluster: each stored on both replicas, or refused before its body', async (t) => {
  // The default limit lets 128 such uploads stream at once, the windows of 64 more than may wait for one peer.
  const c = await cluster(t, ['n1', 'n2'], ['n1', 'n2'], 2, {});
  await c.waitLinks();
  const value = new Rng(16).bytes(8 * MiB);
  const answers = await Promise.all(
    Array.from({ length: 64 }, async (_, i) => {
      const res = await fetch(`${c.url('n1')}/data/${700 + i}`, { method: 'POST', body: value });
      return { status: res.status, msg: ((await res.json()) as { msg: string }).msg };
    }),
  );
  const stored = answers.filter((a) => a.status === 201).length;
  // Parts waiting for a peer are the client's windows: they hold no room of their own to run out of.
  const other = answers.filter((a) => a.status !== 201 && !(a.status === 503 && a.msg.includes('http_body_memory_limit')));
  t.same(other, [], 'no upload fails on its way to the replicas');
  t.ok(stored >= 32, `${stored} of 64 stored (the rest refused for want of room, before their body)`);
  for (const i of [0, 63]) {
    if (answers[i].status !== 201) continue;
    t.same([await holds(c, 'n1', 700 + i), await holds(c, 'n2', 700 + i)], [true, true], `upload ${i} is on both replicas`);
  }
});

t.test('a replica killed in the middle of a value holds nothing of it; the other takes it within quorum', async (t) => {
  const c = await cluster(t, ['n1', 'n2'], ['n1', 'n2'], 1);
  await c.waitLinks();
  // Within the limit, so that a replica's copy can be read whole with force_node.
  const value = new Rng(9).bytes(12 * MiB);
  const status = await slowPost(c.url('n1'), 503, value, async (sent) => {
    if (sent === 6 * MiB) await c.kill('n2');
    await sleep(20);
  });
  t.equal(status, 201, 'the put succeeds on the replica left (quorum 1)');
  const got = await c.grpc('n1').get(keyBytes(503, 8), { force_node: true });
  t.ok(got.data.equals(value), "n1's replica holds it byte-exact");
  await c.startNode('n2');
  // Anti-entropy may have brought it whole by now; never a part of it.
  const held = await c
    .freshGrpc('n2')
    .get(keyBytes(503, 8), { force_node: true })
    .then(
      (b) => b.data,
      () => null,
    );
  t.ok(held === null || held.equals(value), `n2 holds ${held === null ? 'nothing' : 'the whole value'} after its restart`);
});

/**
 * Nodes n1 and n2 holding both vdisks, quorum 1, node.yaml's `extra` keys:
 * a value of 48 MiB, three times the limit, written to key through n3 while
 * n2 is killed in the middle of it; n3, which wrote the alien copy for n2,
 * stopped with it; n2 started again, without the value.
 */
async function missedByN2(t: Test, key: number, seed: number, extra: Record<string, unknown>): Promise<{ c: TestCluster; value: Buffer }> {
  const c = await cluster(t, ['n1', 'n2', 'n3'], ['n1', 'n2'], 1, { http_body_memory_limit: LIMIT, ...extra }, '500ms');
  await c.waitLinks();
  const value = new Rng(seed).bytes(48 * MiB);
  const status = await slowPost(c.url('n3'), key, value, async (sent) => {
    if (sent === 8 * MiB) await c.kill('n2');
  });
  t.equal(status, 201, 'stored on n1 alone');
  await waitFor('the alien copy for n2 on n3', async () => (await c.alienDir('n3')).length > 0, 30_000, 100);
  await c.stop('n3');
  await c.startNode('n2');
  return { c, value };
}

t.test('a replica that missed a value larger than the limit gets it from anti-entropy, in parts', async (t) => {
  const { c, value } = await missedByN2(t, 506, 15, { anti_entropy: { interval: '2s' } });
  await waitFor('n2 to hold the value', () => holds(c, 'n2', 506), 60_000, 250);
  const pid = c.proc('n2').child.pid!;
  t.ok(peakRss(pid) < 256 * MiB, `n2's peak resident set ${(peakRss(pid) / MiB).toFixed(0)} MiB`);
  // With n1 stopped, n2 answers from its own replica.
  await c.stop('n1');
  const got = Buffer.from(await (await fetch(`${c.url('n2')}/data/506`)).arrayBuffer());
  t.ok(got.equals(value), "n2's copy is byte-exact");
});

t.test('a replica that missed a value larger than the limit is repaired by a read, in parts', async (t) => {
  const { c, value } = await missedByN2(t, 507, 18, { anti_entropy: { enabled: false } });
  await c.waitLinks();
  t.equal(await holds(c, 'n2', 507), false, 'n2 missed it');
  const read = Buffer.from(await (await fetch(`${c.url('n1')}/data/507`)).arrayBuffer());
  t.ok(read.equals(value), 'a GET through n1 reads it');
  await waitFor('n2 to be repaired', () => holds(c, 'n2', 507), 30_000, 250);
  const metrics = await (await fetch(`${c.url('n1')}/metrics`)).text();
  t.match(metrics, /oyster_read_repairs_total\{outcome="repaired"\} [1-9]/, 'counted as repaired');
  await c.stop('n1');
  const got = Buffer.from(await (await fetch(`${c.url('n2')}/data/507`)).arrayBuffer());
  t.ok(got.equals(value), "n2's copy is byte-exact");
});

/** Waits until n1's alien copies were all handed over, then reads key through n2 alone (n1 stopped). */
async function readFromN2Alone(c: TestCluster, key: number): Promise<Buffer> {
  await waitFor("n1's alien copies to be handed over", async () => (await c.alienDir('n1')).length === 0, 60_000, 250);
  await c.stop('n1');
  return Buffer.from(await (await fetch(`${c.url('n2')}/data/${key}`)).arrayBuffer());
}

t.test('a value larger than the limit written while a replica is down: an alien copy on the coordinator, handed over in parts', async (t) => {
  // Quorum 2 of 2: the write succeeds only with the alien copy, as in bob; anti-entropy off, so the hand-off alone brings it.
  const c = await cluster(t, ['n1', 'n2'], ['n1', 'n2'], 2, { http_body_memory_limit: LIMIT, anti_entropy: { enabled: false } }, '500ms');
  await c.waitLinks();
  await c.stop('n2');
  await waitFor('n1 to see n2 down', () => !c.sees('n1', 'n2'), 15_000);
  const value = new Rng(19).bytes(48 * MiB);
  const pid = c.proc('n1').child.pid!;
  const before = peakRss(pid);
  t.equal((await fetch(`${c.url('n1')}/data/508`, { method: 'POST', body: value })).status, 201, "stored: n1's replica and an alien copy for n2");
  const grew = peakRss(pid) - before;
  t.ok(grew < 40 * MiB, `n1's peak resident set grew ${(grew / MiB).toFixed(0)} MiB`);
  t.ok((await c.alienDir('n1')).some((p) => p.startsWith('n2/')), 'n1 holds an alien copy for n2');
  t.ok(await holds(c, 'n1', 508), "n1's replica holds it");
  await c.startNode('n2');
  const got = await readFromN2Alone(c, 508);
  t.ok(got.equals(value), "n2's replica, handed the copy, holds it byte-exact");
});

t.test('a replica killed in the middle of a value larger than the limit gets an alien copy, read back from the replica that took it', async (t) => {
  const c = await cluster(t, ['n1', 'n2'], ['n1', 'n2'], 1, { http_body_memory_limit: LIMIT, anti_entropy: { enabled: false } }, '500ms');
  await c.waitLinks();
  const value = new Rng(20).bytes(48 * MiB);
  const status = await slowPost(c.url('n1'), 509, value, async (sent) => {
    if (sent === 8 * MiB) await c.kill('n2');
  });
  t.equal(status, 201, 'stored on n1 (quorum 1)');
  await waitFor('an alien copy for n2 on n1', async () => (await c.alienDir('n1')).some((p) => p.startsWith('n2/')), 30_000, 100);
  await c.startNode('n2');
  const got = await readFromN2Alone(c, 509);
  t.ok(got.equals(value), "n2's replica, handed the copy, holds it byte-exact");
});

t.test("a value larger than the limit for a replica on a stopped disk: an alien copy for the node itself, in parts, handed back once the disk serves", async (t) => {
  // vdisk 1 (odd keys) on d2; the alien directory on d1.
  const node = await startRestNode(t, {
    spec: { nodes: [{ name: 'n1', disks: ['d1', 'd2'] }], replicas: [['n1/d1'], ['n1/d2']], keySize: 8 },
    opts: { httpMaxBodySize: '128 MiB', checkInterval: '500ms', extra: { http_body_memory_limit: LIMIT } },
  });
  const alienDir = async () => ((await (await fetch(`${node.url}/alien/dir`)).json()) as { children: Array<{ name: string }> }).children.map((o) => o.name);
  t.equal((await fetch(`${node.url}/disks/d2/stop`, { method: 'POST' })).status, 200, 'd2 stopped');
  const value = new Rng(21).bytes(48 * MiB);
  t.equal((await fetch(`${node.url}/data/511`, { method: 'POST', body: value })).status, 201, 'stored');
  t.same(await alienDir(), ['n1'], 'as an alien copy held for n1');
  t.ok(Buffer.from(await (await fetch(`${node.url}/data/511`)).arrayBuffer()).equals(value), 'read back byte-exact from the alien copy');
  t.equal((await fetch(`${node.url}/disks/d2/start`, { method: 'POST' })).status, 200, 'd2 started');
  await waitFor('the alien copy handed back to d2', async () => (await fetch(`${node.url}/vdisks/1/records/count`)).status === 200 && (await (await fetch(`${node.url}/vdisks/1/records/count`)).json()) === 1, 30_000, 250);
  t.ok(Buffer.from(await (await fetch(`${node.url}/data/511`)).arrayBuffer()).equals(value), "read back byte-exact from d2's replica");
});

t.test('a client that hangs up in the middle leaves nothing on either replica', async (t) => {
  const c = await cluster(t, ['n1', 'n2'], ['n1', 'n2'], 2);
  await c.waitLinks();
  const value = new Rng(10).bytes(12 * MiB);
  const status = await slowPost(c.url('n1'), 504, value, async (sent, req) => {
    if (sent === 6 * MiB) req.destroy();
  });
  t.equal(status, 0, 'the request is cut');
  await sleep(500);
  t.same([await holds(c, 'n1', 504), await holds(c, 'n2', 504)], [false, false], 'neither replica holds the key');
  // Nothing left open: the same key is written whole afterwards, at once.
  t.equal((await fetch(`${c.url('n1')}/data/504`, { method: 'POST', body: value })).status, 201);
  for (const n of ['n1', 'n2']) t.ok((await c.grpc(n).get(keyBytes(504, 8), { force_node: true })).data.equals(value), `${n} holds the value written next`);
});

/** A gRPC server speaking bob's API alone (Operations is UNIMPLEMENTED there) at `address`; the values its Put got. */
async function fakeBob(t: Test, address: string): Promise<Buffer[]> {
  const puts: Buffer[] = [];
  const server = new grpc.Server({ 'grpc.max_receive_message_length': -1 });
  const done = (_call: unknown, cb: (err: null, res: object) => void) => cb(null, {});
  server.addService(bobApiService, {
    Ping: done,
    Put: (call: { request: { data?: { data: Buffer } } }, cb: (err: null, res: object) => void) => {
      puts.push(call.request.data?.data ?? Buffer.alloc(0));
      cb(null, {});
    },
    Get: done,
    Exist: done,
    Delete: done,
  });
  await new Promise<number>((resolve, reject) => server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port))));
  t.teardown(() => server.forceShutdown());
  return puts;
}

/** Nodes n1 and a bob node, both vdisks on both, quorum 2, the limit 16 MiB; n1 alone started. */
function withBob(t: Test): Promise<TestCluster> {
  return TestCluster.start(
    t,
    { nodes: ['n1', 'bob'], replicas: [['n1', 'bob'], ['n1', 'bob']], keySize: 8, opts: { quorum: 2, checkInterval: '1s', httpMaxBodySize: '64 MiB', extra: { http_body_memory_limit: LIMIT } } },
    [],
  );
}

t.test('a replica on a bob node gets the value whole, as bob takes it', async (t) => {
  const c = await withBob(t);
  const puts = await fakeBob(t, c.address('bob'));
  await c.startNode('n1');
  await waitFor('n1 to see bob up', () => c.sees('n1', 'bob'), 15_000);
  const value = new Rng(14).bytes(4 * MiB);
  t.equal((await fetch(`${c.url('n1')}/data/505`, { method: 'POST', body: value })).status, 201, 'the write succeeds on both replicas');
  t.equal(puts.length, 1, 'bob got one Put');
  t.ok(puts[0]?.equals(value), 'with the whole value');
  t.ok((await c.grpc('n1').get(keyBytes(505, 8), { force_node: true })).data.equals(value), "n1's replica holds it");
});

t.test('alien copies for a bob node that was down are handed over whole, within the limit', async (t) => {
  const c = await withBob(t);
  await c.startNode('n1');
  // Written in parts to n1's replica while bob is down, each with an alien copy for bob (quorum 2).
  const small = new Rng(22).bytes(4 * MiB);
  const large = new Rng(23).bytes(20 * MiB);
  t.equal((await fetch(`${c.url('n1')}/data/512`, { method: 'POST', body: small })).status, 201, 'a value of 4 MiB is stored');
  t.equal((await fetch(`${c.url('n1')}/data/513`, { method: 'POST', body: large })).status, 201, 'a value of 20 MiB, over the limit, is stored');
  const puts = await fakeBob(t, c.address('bob'));
  await waitFor('the value within the limit handed over', () => puts.length > 0, 30_000, 100);
  // A few more rounds of the hand-off (check_interval 1 s): the larger one never goes whole.
  await sleep(3000);
  // Each round that fails sends the partition's other records again, harmlessly.
  t.ok(puts.length >= 1 && puts.every((p) => p.equals(small)), `bob got ${puts.length} Put(s), each of the value within the limit, whole`);
  t.equal((await c.alienDir('n1')).length, 1, "the larger value's alien partition stays on n1");
  t.ok(c.proc('n1').output.some((l) => l.includes('alien hand-off failed') && l.includes('http_body_memory_limit')), 'its hand-off failed for want of room, and is retried');
});

// The peer's side, spoken directly over an operations link.

const part = (id: number, key: number, size: number, offset: number, value: Buffer, version = 1_700_000_000): OperationMsg =>
  Object.assign(newOperation(OperationKind.PUT_PART, [keyBytes(key, 8)]), { id, size, offset, value, timestamp: version, tick: 0, node: 0 });

/** Results from a link until `ids` all answered. */
async function results(link: RawLink, ids: number[]): Promise<Map<number, ResultMsg>> {
  const got = new Map<number, ResultMsg>();
  while (!ids.every((id) => got.has(id))) {
    const f = await link.next();
    if (f?.type !== 'batch') throw new Error(`the link ended: ${JSON.stringify(f)}`);
    for (const r of f.batch.results) got.set(r.id, r);
  }
  return got;
}

async function partsNode(t: Test) {
  const node = await startRestNode(t, { spec: { nodes: [{ name: 'solo' }], vdisks: 2, keySize: 8 }, opts: { extra: { http_request_timeout: '2s', http_headers_timeout: '1s' } } });
  const open = async () => {
    const link = await RawLink.open(node.files.addresses.solo, hello(''));
    t.teardown(() => link.close());
    return link;
  };
  const status = async (key: number) => (await fetch(`${node.url}/data/${key}`)).status;
  return { node, open, status };
}

const INVALID_ARGUMENT = 3;

t.test('a peer sends a value in parts: each part answered once written, the value readable once whole', async (t) => {
  const { node, open, status } = await partsNode(t);
  const link = await open();
  const value = new Rng(11).bytes(600 * 1024);
  const parts = [0, 1, 2].map((i) => part(i + 1, 601, value.length, i * 200 * 1024, value.subarray(i * 200 * 1024, (i + 1) * 200 * 1024)));
  link.send({ ops: parts.slice(0, 2) });
  const first = await results(link, [1, 2]);
  t.same([first.get(1)?.code ?? 0, first.get(2)?.code ?? 0], [0, 0], 'the first two parts are answered');
  t.equal(await status(601), 404, 'nothing is readable before the last part');
  link.send({ ops: [parts[2]] });
  t.equal((await results(link, [3])).get(3)?.code ?? 0, 0, 'the last part is answered with the put');
  t.ok(Buffer.from(await (await fetch(`${node.url}/data/601`)).arrayBuffer()).equals(value), 'the value reads back byte-exact');
});

t.test('the same over a Replicas.Operations gRPC stream; one that ends in the middle leaves nothing', async (t) => {
  const { node, status } = await partsNode(t);
  const value = new Rng(17).bytes(600 * 1024);
  const third = value.length / 3;
  const parts = [0, 1, 2].map((i) => part(i + 1, 621, value.length, i * third, value.subarray(i * third, (i + 1) * third)));
  const stream = new RawStream(node.files.addresses.solo);
  t.teardown(() => stream.close());
  stream.write(stream.frame(parts));
  await waitFor('the three parts', () => [1, 2, 3].every((id) => stream.results.has(id)), 10_000, 20);
  t.same([1, 2, 3].map((id) => stream.results.get(id)?.code ?? 0), [0, 0, 0], 'every part is answered');
  t.ok(Buffer.from(await (await fetch(`${node.url}/data/621`)).arrayBuffer()).equals(value), 'the value reads back byte-exact');

  const cut = new RawStream(node.files.addresses.solo);
  cut.write(cut.frame([part(1, 622, value.length, 0, value.subarray(0, third))]));
  await waitFor('the first part', () => cut.results.has(1), 10_000, 20);
  cut.close();
  await sleep(500);
  t.equal(await status(622), 404, 'a put whose stream ended before its last part holds nothing');
});

t.test('parts out of order, aborted, cut off or idle leave nothing readable', async (t) => {
  const { open, status } = await partsNode(t);
  const chunk = new Rng(12).bytes(256 * 1024);
  const size = 4 * chunk.length;

  const link = await open();
  link.send({ ops: [part(1, 611, size, 0, chunk), part(2, 611, size, 2 * chunk.length, chunk)] });
  const skipped = await results(link, [1, 2]);
  t.equal(skipped.get(2)?.code, INVALID_ARGUMENT, 'a part that skips bytes is refused');
  link.send({ ops: [part(3, 611, size, chunk.length, chunk)] });
  t.equal((await results(link, [3])).get(3)?.code, INVALID_ARGUMENT, 'and the put is dropped: its next part finds none open');
  link.send({ ops: [part(4, 612, size, chunk.length, chunk)] });
  t.equal((await results(link, [4])).get(4)?.code, INVALID_ARGUMENT, 'a part without its first is refused');
  link.send({ ops: [part(5, 613, size, 0, chunk), part(6, 613, size, 0, chunk)] });
  t.equal((await results(link, [5, 6])).get(6)?.code, INVALID_ARGUMENT, 'a part that repeats bytes is refused');

  link.send({ ops: [part(7, 614, size, 0, chunk)] });
  t.equal((await results(link, [7])).get(7)?.code ?? 0, 0, 'a first part is answered once written');
  link.send({ ops: [Object.assign(part(8, 614, size, 0, Buffer.alloc(0)), { abort: true })] });
  t.equal((await results(link, [8])).get(8)?.code ?? 0, 0, 'its abort is answered');

  const cut = await open();
  cut.send({ ops: [part(1, 615, size, 0, chunk)] });
  await results(cut, [1]);
  cut.close();

  link.send({ ops: [part(9, 616, size, 0, chunk)] });
  await results(link, [9]);
  await sleep(3000);
  link.send({ ops: [part(10, 616, size, chunk.length, chunk)] });
  t.equal((await results(link, [10])).get(10)?.code, INVALID_ARGUMENT, 'a put idle past http_request_timeout is dropped');

  for (const key of [611, 612, 613, 614, 615, 616]) t.equal(await status(key), 404, `key ${key} holds nothing`);
  // Nothing of them holds the blob open: a value written now to the same keys reads back.
  const value = new Rng(13).bytes(size);
  for (const key of [611, 615]) {
    link.send({ ops: [0, 1, 2, 3].map((i) => part(20 + i, key, size, i * chunk.length, value.subarray(i * chunk.length, (i + 1) * chunk.length), 1_700_000_001)) });
    const r = await results(link, [20, 21, 22, 23]);
    t.same([...r.values()].map((x) => x.code ?? 0), [0, 0, 0, 0], `key ${key} is written in parts again`);
    await waitFor(`key ${key}`, async () => (await status(key)) === 200, 5000);
  }
});
