// Operations streams and links within the limit kept for peers' batches (a
// second http_body_memory_limit): whoever opens one (a peer, or anyone where
// authentication_type is None) and sends large batches faster than the node
// takes them, or stalls in the middle of them, has the node hold at most the
// limit of them; small operations are served meanwhile, and the stalled
// batches are written once they come whole — or, read for longer than
// http_request_timeout, end their stream. Batches are weighed before they
// are decoded: an EXIST of more keys than the limit has room for is
// refused, a batch of too many operations ends its stream, and a peer asks
// about many keys a few thousand at a time. Two nodes coordinating writes to
// each other do not wait for each other's room, and random batches, stalls
// and hang-ups give every room back. Real oysterd processes.
import fs from 'node:fs';
import t from 'tap';
import type { Test } from 'tap';
import YAML from 'yaml';
import { encodeOperationBatch, newOperation } from '../../src/grpc/operation-codec';
import { OperationKind, OperationMsg, ResultMsg } from '../../src/grpc/proto';
import { frame, hello, RawLink } from '../helpers/link-client';
import { RawStream } from '../helpers/raw-stream';
import { peakRss } from '../helpers/memory';
import { batchBytes, bodyBytes } from '../rest/lib/metrics';
import { startRestNode } from '../rest/lib/node';
import { TestCluster, sleep, waitFor } from './lib';
import { badLogLines, Rng, seedFromEnv } from '../robustness/lib';

const MIB = 1024 * 1024;
const LIMIT = 16 * MIB;
const VALUE = 12 * MIB;
const SENDERS = 8;
// What a stalled sender keeps back of its batch.
const KEPT = 1024;

const key = (n: number) => {
  const k = Buffer.alloc(8);
  k.writeBigUInt64LE(BigInt(n));
  return k;
};
const put = (id: number, n: number, value: Buffer): OperationMsg =>
  Object.assign(newOperation(OperationKind.PUT, [key(n)]), { id, value, timestamp: String(1000 + n), tick: '0', node: 0 });
const exist = (id: number, keys: number): OperationMsg => Object.assign(newOperation(OperationKind.EXIST, Array.from({ length: keys }, (_, i) => key(i))), { id, source: 0 });
const valueOf = (n: number) => Buffer.alloc(VALUE, n);

async function budgetNode(t: Test) {
  const node = await startRestNode(t, { spec: { nodes: [{ name: 'solo' }], vdisks: 2, keySize: 8 }, opts: { extra: { http_body_memory_limit: LIMIT } } });
  return { node, address: node.files.addresses.solo, pid: node.proc.child.pid! };
}

/** Results from a link until `ids` all answered (or the node closed it). */
async function linkResults(link: RawLink, ids: number[]): Promise<Map<number, ResultMsg>> {
  const got = new Map<number, ResultMsg>();
  while (!ids.every((id) => got.has(id))) {
    const f = await link.next();
    if (f?.type !== 'batch') break;
    for (const r of f.batch.results) got.set(r.id, r);
  }
  return got;
}

