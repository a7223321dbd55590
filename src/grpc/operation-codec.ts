// The messages of Replicas.Operations (oyster.proto) in protobuf's wire
// format, written and read here rather than by protobufjs: they carry every
// data operation between Oyster peers, and building a message object per
// operation (and 64-bit fields as strings) cost more than the rest of the
// stream. Any protobuf implementation reads and writes the same bytes;
// unknown fields are skipped, as protobuf requires. Decoding throws on bytes
// that are not a message (the server answers INVALID_ARGUMENT); u64 fields
// beyond 2^53 decode as -1, which validation refuses. A result's version
// fields are left undefined when absent (a failure without a version).
import { OperationBatchMsg, OperationMsg, ResultBatchMsg, ResultMsg } from './proto';

const VARINT = 0;
const FIXED64 = 1;
const BYTES = 2;
const FIXED32 = 5;

/** Bytes of `v` as a varint. */
function varintSize(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 0x80);
    n++;
  }
  return n;
}

function num(v: number | string | undefined): number {
  return typeof v === 'string' ? Number(v) : (v ?? 0);
}

// Every message is sized before it is written (sizeOf* below), so that a
// batch is one allocation of its exact length and no nested message is
// moved once its length is known.

/** Size of an unsigned field; 0 when the value is 0 (not written). */
function uintSize(field: number, v: number): number {
  return v === 0 ? 0 : varintSize(field * 8) + varintSize(v);
}

function bytesSize(field: number, length: number): number {
  return varintSize(field * 8) + varintSize(length) + length;
}

/** Writes fields into a buffer sized beforehand. */
class Writer {
  at = 0;

  constructor(readonly buf: Buffer) {}

  varint(v: number): void {
    const buf = this.buf;
    while (v >= 0x80) {
      buf[this.at++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    buf[this.at++] = v;
  }

  uint(field: number, v: number): void {
    if (v === 0) return;
    this.varint(field * 8 + VARINT);
    this.varint(v);
  }

  bytes(field: number, b: Buffer): void {
    this.varint(field * 8 + BYTES);
    this.varint(b.length);
    b.copy(this.buf, this.at);
    this.at += b.length;
  }

  /** A nested message's tag and length; its fields follow. */
  message(field: number, length: number): void {
    this.varint(field * 8 + BYTES);
    this.varint(length);
  }
}

/** Reads one message's fields. */
class Reader {
  at: number;

  constructor(
    readonly buf: Buffer,
    from = 0,
    readonly end = buf.length,
  ) {
    this.at = from;
  }

  more(): boolean {
    return this.at < this.end;
  }

  varint(): number {
    let v = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.at >= this.end) throw new Error('truncated varint');
      const b = this.buf[this.at++];
      v += (b & 0x7f) * scale;
      scale *= 0x80;
      if (b < 0x80) return v > Number.MAX_SAFE_INTEGER ? -1 : v;
    }
    throw new Error('varint longer than 10 bytes');
  }

  /** The bytes of a length-delimited field, without copying them. */
  bytes(): Buffer {
    const n = this.varint();
    if (n < 0 || this.at + n > this.end) throw new Error('truncated field');
    const b = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return b;
  }

  skip(type: number): void {
    if (type === VARINT) this.varint();
    else if (type === BYTES) this.bytes();
    else if (type === FIXED64) this.at += 8;
    else if (type === FIXED32) this.at += 4;
    else throw new Error(`wire type ${type}`);
    if (this.at > this.end) throw new Error('truncated field');
  }
}

function sizeOfOperation(op: OperationMsg): number {
  let n = uintSize(1, op.id) + uintSize(2, op.kind);
  for (const k of op.keys) n += bytesSize(3, k.length);
  if (op.value && op.value.length > 0) n += bytesSize(4, op.value.length);
  n += uintSize(5, num(op.timestamp)) + uintSize(6, num(op.tick)) + uintSize(7, op.node ?? 0) + uintSize(8, op.source ?? 0);
  for (const name of op.remote_nodes ?? []) if (name) n += bytesSize(9, Buffer.byteLength(name));
  n += uintSize(10, op.is_alien ? 1 : 0);
  for (const name of op.force_alien_nodes ?? []) if (name) n += bytesSize(11, Buffer.byteLength(name));
  return n;
}

