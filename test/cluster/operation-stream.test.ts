// OperationStream against peers that misbehave in ways a real oysterd cannot
// be made to on cue: one that never answers (each operation times out after
// operation_timeout, from one sweep), one that answers some and ends the
// stream (the rest fail, the next operation opens a new stream), one that
// does not serve the stream (UNIMPLEMENTED: a bob node). And the bound: past
// maxInFlight operations or maxBytes of values waiting, an operation fails
// at once. The peer is a real gRPC server on loopback serving the Replicas
// service's Operations method as scripted here. Last, a real node refuses
// malformed operations one by one, on a stream that goes on serving.
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import type { Test } from 'tap';
import { isOysterError } from '../../src/model/errors';
import { newOperation } from '../../src/grpc/operation-codec';
import { OperationStream } from '../../src/grpc/operation-stream';
import { OperationBatchMsg, OperationKind, Replicas, ReplicasService, ResultBatchMsg } from '../../src/grpc/proto';
import { TestCluster } from './lib';

async function waitFor(done: () => boolean, ms: number): Promise<void> {
  for (const until = Date.now() + ms; !done() && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10));
}

type Script = (call: grpc.ServerDuplexStream<OperationBatchMsg, ResultBatchMsg>) => void;

async function peer(t: Test, script: Script | null): Promise<{ client: grpc.Client; opens: () => number }> {
  const server = new grpc.Server();
  let opened = 0;
  if (script) {
    server.addService(ReplicasService, {
      Operations: (call: grpc.ServerDuplexStream<OperationBatchMsg, ResultBatchMsg>) => {
        opened++;
        script(call);
      },
    });
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const client = new Replicas(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  t.teardown(() => {
    client.close();
    server.forceShutdown();
  });
  return { client, opens: () => opened };
}

function stream(client: grpc.Client, o: { timeoutMs?: number; maxInFlight?: number; maxBytes?: number; holdMs?: number } = {}): OperationStream {
  return new OperationStream({
    peer: 'p',
    open: () => (client as unknown as { Operations(): grpc.ClientDuplexStream<OperationBatchMsg, ResultBatchMsg> }).Operations(),
    isAvailable: () => true,
    timeoutMs: o.timeoutMs ?? 5000,
    maxInFlight: o.maxInFlight ?? 1000,
    maxBytes: o.maxBytes ?? 1 << 20,
    holdMs: o.holdMs,
  });
}

const get = (k: number) => Object.assign(newOperation(OperationKind.GET, [Buffer.alloc(8, k)]), { source: 1 });
const put = (bytes: number) => Object.assign(newOperation(OperationKind.PUT, [Buffer.alloc(8)]), { value: Buffer.alloc(bytes) });

t.test('operations sent in one turn travel as one batch and are matched by id', async (t) => {
  const batches: number[] = [];
  const { client } = await peer(t, (call) => {
    call.on('data', (b: OperationBatchMsg) => {
      batches.push(b.ops.length);
      // Answered in reverse order: matched by id, not by position.
      call.write({ results: [...b.ops].reverse().map((op) => ({ id: op.id, kind: 1, value: op.keys[0], timestamp: '1', tick: '0', node: 0 })) });
    });
  });
  const s = stream(client);
  const results = await Promise.all(Array.from({ length: 50 }, (_, k) => s.send(get(k), 0)));
  t.same(results.map((r) => r.value?.[0]), Array.from({ length: 50 }, (_, k) => k), 'each result is its operation\'s');
  t.same(batches, [50], 'one batch');
  t.equal(s.inFlight, 0);
  s.close();
});

t.test('an operation with a value of 64 KiB or more goes in a batch of its own', async (t) => {
  const batches: number[][] = [];
  const { client } = await peer(t, (call) => {
    call.on('data', (b: OperationBatchMsg) => {
      batches.push(b.ops.map((op) => op.value?.length ?? 0));
      call.write({ results: b.ops.map((op) => ({ id: op.id, kind: 0, timestamp: '0', tick: '0', node: 0 })) });
    });
  });
  const s = stream(client, { maxBytes: 16 << 20 });
  // One turn: small puts around three parts of 1 MiB, and one just under the bound.
  const sizes = [10, 20, 1 << 20, 1 << 20, 30, 1 << 20, 64 * 1024 - 1, 40];
  await Promise.all(sizes.map((n) => s.send(put(n), n)));
  t.same(batches.flat(), sizes, 'every operation, in the order sent');
  for (const b of batches) if (b.some((n) => n >= 64 * 1024)) t.equal(b.length, 1, `a batch with a ${b[0]}-byte value holds it alone`);
  t.same(batches, [[10, 20], [1 << 20], [1 << 20], [30], [1 << 20], [64 * 1024 - 1, 40]], 'the small ones still share batches');
  s.close();
});

t.test('while a batch awaits its results, later operations wait for them and then go as one batch', async (t) => {
  const batches: number[] = [];
  const arrived: number[] = [];
  let answer: (() => void) | null = null;
  const { client } = await peer(t, (call) => {
    call.on('data', (b: OperationBatchMsg) => {
      batches.push(b.ops.length);
      arrived.push(Date.now());
      const reply = () => call.write({ results: b.ops.map((op) => ({ id: op.id, kind: 0 })) });
      // The first batch is answered only when the test says so.
      if (batches.length === 1) answer = reply;
      else reply();
    });
  });
  // A hold long enough that only the results can end it here.
  const s = stream(client, { holdMs: 5000 });
  const first = s.send(get(0), 0);
  while (batches.length === 0) await new Promise((r) => setTimeout(r, 5));
  t.same(batches, [1], 'a lone operation on an idle stream leaves at once');
  // Sent over several turns while the first batch has no answer.
  const later: Array<Promise<unknown>> = [];
  for (let k = 1; k <= 6; k++) {
    later.push(s.send(get(k), 0));
    await new Promise((r) => setImmediate(r));
  }
  t.same(batches, [1], 'nothing more leaves while the first batch awaits its results');
  const answered = Date.now();
  answer!();
  await first;
  await Promise.all(later);
  t.same(batches, [1, 6], 'the held operations leave together once results came back');
  t.ok(arrived[1] >= answered, 'after the results');
  s.close();
});

t.test('held operations leave after the hold when the peer is slow to answer anything', async (t) => {
  const batches: number[] = [];
  const { client } = await peer(t, (call) => {
    call.on('data', (b: OperationBatchMsg) => {
      batches.push(b.ops.length);
      // Every batch answered a second later.
      setTimeout(() => call.write({ results: b.ops.map((op) => ({ id: op.id, kind: 0 })) }), 1000);
    });
  });
  const s = stream(client); // the default hold, 1 ms
  const first = s.send(get(0), 0);
  while (batches.length === 0) await new Promise((r) => setTimeout(r, 5));
  const started = Date.now();
  const second = s.send(get(1), 0);
  while (batches.length < 2) await new Promise((r) => setTimeout(r, 1));
  t.ok(Date.now() - started < 500, `the held operation left after the hold, not after the peer's second (${Date.now() - started} ms)`);
  await Promise.all([first, second]);
  t.same(batches, [1, 1]);
  s.close();
});

t.test('a peer that reads nothing: the stream still holding a timed-out operation\'s value is ended', async (t) => {
  // The caller lets go of a value's buffer once its operation failed (a
  // client's window takes the next bytes): a stream that had not sent it yet
  // must not send it afterwards.
  let cancelled = 0;
  const { client, opens } = await peer(t, (call) => {
    call.pause(); // flow control soon holds the client's messages back, unserialized
    call.on('cancelled', () => cancelled++);
  });
  const s = stream(client, { timeoutMs: 400, maxBytes: 64 << 20 });
  const outcomes = await Promise.all(Array.from({ length: 40 }, () => s.send(put(256 * 1024), 256 * 1024).then(() => 'answered', (err: unknown) => err)));
  // Those sent a little later fail with the stream, ended with the first that timed out.
  t.ok(outcomes.every((e) => e instanceof Error) && outcomes.some((e) => isOysterError(e, 'Timeout')), 'every operation failed, the first ones timed out');
  await waitFor(() => cancelled === 1, 2000);
  t.equal(cancelled, 1, 'the stream that held values unsent was ended');
  const next = s.send(get(1), 0).then(() => 'answered', (err: unknown) => err);
  await waitFor(() => opens() === 2, 2000);
  t.equal(opens(), 2, 'the next operation opens another stream');
  s.close();
  await next;
});

t.test('a value is released once nothing will read it: sent, answered, or dropped with its stream, not when another operation fails', async (t) => {
  let first = true;
  const { client } = await peer(t, (call) => {
    call.on('data', (b: OperationBatchMsg) => {
      if (!first) return;
      first = false;
      // The first part fails at once, and the peer reads no more.
      call.write({ results: [{ id: b.ops[0].id, code: 13, details: 'no' }] });
      call.pause();
    });
  });
  const s = stream(client, { timeoutMs: 600, maxBytes: 64 << 20 });
  const released: number[] = [];
  const started = Date.now();
  const sent = Array.from({ length: 40 }, (_, k) =>
    s.send(put(256 * 1024), 256 * 1024, () => released.push(k)).then(
      (r) => (r.code ? 'failed' : 'answered'),
      (err: unknown) => err,
    ),
  );
  t.equal(await sent[0], 'failed', 'the first part failed at once');
  await new Promise((r) => setTimeout(r, 150));
  const early = released.length;
  t.ok(released.includes(0), 'its value is released');
  t.ok(early < 40, `${40 - early} parts still held unsent by the stream are not (${early} released)`);
  await Promise.all(sent);
  t.ok(Date.now() - started >= 550, 'the rest time out');
  t.same([...released].sort((a, b) => a - b), Array.from({ length: 40 }, (_, k) => k), 'then every value is released, once');
  s.close();
});

t.test('a peer that takes every batch and answers none: operations time out, the stream stays', async (t) => {
  let cancelled = 0;
  const { client, opens } = await peer(t, (call) => {
    call.on('data', () => undefined);
    call.on('cancelled', () => cancelled++);
  });
  const s = stream(client, { timeoutMs: 300, maxBytes: 64 << 20 });
  const outcomes = await Promise.all(Array.from({ length: 4 }, () => s.send(put(256 * 1024), 256 * 1024).then(() => 'answered', (err: unknown) => err)));
  t.ok(outcomes.every((e) => isOysterError(e, 'Timeout')), 'every operation timed out');
  const next = s.send(get(1), 0).then(() => 'answered', (err: unknown) => err);
  await new Promise((r) => setTimeout(r, 200));
  t.equal(cancelled, 0, 'the stream that sent them all is not ended');
  t.equal(opens(), 1, 'and goes on carrying operations');
  s.close();
  await next;
});

t.test('a peer that never answers: operations time out, the bound refuses the rest at once', async (t) => {
  const { client } = await peer(t, () => undefined);
  const s = stream(client, { timeoutMs: 300, maxInFlight: 10, maxBytes: 1000 });
  const started = Date.now();
  const sent = Array.from({ length: 10 }, (_, k) => s.send(get(k), 0).then(() => 'answered', (err: unknown) => err));
  const refused = await s.send(get(99), 0).then(() => null, (err: unknown) => err);
  t.ok(isOysterError(refused, 'HolderTemporaryUnavailable'), `the 11th operation is refused at once: ${String(refused)}`);
  t.ok(Date.now() - started < 100, 'without waiting');
  const outcomes = await Promise.all(sent);
  const waited = Date.now() - started;
  t.ok(outcomes.every((e) => isOysterError(e, 'Timeout')), 'each of the 10 timed out');
  t.ok(waited >= 290 && waited < 1500, `after about operation_timeout (${waited} ms)`);
  t.equal(s.inFlight, 0, 'nothing left waiting');
  // Bytes count too: one large value alone goes, a second waits for it.
  const big = s.send(put(900), 900).catch((err: unknown) => err);
  const second = await s.send(put(200), 200).then(() => null, (err: unknown) => err);
  t.ok(isOysterError(second, 'HolderTemporaryUnavailable'), 'values beyond maxBytes are refused');
  await big;
  s.close();
});

t.test('a stream the peer ends fails what was sent on it; the next operation opens another', async (t) => {
  let first = true;
  const { client, opens } = await peer(t, (call) => {
    const end = first;
    first = false;
    call.on('data', (b: OperationBatchMsg) => {
      if (end) {
        // Answers the first operation, then ends the stream.
        call.write({ results: [{ id: b.ops[0].id, kind: 0 }] });
        call.end();
      } else {
        call.write({ results: b.ops.map((op) => ({ id: op.id, kind: 0 })) });
      }
    });
  });
  const s = stream(client);
  const outcomes = await Promise.all([0, 1, 2].map((k) => s.send(get(k), 0).then(() => 'answered', (err: unknown) => (err as Error).message)));
  t.equal(outcomes[0], 'answered', 'the answered one resolves');
  t.match(outcomes[1], /ended the operation stream/, 'the others fail');
  t.equal((await s.send(get(3), 0)).kind, 0, 'a new stream serves the next');
  t.equal(opens(), 2, 'two streams in all');
  s.close();
});

t.test('a peer without the Operations method (a bob node): Unsupported, and the stream says so', async (t) => {
  const { client } = await peer(t, null);
  const s = stream(client);
  const err = await s.send(get(1), 0).then(() => null, (e: unknown) => e);
  t.ok(isOysterError(err, 'Unsupported'), `UNIMPLEMENTED arrives as Unsupported: ${String(err)}`);
  t.ok(s.unsupported, 'flagged for the caller to fall back to BobApi');
  s.close();
});

t.test('a real node refuses malformed operations one by one and stores nothing', async (t) => {
  const c = await TestCluster.start(t, { nodes: ['n1'], replicas: [['n1']], keySize: 8 });
  const client = new Replicas(c.address('n1'), grpc.credentials.createInsecure());
  t.teardown(() => client.close());
  const s = new OperationStream({
    peer: 'n1',
    open: () => (client as unknown as { Operations(): grpc.ClientDuplexStream<OperationBatchMsg, ResultBatchMsg> }).Operations(),
    isAvailable: () => true,
    timeoutMs: 5000,
    maxInFlight: 100,
    maxBytes: 1 << 20,
  });
  t.teardown(() => s.close());
  const key = Buffer.alloc(8, 7);
  const bad = [
    { kind: OperationKind.PUT, keys: [Buffer.alloc(3)], value: Buffer.from('x'), timestamp: '5' },
    { kind: OperationKind.PUT, keys: [key, key], value: Buffer.from('x'), timestamp: '5' },
    { kind: OperationKind.PUT, keys: [key], value: Buffer.from('x'), timestamp: '18446744073709551615' },
    { kind: OperationKind.GET, keys: [key], source: 9 },
    { kind: 42, keys: [key] },
    { kind: OperationKind.EXIST, keys: [key, Buffer.alloc(0)], source: 1 },
  ];
  const results = await Promise.all(bad.map((op) => s.send(Object.assign(newOperation(op.kind, op.keys), op), 0)));
  t.same(results.map((r) => r.code), bad.map(() => grpc.status.INVALID_ARGUMENT), `each is INVALID_ARGUMENT: ${results.map((r) => r.details).join(' | ')}`);
  const good = await s.send(Object.assign(newOperation(OperationKind.PUT, [key]), { value: Buffer.from('kept'), timestamp: '5', tick: '0', node: 0 }), 4);
  t.equal(good.code ?? 0, 0, 'a good one in the same stream is stored');
  const read = await s.send(get(7), 0);
  t.same([read.kind, read.value?.toString(), String(read.timestamp)], [1, 'kept', '5'], 'and only it');
  t.equal(c.isRunning('n1'), true, 'the node runs on');
});
