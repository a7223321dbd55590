// The messages of Replicas.Operations (oyster.proto) in protobuf's wire
// format, written and read here rather than by protobufjs: they carry every
// data operation between Oyster peers, and building a message object per
// operation (and 64-bit fields as strings) cost more than the rest of the
// stream. Any protobuf implementation reads and writes the same bytes;
// unknown fields are skipped, as protobuf requires. Decoding throws on bytes
// that are not a message (the server answers INVALID_ARGUMENT); u64 fields
// beyond 2^53 decode as -1, which validation refuses. A result's version
// fields are left undefined when absent (a failure without a version).
import { Version } from '../model/version';
import { OperationBatchMsg, OperationKind, OperationMsg, ResultBatchMsg, ResultMsg } from './proto';
import { BYTES, num, Reader, VARINT, varintSize, Writer } from './protobuf-wire';
import { EXIST_COST } from './receive-budget';

/**
 * What an operation holds while it runs besides its value and keys: its
 * decoded objects (430–530 bytes), then its promises, the engine's request
 * and its result. Measured with 100,000 at once of 16-byte keys: a Get
 * 1.1 KB, a Put 4.6 KB, a Delete 6.2 KB.
 */
const OP_BYTES = 6 * 1024;
/** The object a decoded operation makes for each further key. */
const KEY_OBJECT = 112;
/** A key's field besides its bytes: its tag and length. */
const KEY_FIELD = 2;

/**
 * What an operation holds while it runs, bytes: its value, keys and
 * objects; an Exist's keys EXIST_COST times their bytes in the message, as
 * a BobApi Exist's (./receive-budget.ts).
 */
function operationCost(kind: number, keys: number, keyBytes: number, valueBytes: number): number {
  if (kind === OperationKind.EXIST) return OP_BYTES + (keyBytes + keys * KEY_FIELD) * EXIST_COST;
  return OP_BYTES + Math.max(0, keys - 1) * KEY_OBJECT + keyBytes + valueBytes;
}

/** What `op` will hold at the node that runs it (operationCost). */
export function operationWeight(op: OperationMsg): number {
  let keyBytes = 0;
  for (const k of op.keys) keyBytes += k.length;
  return operationCost(op.kind, op.keys.length, keyBytes, op.value?.length ?? 0);
}

/** An encoded batch's operations, weighed before they are decoded. */
export interface BatchWeight {
  /** What they hold while they run, bytes (operationCost of each). */
  bytes: number;
  ops: number;
  /** The first operation's id and kind. */
  firstId: number;
  firstKind: number;
}

/**
 * Weighs an encoded OperationBatch without decoding it: no object per
 * operation or key. Throws on bytes that are not a batch, as
 * decodeOperationBatch does.
 */
export function weighBatch(buf: Buffer): BatchWeight {
  const w: BatchWeight = { bytes: 0, ops: 0, firstId: 0, firstKind: 0 };
  eachOfBatch(buf, (f, end) => {
    let id = 0;
    let kind = 0;
    let keys = 0;
    let keyBytes = 0;
    let valueBytes = 0;
    while (f.at < end) {
      const t = f.varint();
      if (t === 1 * 8 + VARINT) id = f.varint();
      else if (t === 2 * 8 + VARINT) kind = f.varint();
      else if (t === 3 * 8 + BYTES) {
        keys++;
        keyBytes += f.skipBytes();
      } else if (t === 4 * 8 + BYTES) valueBytes = f.skipBytes();
      else f.skip(t & 7);
    }
    if (w.ops === 0) {
      w.firstId = id;
      w.firstKind = kind;
    }
    w.ops++;
    w.bytes += operationCost(kind, keys, keyBytes, valueBytes);
  });
  return w;
}