export function encodeOperationBatch(batch: OperationBatchMsg): Buffer {
  const sizes = batch.ops.map(sizeOfOperation);
  let total = 0;
  for (const n of sizes) total += bytesSize(1, n);
  const w = new Writer(Buffer.allocUnsafe(total));
  batch.ops.forEach((op, i) => {
    w.message(1, sizes[i]);
    w.uint(1, op.id);
    w.uint(2, op.kind);
    for (const k of op.keys) w.bytes(3, k);
    if (op.value && op.value.length > 0) w.bytes(4, op.value);
    w.uint(5, num(op.timestamp));
    w.uint(6, num(op.tick));
    w.uint(7, op.node ?? 0);
    w.uint(8, op.source ?? 0);
    for (const name of op.remote_nodes ?? []) if (name) w.bytes(9, Buffer.from(name, 'utf8'));
    w.uint(10, op.is_alien ? 1 : 0);
    for (const name of op.force_alien_nodes ?? []) if (name) w.bytes(11, Buffer.from(name, 'utf8'));
  });
  return w.buf;
}

/** Calls `read` with a reader of each message of the batch's field 1; other fields are skipped. */
function eachOfBatch(buf: Buffer, read: (f: Reader) => void): void {
  const r = new Reader(buf);
  while (r.more()) {
    const tag = r.varint();
    if (tag !== 1 * 8 + BYTES) {
      r.skip(tag & 7);
      continue;
    }
    const body = r.bytes();
    const from = body.byteOffset - buf.byteOffset;
    read(new Reader(buf, from, from + body.length));
  }
}

/**
 * An operation with every field present: all operations, made here or
 * decoded, share one object shape, and the code that reads them stays monomorphic.
 */
export function newOperation(kind: number, keys: Buffer[]): OperationMsg {
  return { id: 0, kind, keys, value: undefined, timestamp: 0, tick: 0, node: 0, source: 0, remote_nodes: undefined, is_alien: false, force_alien_nodes: undefined };
}

/** A result with every field present (see newOperation); version fields stay undefined unless set. */
export function newResult(id: number): ResultMsg {
  return { id, code: 0, details: '', kind: 0, timestamp: undefined, tick: undefined, node: undefined, value: undefined, states: undefined };
}

export function decodeOperationBatch(buf: Buffer): OperationBatchMsg {
  const ops: OperationMsg[] = [];
  eachOfBatch(buf, (f) => {
    const op = newOperation(0, []);
    while (f.more()) {
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
        default: f.skip(t & 7);
      }
    }
    ops.push(op);
  });
  return { ops };
}

function sizeOfResult(r: ResultMsg): number {
  let n = uintSize(1, r.id) + uintSize(2, r.code ?? 0);
  if (r.details) n += bytesSize(3, Buffer.byteLength(r.details));
  n += uintSize(4, r.kind ?? 0) + uintSize(5, num(r.timestamp)) + uintSize(6, num(r.tick)) + uintSize(7, r.node ?? 0);
  if (r.value && r.value.length > 0) n += bytesSize(8, r.value.length);
  if (r.states && r.states.length > 0) n += bytesSize(9, r.states.length);
  return n;
}

export function encodeResultBatch(batch: ResultBatchMsg): Buffer {
  const sizes = batch.results.map(sizeOfResult);
  let total = 0;
  for (const n of sizes) total += bytesSize(1, n);
  const w = new Writer(Buffer.allocUnsafe(total));
  batch.results.forEach((r, i) => {
    w.message(1, sizes[i]);
    w.uint(1, r.id);
    w.uint(2, r.code ?? 0);
    if (r.details) w.bytes(3, Buffer.from(r.details, 'utf8'));
    w.uint(4, r.kind ?? 0);
    w.uint(5, num(r.timestamp));
    w.uint(6, num(r.tick));
    w.uint(7, r.node ?? 0);
    if (r.value && r.value.length > 0) w.bytes(8, r.value);
    if (r.states && r.states.length > 0) w.bytes(9, r.states);
  });
  return w.buf;
}

export function decodeResultBatch(buf: Buffer): ResultBatchMsg {
  const results: ResultMsg[] = [];
  eachOfBatch(buf, (f) => {
    const res = newResult(0);
    while (f.more()) {
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
        default: f.skip(t & 7);
      }
    }
    results.push(res);
  });
  return { results };
}
