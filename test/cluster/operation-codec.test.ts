// The hand-written wire format of Replicas.Operations agrees with protobufjs
// reading and writing oyster.proto both ways, skips fields it does not know,
// refuses truncated bytes, and decodes u64 fields beyond 2^53 as -1 (which
// validation refuses) rather than as a nearby number.
import t from 'tap';
import { decodeOperationBatch, decodeResultBatch, encodeAroundValue, encodeOperationBatch, encodeResultBatch, operationWeight, weighBatch } from '../../src/grpc/operation-codec';
import { OperationBatchMsg, ReplicasService, ResultBatchMsg } from '../../src/grpc/proto';

const ops = ReplicasService.Operations;
const pbEncodeOps = ops.requestSerialize as (m: unknown) => Buffer;
const pbDecodeOps = ops.requestDeserialize as (b: Buffer) => OperationBatchMsg;
const pbEncodeResults = ops.responseSerialize as (m: unknown) => Buffer;
const pbDecodeResults = ops.responseDeserialize as (b: Buffer) => ResultBatchMsg;

const batch: OperationBatchMsg = {
  ops: [
    { id: 1, kind: 0, keys: [Buffer.from('0123456789abcdef')], value: Buffer.alloc(300, 7), timestamp: 1795680839, tick: 1795680839259001, node: 3, remote_nodes: ['n2', 'nœud'] },
    { id: 4294967295, kind: 2, keys: [Buffer.alloc(8, 1), Buffer.alloc(8, 2), Buffer.alloc(0)], source: 2 },
    { id: 3, kind: 3, keys: [Buffer.alloc(8)], timestamp: 2 ** 53 - 1, is_alien: true, force_alien_nodes: ['a'] },
  ],
};
const results: ResultBatchMsg = {
  results: [
    { id: 1, kind: 1, timestamp: 5, tick: 2 ** 52 - 1, node: 4095, value: Buffer.from('v') },
    { id: 2, code: 15, details: 'Storage damaged in blob 3', timestamp: 9 },
    { id: 3, states: Buffer.alloc(38, 1) },
  ],
};

const norm = (o: unknown) => JSON.parse(JSON.stringify(o, (_, v: unknown) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v))) as unknown;

t.test('operations: ours and protobufjs read each other', async (t) => {
  const ours = decodeOperationBatch(pbEncodeOps(batch));
  const theirs = pbDecodeOps(encodeOperationBatch(batch));
  for (const [i, op] of batch.ops.entries()) {
    t.same(ours.ops[i].keys, op.keys, `op ${i}: keys (ours)`);
    t.same(theirs.ops[i].keys, op.keys, `op ${i}: keys (protobufjs)`);
    for (const f of ['id', 'kind', 'timestamp', 'tick', 'node', 'source', 'is_alien'] as const) {
      t.equal(Number(ours.ops[i][f] ?? 0), Number(op[f] ?? 0), `op ${i}: ${f} (ours)`);
      t.equal(Number(theirs.ops[i][f] ?? 0), Number(op[f] ?? 0), `op ${i}: ${f} (protobufjs)`);
    }
    t.same(norm(ours.ops[i].remote_nodes ?? []), op.remote_nodes ?? []);
    t.same(norm(theirs.ops[i].force_alien_nodes), op.force_alien_nodes ?? []);
    t.same(Buffer.from(ours.ops[i].value ?? []), op.value ?? Buffer.alloc(0));
  }
});

t.test('one operation encoded around its value: the bytes before it, the value, the bytes after it are its batch', async (t) => {
  const value = Buffer.alloc(200_000);
  for (let i = 0; i < value.length; i++) value[i] = (i * 13) & 0xff;
  // A key that is the same bytes (and even the same buffer) as the value is still written.
  for (const keys of [[Buffer.from('0123456789abcdef')], [value.subarray(0, 16)], [value]]) {
    const op = { id: 77, kind: 4, keys, value, timestamp: 1795680839, tick: 3, node: 2, offset: 1 << 20, size: 64 << 20, remote_nodes: ['n3'] };
    const [before, after] = encodeAroundValue(op);
    const whole = Buffer.concat([before, value, after]);
    t.ok(whole.equals(encodeOperationBatch({ ops: [op] })), `keys of ${keys[0].length} bytes: the same bytes as the batch encoded whole`);
    t.equal(before.length + after.length, whole.length - value.length, 'the value itself is in neither');
    const theirs = pbDecodeOps(whole);
    t.ok(Buffer.from(theirs.ops[0].value ?? []).equals(value) && Number(theirs.ops[0].offset) === op.offset, 'protobufjs reads it');
  }
});

