// Operations links (docs/FORMAT.md §14): Oyster peers send their
// operations over a plain TCP link to the gRPC port, bob clients on the same
// port keep speaking gRPC, and what a link carries is checked as a gRPC
// stream's messages are. A peer that takes no link — here a bob-shaped node
// that serves BobApi alone, built with grpc-js's standard options — gets the
// same operations over gRPC: written, read, deleted as acknowledged.
import * as grpc from '@grpc/grpc-js';
import net from 'node:net';
import t from 'tap';
import type { Test } from 'tap';
import { decodeResultBatch, encodeOperationBatch, newOperation } from '../../src/grpc/operation-codec';
import { BobApiService, OperationKind, OperationMsg, ResultBatchMsg, ResultMsg, PutRequestMsg, GetRequestMsg, DeleteRequestMsg, ExistRequestMsg } from '../../src/grpc/proto';
import { sample } from '../rest/lib/metrics';
import { frame, hello, RawLink } from '../helpers/link-client';
import { TestCluster, sleep, waitFor } from './lib';

const KEY_SIZE = 8;

const put = (id: number, key: Buffer, value: string, ts: number) =>
  Object.assign(newOperation(OperationKind.PUT, [key]), { id, value: Buffer.from(value), timestamp: String(ts), tick: '0', node: 0 });
const get = (id: number, key: Buffer) => Object.assign(newOperation(OperationKind.GET, [key]), { id, source: 0 });

/** Connects to `address`, sends `bytes`, reads whatever comes back, resolves when the node closed the connection. */
function sendAndWaitForClose(address: string, bytes: Buffer): Promise<void> {
  const colon = address.lastIndexOf(':');
  const s = net.connect(Number(address.slice(colon + 1)), address.slice(0, colon));
  s.on('error', () => undefined);
  s.resume();
  s.write(bytes);
  return new Promise((resolve) => s.on('close', () => resolve()));
}