/** A batch: field 1 repeated, one nested message per item, in a buffer `alloc` gives for its exact length. */
function encodeBatch<T>(items: T[], write: (f: Writer, item: T) => void, alloc: (bytes: number) => Buffer = Buffer.allocUnsafe): Buffer {
  const counter = new Writer(null);
  const sizes = items.map((item) => {
    counter.at = 0;
    write(counter, item);
    return counter.at;
  });
  let total = 0;
  for (const n of sizes) total += varintSize(1 * 8) + varintSize(n) + n;
  const batch = alloc(total);
  const w = new Writer(batch);
  items.forEach((item, i) => {
    w.varint(1 * 8 + BYTES);
    w.varint(sizes[i]);
    write(w, item);
  });
  return batch;
}

function writeOperation(f: Writer, op: OperationMsg): void {
  f.uint(1, op.id);
  f.uint(2, op.kind);
  for (const k of op.keys) f.bytes(3, k);
  if (op.value && op.value.length > 0) f.bytes(4, op.value);
  f.uint(5, num(op.timestamp));
  f.uint(6, num(op.tick));
  f.uint(7, op.node ?? 0);
  f.uint(8, op.source ?? 0);
  for (const name of op.remote_nodes ?? []) f.string(9, name);
  f.uint(10, op.is_alien ? 1 : 0);
  for (const name of op.force_alien_nodes ?? []) f.string(11, name);
  f.uint(12, op.whole_up_to ?? 0);
  f.uint(13, op.offset ?? 0);
  f.uint(14, op.length ?? 0);
  f.uint(15, op.check_rest ? 1 : 0);
  f.uint(16, op.size ?? 0);
  f.uint(17, op.abort ? 1 : 0);
}

export function encodeOperationBatch(batch: OperationBatchMsg, alloc?: (bytes: number) => Buffer): Buffer {
  return encodeBatch(batch.ops, writeOperation, alloc);
}

/**
 * A batch of `op` alone, as the bytes before its value and those after it:
 * the value is sent from its own buffer between them (src/link), not copied.
 */
export function encodeAroundValue(op: OperationMsg & { value: Buffer }): [Buffer, Buffer] {
  const counter = new Writer(null);
  writeOperation(counter, op);
  const size = counter.at;
  const out = Buffer.allocUnsafe(varintSize(1 * 8) + varintSize(size) + size - op.value.length);
  const w = new Writer(out, 4, op.value);
  w.varint(1 * 8 + BYTES);
  w.varint(size);
  writeOperation(w, op);
  return [out.subarray(0, w.holeAt), out.subarray(w.holeAt)];
}

/**
 * Calls `read` for each message of the batch's field 1 (other fields are
 * skipped) with one reader over the whole batch, at the message's start,
 * and where it ends: `read` reads its fields while `f.at < end`. Nothing is
 * made per message.
 */
function eachOfBatch(buf: Buffer, read: (f: Reader, end: number) => void): void {
  const f = new Reader(buf);
  while (f.more()) {
    const tag = f.varint();
    if (tag !== 1 * 8 + BYTES) {
      f.skip(tag & 7);
      continue;
    }
    const length = f.varint();
    const end = f.at + length;
    if (length < 0 || end > buf.length) throw new Error('truncated field');
    read(f, end);
    if (f.at !== end) throw new Error('truncated field');
  }
}

/**
 * An operation with every field present: all operations, made here or
 * decoded, share one object shape, and the code that reads them stays monomorphic.
 */
export function newOperation(kind: number, keys: Buffer[]): OperationMsg {
  return {
    id: 0,
    kind,
    keys,
    value: undefined,
    timestamp: 0,
    tick: 0,
    node: 0,
    source: 0,
    remote_nodes: undefined,
    is_alien: false,
    force_alien_nodes: undefined,
    whole_up_to: 0,
    offset: 0,
    length: 0,
    check_rest: false,
    size: 0,
    abort: false,
  };
}

/** A result with every field present (see newOperation); version fields stay undefined unless set. */
export function newResult(id: number): ResultMsg {
  return { id, code: 0, details: '', kind: 0, timestamp: undefined, tick: undefined, node: undefined, value: undefined, states: undefined, size: 0 };
}