t.test('results: ours and protobufjs read each other', async (t) => {
  const ours = decodeResultBatch(pbEncodeResults(results));
  const theirs = pbDecodeResults(encodeResultBatch(results));
  for (const [i, r] of results.results.entries()) {
    for (const f of ['id', 'code', 'kind', 'timestamp', 'tick', 'node'] as const) {
      t.equal(Number(ours.results[i][f] ?? 0), Number(r[f] ?? 0), `result ${i}: ${f} (ours)`);
      t.equal(Number(theirs.results[i][f] ?? 0), Number(r[f] ?? 0), `result ${i}: ${f} (protobufjs)`);
    }
    t.equal(ours.results[i].details ?? '', r.details ?? '');
    t.same(Buffer.from(theirs.results[i].value ?? []), r.value ?? Buffer.alloc(0));
    t.same(Buffer.from(ours.results[i].states ?? []), r.states ?? Buffer.alloc(0));
  }
  t.equal(ours.results[2].timestamp, undefined, 'an absent version stays undefined');
});

t.test('unknown fields are skipped; bad bytes throw; huge u64 decode as -1', async (t) => {
  // Field 99 (varint), field 98 (fixed64), field 97 (bytes), then op 1 with an unknown field 50 inside.
  const op = Buffer.concat([Buffer.from([0x08, 0x05, 0x90, 0x03, 0x01]), Buffer.from([0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])]);
  const bytes = Buffer.concat([
    Buffer.from([0x98, 0x06, 0x07]),
    Buffer.from([0x91, 0x06, 1, 2, 3, 4, 5, 6, 7, 8]),
    Buffer.from([0x8a, 0x06, 0x02, 0xaa, 0xbb]),
    Buffer.from([0x0a, op.length]),
    op,
  ]);
  const decoded = decodeOperationBatch(bytes);
  t.equal(decoded.ops.length, 1);
  t.equal(decoded.ops[0].id, 5);
  t.equal(decoded.ops[0].timestamp, -1, 'a u64 beyond 2^53 is -1');
  t.throws(() => decodeOperationBatch(Buffer.from([0x0a, 0x10, 0x08])), /truncated/);
  t.throws(() => decodeOperationBatch(Buffer.from([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])), /varint/);
  t.throws(() => decodeResultBatch(Buffer.from([0x0b])), /wire type/);
  t.same(decodeOperationBatch(Buffer.alloc(0)), { ops: [] }, 'an empty batch');
  // A large batch (lengths of several bytes) survives.
  const big: OperationBatchMsg = { ops: Array.from({ length: 3 }, (_, i) => ({ id: i + 1, kind: 0, keys: [Buffer.alloc(8, i)], value: Buffer.alloc(200_000, i) })) };
  const back = pbDecodeOps(encodeOperationBatch(big));
  t.same(back.ops.map((o) => o.value?.length), [200_000, 200_000, 200_000]);
});

t.test('a batch is weighed from its bytes as its operations are one by one, and refused as decoding refuses it', async (t) => {
  const sum = (b: OperationBatchMsg) => b.ops.reduce((n, op) => n + operationWeight(op), 0);
  const w = weighBatch(encodeOperationBatch(batch));
  t.same(w, { bytes: sum(batch), ops: 3, firstId: 1, firstKind: 0 }, 'the sample batch, from our bytes');
  t.equal(weighBatch(pbEncodeOps(batch)).bytes, sum(batch), 'and from protobufjs bytes');
  // An Exist weighs its keys 32 times over; a Put its value.
  const exist = { ops: [{ id: 9, kind: 2, keys: Array.from({ length: 1000 }, () => Buffer.alloc(16)) }] };
  t.same(weighBatch(encodeOperationBatch(exist)), { bytes: 6 * 1024 + 1000 * 18 * 32, ops: 1, firstId: 9, firstKind: 2 }, 'an Exist of 1,000 keys of 16 bytes');
  const put = { ops: [{ id: 1, kind: 0, keys: [Buffer.alloc(8)], value: Buffer.alloc(1 << 20) }] };
  t.ok(weighBatch(encodeOperationBatch(put)).bytes > 1 << 20, 'a Put of 1 MiB weighs its value and more');
  t.same(weighBatch(Buffer.alloc(0)), { bytes: 0, ops: 0, firstId: 0, firstKind: 0 }, 'an empty batch');
  for (const bad of [Buffer.from([0x0a, 0x10, 0x08]), Buffer.from([0x0a, 0x02, 0x1a, 0x05]), Buffer.from([0x0b])]) {
    t.throws(() => decodeOperationBatch(bad), `${bad.toString('hex')}: decoding refuses it`);
    t.throws(() => weighBatch(bad), `${bad.toString('hex')}: and weighing`);
  }
});