t.test('Oyster peers: operations over links, gRPC clients on the same port', async (t) => {
  const c = await TestCluster.start(t, {
    nodes: ['n1', 'n2'],
    replicas: [['n1', 'n2']],
    keySize: KEY_SIZE,
    opts: { quorum: 2 },
  });
  await c.waitLinks();
  const metrics = async (n: string) => (await c.rest(n, 'GET', '/metrics')).text;

  await t.test('a write through one node reaches the other over a link', async (t) => {
    for (let k = 1; k <= 20; k++) t.equal((await c.rest('n1', 'POST', `/data/${k}`, `value ${k}`)).status, 201, `key ${k} written through n1 (quorum 2)`);
    for (let k = 1; k <= 20; k++) t.equal((await c.rest('n2', 'GET', `/data/${k}`)).text, `value ${k}`, `key ${k} read through n2`);
    t.ok(sample(await metrics('n1'), 'oyster_peer_links_opened_total', { peer: 'n2' }) >= 1, "n1's operations to n2 went over a link");
    t.ok(sample(await metrics('n2'), 'oyster_links_accepted_total', { outcome: 'accepted' }) >= 1, 'n2 accepted it');
    // A BobApi client on the same port is served by gRPC as before.
    const v = await c.grpc('n2').get(Buffer.from([3, 0, 0, 0, 0, 0, 0, 0]));
    t.equal(v.data.toString(), 'value 3', 'a gRPC Get on the same port');
  });

  await t.test('the link as FORMAT.md describes it, byte by byte', async (t) => {
    const link = await RawLink.open(c.address('n2'), hello(''));
    t.teardown(() => link.close());
    t.same(link.welcome, { code: 0, details: '' }, 'an accepted greeting');
    const key = Buffer.alloc(KEY_SIZE, 0x41);
    link.send({ ops: [put(7, key, 'over the link', 100)] });
    let f = await link.next();
    t.same(f?.type === 'batch' && f.batch.results.map((r) => [r.id, r.code ?? 0]), [[7, 0]], 'the Put answered by id');
    link.send({ ops: [get(8, key), get(9, Buffer.alloc(KEY_SIZE, 0x42))] });
    const results = new Map<number, { kind?: number; value?: Buffer }>();
    while (results.size < 2) {
      f = await link.next();
      if (f?.type !== 'batch') break;
      for (const r of f.batch.results) results.set(r.id, r);
    }
    t.equal(results.get(8)?.value?.toString(), 'over the link', 'the Get finds it');
    t.equal(results.get(9)?.kind ?? 0, 0, 'a key never written: absent');
    t.equal((await c.rest('n2', 'GET', `/data/${0x4141414141414141n}`)).text, 'over the link', 'REST reads the value the link wrote');
  });

  await t.test('batches sent with the greeting, before its answer, and large batches cut into many reads, are all served', async (t) => {
    const key = (k: number) => Buffer.alloc(KEY_SIZE, k);
    const big = Buffer.alloc(3 * 1024 * 1024 + 17, 'L');
    // The first batches in the same write as the greeting: the node reads them before it answers.
    const early = [put(21, key(0x51), 'early', 200), put(22, key(0x52), big.toString('latin1'), 200)].map((op) => frame(1, encodeOperationBatch({ ops: [op] })));
    const link = await RawLink.open(c.address('n2'), Buffer.concat([hello(''), ...early]));
    t.teardown(() => link.close());
    t.same(link.welcome, { code: 0, details: '' }, 'an accepted greeting');
    const results = new Map<number, ResultMsg>();
    const answers = async (n: number) => {
      while (results.size < n) {
        const f = await link.next();
        if (f?.type !== 'batch') break;
        for (const r of f.batch.results) results.set(r.id, r);
      }
    };
    await answers(2);
    t.same([21, 22].map((id) => results.get(id)?.code ?? 0), [0, 0], 'both Puts answered');
    // Operations on a link run side by side: the Gets only once the Puts were answered.
    link.send({ ops: [get(23, key(0x51)), get(24, key(0x52))] });
    await answers(4);
    t.equal(results.get(23)?.value?.toString(), 'early', 'the small value reads back');
    t.ok(results.get(24)?.value?.equals(big) || (results.get(24)?.size ?? 0) === big.length, 'the large one is stored whole');
    t.ok(Buffer.from(await (await fetch(`${c.url('n2')}/data/${0x5252525252525252n}`)).arrayBuffer()).equals(big), 'REST reads it back byte-exact');
  });

  await t.test('a large value announced, then read in parts (API.md, Oyster.Replicas)', async (t) => {
    const link = await RawLink.open(c.address('n2'), hello(''));
    t.teardown(() => link.close());
    const size = 200_000;
    const value = Buffer.from(Array.from({ length: size }, (_, i) => (i * 7) % 251));
    t.equal((await c.rest('n1', 'POST', '/data/4242', value)).status, 201);
    const key = Buffer.alloc(KEY_SIZE);
    key.writeBigUInt64LE(4242n);
    const ask = async (op: OperationMsg) => {
      link.send({ ops: [op] });
      const f = await link.next();
      if (f?.type !== 'batch') throw new Error('no batch');
      return f.batch.results[0];
    };
    const announced = await ask(Object.assign(get(1, key), { whole_up_to: 65536 }));
    t.equal(announced.kind, 1, 'a value');
    t.equal(announced.size, size, 'announced by its size');
    t.same(announced.value, value.subarray(0, 512), 'with its first bytes');
    const version = { timestamp: announced.timestamp, tick: announced.tick, node: announced.node };
    const part = (id: number, offset: number, length: number, extra: Partial<OperationMsg> = {}) =>
      Object.assign(get(id, key), version, { offset, length }, extra);
    t.same((await ask(part(2, 100_000, 50_000))).value, value.subarray(100_000, 150_000), 'a part, byte-exact');
    t.same((await ask(part(3, size - 10, 10))).value, value.subarray(size - 10), 'the last bytes');
    t.equal((await ask(part(4, size - 10, 11))).code, grpc.status.INVALID_ARGUMENT, 'a part past the end: INVALID_ARGUMENT');
    t.equal((await ask(part(5, 0, 0, { check_rest: true }))).code ?? 0, 0, 'check_rest alone: the value checked');
    t.same((await ask(get(6, key))).value, value, 'without whole_up_to: the value whole');
    t.equal((await c.rest('n1', 'POST', '/data/4242', 'newer')).status, 201);
    const stale = await ask(part(7, 0, 1000));
    t.equal(stale.code, grpc.status.UNAVAILABLE, 'a part of a version no longer the newest: UNAVAILABLE');
    t.match(stale.details, /no longer version/);
    t.equal((await ask(Object.assign(get(8, key), { whole_up_to: 65536 }))).value?.toString(), 'newer', 'a small value comes whole');
  });

  await t.test('large values in parts over the gRPC stream (no link): every part byte-exact', async (t) => {
    const client = new grpc.Client(c.address('n2'), grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': -1 });
    t.teardown(() => client.close());
    const stream = client.makeBidiStreamRequest('/oyster.Replicas/Operations', encodeOperationBatch, decodeResultBatch, new grpc.Metadata());
    t.teardown(() => stream.cancel());
    const pending = new Map<number, (r: ResultMsg) => void>();
    stream.on('data', (batch: ResultBatchMsg) => {
      for (const r of batch.results) pending.get(r.id)?.(r);
    });
    stream.on('error', () => undefined);
    let nextId = 1;
    const ask = (ops: OperationMsg[]) =>
      Promise.all(
        ops.map((op) => {
          op.id = nextId++;
          return new Promise<ResultMsg>((resolve) => pending.set(op.id, resolve));
        }),
      ).finally(() => undefined);
    const MiB = 1 << 20;
    const size = 8 * MiB + 3;
    const value = Buffer.from(Array.from({ length: size }, (_, i) => (i * 13) % 253));
    t.equal((await c.rest('n1', 'POST', '/data/4343', value)).status, 201);
    const key = Buffer.alloc(KEY_SIZE);
    key.writeBigUInt64LE(4343n);
    const announce = [Object.assign(get(0, key), { whole_up_to: 65536 })];
    const answered = ask(announce);
    stream.write({ ops: announce });
    const [head] = await answered;
    t.equal(head.size, size, 'announced over gRPC');
    const version = { timestamp: head.timestamp, tick: head.tick, node: head.node };
    let exact = 0;
    let parts = 0;
    // Batches of parts while the client reads nothing: results wait in the
    // stream, unsent (and unserialized), while the next parts are read.
    for (let round = 0; round < 3; round++) {
      const batches = Array.from({ length: 6 }, () =>
        Array.from({ length: 9 }, (_, i) => Object.assign(get(0, key), version, { offset: i * MiB, length: Math.min(MiB, size - i * MiB) })),
      );
      const results = batches.map((ops) => ask(ops));
      stream.pause();
      for (const ops of batches) {
        stream.write({ ops });
        await sleep(20);
      }
      await sleep(200);
      stream.resume();
      for (const [b, got] of (await Promise.all(results)).entries()) {
        for (const [i, r] of got.entries()) {
          const op = batches[b][i];
          parts++;
          if (r.value?.equals(value.subarray(op.offset!, op.offset! + op.length!))) exact++;
        }
      }
    }
    t.equal(exact, parts, `${parts} parts byte-exact`);
  });

  await t.test('malformed links: refused, and the node serves on', async (t) => {
    const address = c.address('n2');
    const bad = await RawLink.open(address, hello(''));
    // A good batch right behind the bad one, in the same segment: not run.
    const after = Buffer.alloc(KEY_SIZE, 0x43);
    bad.socket.write(Buffer.concat([frame(1, Buffer.from([0x0a, 0xff])), frame(1, encodeOperationBatch({ ops: [put(1, after, 'after the bad one', 100)] }))]));
    const status = await bad.next();
    t.same(status?.type === 'status' && status.code, grpc.status.INVALID_ARGUMENT, 'an undecodable batch: an INVALID_ARGUMENT status');
    t.match(status?.type === 'status' ? status.details : '', /malformed Operations batch/, 'naming what was wrong');
    await bad.closed;
    t.pass('and the link is closed');
    t.equal((await c.rest('n2', 'GET', `/data/${0x4343434343434343n}`)).status, 404, 'a batch sent after the bad one on that link was not run');

    const huge = await RawLink.open(address, hello(''));
    const head = Buffer.alloc(5);
    head.writeUInt32LE(0xffffffff, 0);
    head[4] = 1;
    huge.socket.write(head);
    await huge.closed;
    t.pass('a frame longer than the largest message: closed before anything is read into memory');

    const empty = await RawLink.open(address, hello(''));
    empty.socket.write(Buffer.alloc(5));
    await empty.closed;
    t.pass('a frame of length 0: closed');

    const wrongType = await RawLink.open(address, hello(''));
    wrongType.socket.write(frame(9, Buffer.from('x')));
    await wrongType.closed;
    t.pass('a frame of an unknown type: closed');

    const notMagic = Buffer.concat([Buffer.from('\x00OYSTEX\x01', 'latin1'), Buffer.alloc(16)]);
    await sendAndWaitForClose(address, notMagic);
    t.pass('a greeting with the wrong magic: closed');
    await sendAndWaitForClose(address, Buffer.concat([hello('').subarray(0, 22), Buffer.from([0xff, 0xff])]));
    t.pass('a greeting announcing 65,535 bytes of authorization: closed');
    await sendAndWaitForClose(address, Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    t.pass('HTTP/1.1 on the gRPC port: grpc-js closes it');
    t.equal(c.isRunning('n2'), true, 'n2 runs on');
    t.equal((await c.rest('n1', 'POST', '/data/99', 'after')).status, 201, 'and the cluster still writes at quorum 2');
    t.equal((await c.grpc('n2').get(Buffer.from([99, 0, 0, 0, 0, 0, 0, 0]))).data.toString(), 'after', 'gRPC still reads');
  });

  await t.test('a peer restarted: the link comes back', async (t) => {
    const before = sample(await metrics('n1'), 'oyster_peer_links_opened_total', { peer: 'n2' });
    await c.stop('n2');
    await c.startNode('n2');
    await waitFor('n1 to see n2 again', () => c.sees('n1', 'n2'), 15_000);
    await waitFor(
      'a write at quorum 2',
      async () => (await c.rest('n1', 'POST', '/data/100', 'back')).status === 201,
      10_000,
    );
    const after = sample(await metrics('n1'), 'oyster_peer_links_opened_total', { peer: 'n2' });
    t.ok(after > before, `a new link to the restarted peer (${before} → ${after})`);
    t.equal((await c.rest('n2', 'GET', '/data/100')).text, 'back', 'the write reached it');
  });
});

/** A node as bob is to its peers: BobApi only, over grpc-js with standard options, keeping what it is sent in memory. */
async function bobShapedNode(t: Test, address: string): Promise<{ stored: Map<string, { data: string; ts: string }>; calls: string[] }> {
  const stored = new Map<string, { data: string; ts: string }>();
  const calls: string[] = [];
  const hex = (k: Buffer) => k.toString('hex').toUpperCase();
  const server = new grpc.Server();
  server.addService(BobApiService, {
    Ping: (_call: unknown, cb: grpc.sendUnaryData<object>) => cb(null, {}),
    Put: (call: grpc.ServerUnaryCall<PutRequestMsg, object>, cb: grpc.sendUnaryData<object>) => {
      calls.push('Put');
      stored.set(hex(call.request.key!.key), { data: call.request.data!.data.toString(), ts: String(call.request.data!.meta!.timestamp) });
      cb(null, {});
    },
    Get: (call: grpc.ServerUnaryCall<GetRequestMsg, object>, cb: grpc.sendUnaryData<object>) => {
      calls.push('Get');
      const v = stored.get(hex(call.request.key!.key));
      if (!v) return cb({ code: grpc.status.NOT_FOUND, details: `KeyNotFound ${hex(call.request.key!.key)}` });
      cb(null, { data: Buffer.from(v.data), meta: { timestamp: v.ts } });
    },
    Exist: (call: grpc.ServerUnaryCall<ExistRequestMsg, object>, cb: grpc.sendUnaryData<object>) => {
      calls.push('Exist');
      cb(null, { exist: call.request.keys.map((k) => stored.has(hex(k!.key))) });
    },
    Delete: (call: grpc.ServerUnaryCall<DeleteRequestMsg, object>, cb: grpc.sendUnaryData<object>) => {
      calls.push('Delete');
      stored.delete(hex(call.request.key!.key));
      cb(null, {});
    },
  });
  await new Promise<number>((resolve, reject) =>
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  t.teardown(() => server.forceShutdown());
  return { stored, calls };
}

t.test('a peer that takes no link (bob-shaped): its operations go over gRPC, none lost', async (t) => {
  const c = await TestCluster.start(t, { nodes: ['n1', 'bob'], replicas: [['n1', 'bob']], keySize: KEY_SIZE, opts: { quorum: 2 } }, ['n1']);
  const bob = await bobShapedNode(t, c.address('bob'));
  await waitFor('n1 to see the bob node', () => c.sees('n1', 'bob'), 15_000);
  for (let k = 1; k <= 10; k++) t.equal((await c.rest('n1', 'POST', `/data/${k}`, `value ${k}`)).status, 201, `key ${k} written at quorum 2`);
  t.equal(bob.stored.size, 10, 'the bob node holds all 10');
  t.same(bob.stored.get('0500000000000000'), { data: 'value 5', ts: bob.stored.get('0500000000000000')?.ts }, 'as written');
  t.equal((await c.rest('n1', 'GET', '/data/5')).text, 'value 5', 'read back through n1');
  t.equal((await c.rest('n1', 'DELETE', '/data/5')).status, 200, 'deleted through n1');
  t.notOk(bob.stored.has('0500000000000000'), 'on the bob node too');
  const text = (await c.rest('n1', 'GET', '/metrics')).text;
  t.equal(sample(text, 'oyster_peer_links_opened_total', { peer: 'bob' }), 0, 'no link was opened to it');
  t.ok(bob.calls.includes('Put'), `it was sent BobApi calls (${[...new Set(bob.calls)].join(', ')})`);
  await sleep(0);
});
