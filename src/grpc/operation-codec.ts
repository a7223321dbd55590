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

/** Writes messages into a growing buffer. */
class Writer {
  buf = Buffer.allocUnsafe(256);
  at = 0;

  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n));
    this.buf.copy(next, 0, 0, this.at);
    this.buf = next;
  }

  varint(v: number): void {
    this.room(10);
    while (v >= 0x80) {
      this.buf[this.at++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.at++] = v;
  }

  tag(field: number, type: number): void {
    this.varint(field * 8 + type);
  }

  uint(field: number, v: number | string | undefined): void {
    const n = typeof v === 'string' ? Number(v) : (v ?? 0);
    if (n === 0) return;
    this.tag(field, VARINT);
    this.varint(n);
  }

  bytes(field: number, b: Buffer | undefined, always = false): void {
    if (!b || (b.length === 0 && !always)) return;
    this.tag(field, BYTES);
    this.varint(b.length);
    this.room(b.length);
    b.copy(this.buf, this.at);
    this.at += b.length;
  }

  string(field: number, s: string | undefined): void {
    if (s) this.bytes(field, Buffer.from(s, 'utf8'));
  }

  /** A nested message: its length is written once it is known. */
  message(field: number, write: () => void): void {
    this.tag(field, BYTES);
    // Up to 5 bytes of length are kept free; the body moves down if fewer are needed.
    this.room(5);
    const lengthAt = this.at;
    this.at += 5;
    write();
    const length = this.at - lengthAt - 5;
    let n = 1;
    for (let v = length; v >= 0x80; v = Math.floor(v / 0x80)) n++;
    if (n < 5) this.buf.copyWithin(lengthAt + n, lengthAt + 5, this.at);
    this.at -= 5 - n;
    let v = length;
    for (let i = 0; i < n; i++) {
      this.buf[lengthAt + i] = i < n - 1 ? (v % 0x80) | 0x80 : v;
      v = Math.floor(v / 0x80);
    }
  }

  done(): Buffer {
    return this.buf.subarray(0, this.at);
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

export function encodeOperationBatch(batch: OperationBatchMsg): Buffer {
  const w = new Writer();
  for (const op of batch.ops) {
    w.message(1, () => {
      w.uint(1, op.id);
      w.uint(2, op.kind);
      for (const k of op.keys) w.bytes(3, k, true);
      w.bytes(4, op.value);
      w.uint(5, op.timestamp);
      w.uint(6, op.tick);
      w.uint(7, op.node);
      w.uint(8, op.source);
      for (const n of op.remote_nodes ?? []) w.string(9, n);
      w.uint(10, op.is_alien ? 1 : 0);
      for (const n of op.force_alien_nodes ?? []) w.string(11, n);
    });
  }
  return w.done();
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

export function decodeOperationBatch(buf: Buffer): OperationBatchMsg {
  const ops: OperationMsg[] = [];
  eachOfBatch(buf, (f) => {
    const op: OperationMsg = { id: 0, kind: 0, keys: [], value: undefined, timestamp: 0, tick: 0, node: 0, source: 0, remote_nodes: [], is_alien: false, force_alien_nodes: [] };
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
        case 9 * 8 + BYTES: op.remote_nodes!.push(f.bytes().toString('utf8')); break;
        case 10 * 8 + VARINT: op.is_alien = f.varint() !== 0; break;
        case 11 * 8 + BYTES: op.force_alien_nodes!.push(f.bytes().toString('utf8')); break;
        default: f.skip(t & 7);
      }
    }
    ops.push(op);
  });
  return { ops };
}

export function encodeResultBatch(batch: ResultBatchMsg): Buffer {
  const w = new Writer();
  for (const res of batch.results) {
    w.message(1, () => {
      w.uint(1, res.id);
      w.uint(2, res.code);
      w.string(3, res.details);
      w.uint(4, res.kind);
      w.uint(5, res.timestamp);
      w.uint(6, res.tick);
      w.uint(7, res.node);
      w.bytes(8, res.value);
      w.bytes(9, res.states);
    });
  }
  return w.done();
}

export function decodeResultBatch(buf: Buffer): ResultBatchMsg {
  const results: ResultMsg[] = [];
  eachOfBatch(buf, (f) => {
    const res: ResultMsg = { id: 0, code: 0, details: '', kind: 0, timestamp: undefined, tick: undefined, node: undefined, value: undefined, states: undefined };
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