async function within<T>(ms: number, p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

t.test('links stalling large batches hold at most the limit; small operations are served meanwhile', async (t) => {
  const { node, address, pid } = await budgetNode(t);
  const links = await Promise.all(Array.from({ length: SENDERS }, () => RawLink.open(address, hello(''))));
  t.teardown(() => links.forEach((l) => l.close()));
  const before = peakRss(pid);
  const frames = links.map((_, i) => frame(1, encodeOperationBatch({ ops: [put(i + 1, i + 1, valueOf(i + 1))] })));
  links.forEach((l, i) => l.socket.write(frames[i].subarray(0, frames[i].length - KEPT)));
  await sleep(2000);
  const held = await batchBytes(node.url);
  t.ok(held > 0 && held <= LIMIT, `the node counts ${held} bytes of batches, within the limit`);
  const grew = peakRss(pid) - before;
  // Read whole, the eight batches took the node's peak resident set up by 96 MiB and more.
  t.ok(grew < LIMIT + 24 * MIB, `peak resident set grew ${(grew / MIB).toFixed(0)} MiB with ${SENDERS} batches of 12 MiB stalled`);

  const small = await RawLink.open(address, hello(''));
  t.teardown(() => small.close());
  small.send({ ops: [put(100, 100, Buffer.from('small'))] });
  const written = await within(3000, linkResults(small, [100]), 'a small Put');
  t.equal(written.get(100)?.code ?? 0, 0, 'a small Put on another link is served meanwhile');
  small.send({ ops: [Object.assign(newOperation(OperationKind.GET, [key(100)]), { id: 101, source: 0 })] });
  const read = await within(3000, linkResults(small, [101]), 'a small Get');
  t.equal(read.get(101)?.value?.toString(), 'small', 'and read back');

  links.forEach((l, i) => l.socket.write(frames[i].subarray(frames[i].length - KEPT)));
  const results = await within(60_000, Promise.all(links.map((l, i) => linkResults(l, [i + 1]))), 'the stalled batches');
  t.same(results.map((r, i) => r.get(i + 1)?.code ?? 0), new Array(SENDERS).fill(0), 'each stalled batch is written once it came whole, in turn');
  for (const n of [1, SENDERS]) {
    const res = await fetch(`${node.url}/data/${n}`);
    t.ok(Buffer.from(await res.arrayBuffer()).equals(valueOf(n)), `value ${n} reads back byte-exact`);
  }
  await waitFor('the budget to empty', async () => (await batchBytes(node.url)) === 0, 5000);
  t.pass('every room was given back');
});

t.test('gRPC Operations streams stalling large batches hold at most the limit', async (t) => {
  const { node, address, pid } = await budgetNode(t);
  // A session per stream: a paused stream's bytes must not stall the others' on a shared connection window.
  const streams = Array.from({ length: SENDERS }, () => new RawStream(address));
  t.teardown(() => streams.forEach((s) => s.close()));
  const before = peakRss(pid);
  const messages = streams.map((s, i) => s.frame([put(i + 1, i + 1, valueOf(i + 1))]));
  streams.forEach((s, i) => s.write(messages[i].subarray(0, messages[i].length - KEPT)));
  await sleep(2000);
  const held = await batchBytes(node.url);
  t.ok(held > 0 && held <= LIMIT, `the node counts ${held} bytes of batches, within the limit`);
  const grew = peakRss(pid) - before;
  t.ok(grew < LIMIT + 24 * MIB, `peak resident set grew ${(grew / MIB).toFixed(0)} MiB with ${SENDERS} messages of 12 MiB stalled`);
  streams.forEach((s, i) => s.write(messages[i].subarray(messages[i].length - KEPT)));
  await waitFor('the stalled messages', () => streams.every((s, i) => s.ended || s.results.has(i + 1)), 60_000, 20);
  t.same(streams.map((s, i) => (s.results.has(i + 1) ? (s.results.get(i + 1)!.code ?? 0) : 'none')), new Array(SENDERS).fill(0), 'each is written once it came whole');
  await waitFor('the budget to empty', async () => (await batchBytes(node.url)) === 0, 5000);
  t.pass('every room was given back');
});

t.test('a batch read for longer than http_request_timeout ends its link or stream and gives its room back; one that waited for room longer than that is not cut', async (t) => {
  const TIMEOUT = 2000;
  const node = await startRestNode(t, {
    spec: { nodes: [{ name: 'solo' }], vdisks: 2, keySize: 8 },
    opts: { extra: { http_body_memory_limit: LIMIT, http_request_timeout: '2s', http_headers_timeout: '1s' } },
  });
  const address = node.files.addresses.solo;
  const started = Date.now();
  // A: a link that sends most of a batch at once, then 16 bytes every 200 ms: its bytes keep coming, its batch never does.
  const trickler = await RawLink.open(address, hello(''));
  t.teardown(() => trickler.close());
  const a = frame(1, encodeOperationBatch({ ops: [put(1, 1, valueOf(1))] }));
  trickler.socket.write(a.subarray(0, a.length - KEPT));
  const trickle = setInterval(() => trickler.socket.write(Buffer.alloc(16)), 200);
  t.teardown(() => clearInterval(trickle));
  await waitFor('A to be let in', async () => (await batchBytes(node.url)) > 0, 2000, 20);
  // S: a gRPC stream that stops in the middle of its message; it waits for A's room first.
  const stalled = new RawStream(address);
  t.teardown(() => stalled.close());
  const s = stalled.frame([put(2, 2, valueOf(2))]);
  stalled.write(s.subarray(0, s.length - KEPT));
  await sleep(300);
  // B: a link that sends a whole batch, and waits for the room A and then S hold, longer than the timeout.
  const patient = await RawLink.open(address, hello(''));
  t.teardown(() => patient.close());
  patient.send({ ops: [put(3, 3, valueOf(3))] });

  const cut = await within(4 * TIMEOUT, trickler.next(), 'the trickling link');
  const cutAt = Date.now() - started;
  t.equal(cut?.type === 'status' && cut.code, 4, `the trickling link ends with DEADLINE_EXCEEDED, after ${cutAt} ms`);
  t.match(cut?.type === 'status' && cut.details, /a batch of \d+ bytes did not arrive within http_request_timeout \(2000 ms\)/, 'naming the batch and the timeout');
  t.ok(cutAt >= TIMEOUT - 100 && cutAt < 3 * TIMEOUT, 'about the timeout after it was let in');
  await within(TIMEOUT, trickler.closed, 'the link to close');
  t.pass('and the node closed it though the sender kept its side open');

  await waitFor('the stalled stream to end', () => stalled.ended, 4 * TIMEOUT, 20);
  const streamCutAt = Date.now() - started;
  t.equal(stalled.status, 4, `the stalled stream ends with DEADLINE_EXCEEDED, after ${streamCutAt} ms`);
  t.ok(streamCutAt >= cutAt + TIMEOUT - 300, 'its time waiting for room did not count');

  const got = await within(4 * TIMEOUT, linkResults(patient, [3]), 'the patient batch');
  const waited = Date.now() - started;
  t.equal(got.get(3)?.code ?? 0, 0, `the batch that waited ${waited} ms for room, more than the timeout, is written`);
  const res = await fetch(`${node.url}/data/3`);
  t.ok(Buffer.from(await res.arrayBuffer()).equals(valueOf(3)), 'and reads back byte-exact');
  for (const n of [1, 2]) t.equal((await fetch(`${node.url}/data/${n}`)).status, 404, `the stalled batch ${n} wrote nothing`);
  await waitFor('the budget to empty', async () => (await batchBytes(node.url)) === 0, 5000);
  t.pass('every room was given back');
});

t.test('an EXIST whose keys would hold more than the limit is refused; a smaller one answered', async (t) => {
  const { address } = await budgetNode(t);
  const link = await RawLink.open(address, hello(''));
  t.teardown(() => link.close());
  // 100,000 keys of 8 bytes hold about 32 MB while they are looked up.
  link.send({ ops: [exist(1, 100_000)] });
  link.send({ ops: [exist(2, 1000)] });
  const got = await within(10_000, linkResults(link, [1, 2]), 'the EXISTs');
  t.equal(got.get(1)?.code, 8, 'RESOURCE_EXHAUSTED');
  t.match(got.get(1)?.details, /http_body_memory_limit .*fewer keys/, 'naming the limit and the remedy');
  t.equal(got.get(2)?.code ?? 0, 0, 'an EXIST of 1,000 keys on the same link is answered');
});

t.test('a batch of more small operations than the limit has room for ends the stream, undecoded', async (t) => {
  const { address, pid } = await budgetNode(t);
  const link = await RawLink.open(address, hello(''));
  t.teardown(() => link.close());
  // 100,000 DELETEs in 2 MB: decoded and run at once, they took the node up by 600 MB.
  const ops = Array.from({ length: 100_000 }, (_, i) => Object.assign(newOperation(OperationKind.DELETE, [key(i)]), { id: i + 1, timestamp: '5', tick: '0', node: 0 }));
  const before = peakRss(pid);
  link.send({ ops });
  const f = await within(20_000, link.next(), 'an answer');
  t.equal(f?.type === 'status' && f.code, 8, 'the link ends with RESOURCE_EXHAUSTED');
  t.match(f?.type === 'status' && f.details, /a batch of 100000 operations .*http_body_memory_limit.*smaller batches/, 'naming the batch, the limit and the remedy');
  const grew = peakRss(pid) - before;
  t.ok(grew < 32 * MIB, `peak resident set grew ${(grew / MIB).toFixed(0)} MiB`);
});

t.test('a peer asks about many keys a few thousand at a time', async (t) => {
  // n2 holds every key and has a small limit; n1 coordinates with the default one.
  const c = await TestCluster.start(t, { nodes: ['n1', 'n2'], replicas: [['n2']], keySize: 8 }, []);
  const yamlFile = c.files.nodeYaml.n2;
  fs.writeFileSync(yamlFile, YAML.stringify({ ...YAML.parse(fs.readFileSync(yamlFile, 'utf8')), http_body_memory_limit: 2 * MIB }));
  await Promise.all([c.startNode('n1'), c.startNode('n2')]);
  await c.waitLinks();
  for (const n of [5, 7000]) t.equal((await c.rest('n1', 'POST', `/data/${n}`, `value ${n}`)).status, 201, `key ${n} written through n1`);
  // 10,000 keys asked of n2 at once would hold about 3.2 MB there.
  const keys = Array.from({ length: 10_000 }, (_, i) => key(i));
  const found = await c.grpc('n1').exist(keys);
  t.same(
    found.flatMap((f, i) => (f ? [i] : [])),
    [5, 7000],
    'every key answered, the written ones found',
  );
});

t.test("writes each node coordinates to the other at once do not wait for each other's room", async (t) => {
  // Each node holds the bodies of the writes it coordinates while their
  // replica on the other node is written; those bodies fill most of its
  // limit. Were the peer's batches held in the same limit, each node's
  // batches would wait for room its own writes hold, and those writes for
  // the other node's batches: every write would wait for operation_timeout.
  const c = await TestCluster.start(t, {
    nodes: ['n1', 'n2'],
    replicas: [['n1', 'n2'], ['n1', 'n2']],
    keySize: 8,
    opts: { quorum: 2, operationTimeout: '20s', extra: { http_body_memory_limit: LIMIT } },
  });
  await c.waitLinks();
  const size = 6 * MIB;
  const writes = [1, 2, 3, 4].map((n) => ({ n, through: n % 2 ? 'n1' : 'n2', value: Buffer.alloc(size, n) }));
  const started = Date.now();
  const statuses = await Promise.all(writes.map((w) => c.rest(w.through, 'POST', `/data/${w.n}`, w.value).then((r) => r.status)));
  const took = Date.now() - started;
  t.same(statuses, [201, 201, 201, 201], 'two writes through each node at once, both replicas acknowledged');
  t.ok(took < 10_000, `in ${took} ms (operation_timeout 20 s)`);
  for (const w of writes) {
    for (const n of ['n1', 'n2']) {
      const got = await c.grpc(n).get(key(w.n), { force_node: true });
      t.ok(got.data.equals(w.value), `value ${w.n} on ${n}'s replica`);
    }
  }
  t.same(await c.alienDir('n1'), [], 'no alien copy on n1');
  t.same(await c.alienDir('n2'), [], 'no alien copy on n2');
});

t.test('random batches, stalls and hang-ups on links and streams: every room comes back, every acknowledged Put reads back', async (t) => {
  const seed = seedFromEnv();
  t.comment(`seed ${seed} (OYSTER_TEST_SEED=${seed} repeats it)`);
  const rng = new Rng(seed);
  const node = await startRestNode(t, { spec: { nodes: [{ name: 'solo' }], vdisks: 2, keySize: 8 }, opts: { extra: { http_body_memory_limit: 4 * MIB } } });
  const address = node.files.addresses.solo;
  const acked = new Map<number, Buffer>();
  let nextKey = 1;
  let nextId = 1;
  const randomBatch = (): OperationMsg[] =>
    Array.from({ length: 1 + rng.int(6) }, () => {
      const id = nextId++;
      const what = rng.int(10);
      if (what < 4) return put(id, nextKey++, rng.bytes(rng.int(20_000)));
      if (what < 6) return put(id, nextKey++, rng.bytes(100_000 + rng.int(1.5 * MIB)));
      if (what < 8) return exist(id, 1 + rng.int(20_000));
      return Object.assign(newOperation(OperationKind.GET, [key(1 + rng.int(nextKey))]), { id, source: 0 });
    });
  const session = async (round: number) => {
    const link = rng.int(2) === 0;
    const raw = link ? await RawLink.open(address, hello('')) : new RawStream(address);
    const sent: OperationMsg[] = [];
    const frames: Buffer[] = [];
    for (let b = 0; b < 1 + rng.int(4); b++) {
      const ops = randomBatch();
      sent.push(...ops);
      frames.push(link ? frame(1, encodeOperationBatch({ ops })) : (raw as RawStream).frame(ops));
    }
    const write = (bytes: Buffer) => (link ? (raw as RawLink).socket.write(bytes) : (raw as RawStream).write(bytes));
    const ending = rng.int(4);
    for (const f of frames) write(f);
    // 0: hangs up in the middle of one more batch; 1: hangs up at once; else waits for every result.
    if (ending === 0) {
      const f = frames[frames.length - 1];
      write(f.subarray(0, rng.int(f.length)));
      await sleep(rng.int(300));
    }
    const results = new Map<number, ResultMsg>();
    if (ending > 1) {
      // What was not answered, and what the node holds, name a stall.
      const stalled = async (err: unknown) => {
        const missing = sent.filter((o) => !results.has(o.id)).map((o) => `${o.id}:${o.kind}:${o.keys.length}:${o.value?.length ?? 0}`);
        throw new Error(`${(err as Error).message}; unanswered (id:kind:keys:value) ${missing.join(' ')}; batches hold ${await batchBytes(node.url)} bytes`);
      };
      if (link) {
        const got = await within(60_000, linkResults(raw as RawLink, sent.map((o) => o.id)), `round ${round}`).catch(stalled);
        for (const [id, r] of got) results.set(id, r);
      } else {
        const stream = raw as RawStream;
        // A batch over the largest message the node takes ends its stream, as it ends a link.
        await waitFor(`round ${round}`, () => stream.ended || sent.every((o) => stream.results.has(o.id)), 60_000, 20).catch((err) => {
          for (const [id, r] of stream.results) results.set(id, r);
          return stalled(err);
        });
        for (const [id, r] of stream.results) results.set(id, r);
      }
    }
    for (const op of sent) if (op.kind === OperationKind.PUT && (results.get(op.id)?.code ?? -1) === 0) acked.set(Number(op.keys[0].readBigUInt64LE()), op.value!);
    raw.close();
  };
  for (let wave = 0; wave < 10; wave++) await Promise.all(Array.from({ length: 4 }, (_, i) => session(wave * 4 + i)));
  await waitFor('the limits to empty', async () => (await batchBytes(node.url)) === 0 && (await bodyBytes(node.url)) === 0, 10_000);
  t.pass('every room given back');
  let wrong = 0;
  for (const [k, v] of acked) {
    const res = await fetch(`${node.url}/data/${k}`);
    if (!Buffer.from(await res.arrayBuffer()).equals(v)) wrong++;
  }
  t.equal(wrong, 0, `all ${acked.size} acknowledged Puts read back byte-exact`);
  t.ok(acked.size > 0, 'some Puts were acknowledged');
  t.same(badLogLines(node.proc.output), [], 'no error in the log');
});