/** Sets the version fields of an operation or a result. */
export function setVersion<M extends OperationMsg | ResultMsg>(m: M, v: Version): M {
  m.timestamp = v.timestamp;
  m.tick = v.tick;
  m.node = v.node;
  return m;
}

export function decodeOperationBatch(buf: Buffer): OperationBatchMsg {
  const ops: OperationMsg[] = [];
  eachOfBatch(buf, (f, end) => {
    const op = newOperation(0, []);
    while (f.at < end) {
      const t = f.varint();
      switch (t) {
        case 1 * 8 + VARINT: op.id = f.varint(); break;
        case 2 * 8 + VARINT: op.kind = f.varint(); break;
        case 3 * 8 + BYTES: op.keys.push(f.bytes()); break;
        case 4 * 8 + BYTES: op.value = f.bytes(); break;
        case 5 * 8 + VARINT: op.timestamp = f.varint(); break;
        case 6 * 8 + VARINT: op.tick = f.varint(); break;
        case 7 * 8 + VARINT: op.node = f.varint(); break;
        case 8 * 8 + VARINT: op.source = f.varint(); break;
        case 9 * 8 + BYTES: (op.remote_nodes ??= []).push(f.bytes().toString('utf8')); break;
        case 10 * 8 + VARINT: op.is_alien = f.varint() !== 0; break;
        case 11 * 8 + BYTES: (op.force_alien_nodes ??= []).push(f.bytes().toString('utf8')); break;
        case 12 * 8 + VARINT: op.whole_up_to = f.varint(); break;
        case 13 * 8 + VARINT: op.offset = f.varint(); break;
        case 14 * 8 + VARINT: op.length = f.varint(); break;
        case 15 * 8 + VARINT: op.check_rest = f.varint() !== 0; break;
        case 16 * 8 + VARINT: op.size = f.varint(); break;
        case 17 * 8 + VARINT: op.abort = f.varint() !== 0; break;
        default: f.skip(t & 7);
      }
    }
    ops.push(op);
  });
  return { ops };
}

function writeResult(f: Writer, r: ResultMsg): void {
  f.uint(1, r.id);
  f.uint(2, r.code ?? 0);
  f.string(3, r.details);
  f.uint(4, r.kind ?? 0);
  f.uint(5, num(r.timestamp));
  f.uint(6, num(r.tick));
  f.uint(7, r.node ?? 0);
  if (r.value && r.value.length > 0) f.bytes(8, r.value);
  if (r.states && r.states.length > 0) f.bytes(9, r.states);
  f.uint(10, r.size ?? 0);
}

/** `alloc`: where the bytes go (a buffer of exactly the length asked for). */
export function encodeResultBatch(batch: ResultBatchMsg, alloc?: (bytes: number) => Buffer): Buffer {
  return encodeBatch(batch.results, writeResult, alloc);
}

export function decodeResultBatch(buf: Buffer): ResultBatchMsg {
  const results: ResultMsg[] = [];
  eachOfBatch(buf, (f, end) => {
    const res = newResult(0);
    while (f.at < end) {
      const t = f.varint();
      switch (t) {
        case 1 * 8 + VARINT: res.id = f.varint(); break;
        case 2 * 8 + VARINT: res.code = f.varint(); break;
        case 3 * 8 + BYTES: res.details = f.bytes().toString('utf8'); break;
        case 4 * 8 + VARINT: res.kind = f.varint(); break;
        case 5 * 8 + VARINT: res.timestamp = f.varint(); break;
        case 6 * 8 + VARINT: res.tick = f.varint(); break;
        case 7 * 8 + VARINT: res.node = f.varint(); break;
        case 8 * 8 + BYTES: res.value = f.bytes(); break;
        case 9 * 8 + BYTES: res.states = f.bytes(); break;
        case 10 * 8 + VARINT: res.size = f.varint(); break;
        default: f.skip(t & 7);
      }
    }
    results.push(res);
  });
  return { results };
}
