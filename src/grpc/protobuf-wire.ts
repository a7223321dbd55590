// Protobuf's wire format, the little of it Oyster's hand-written codecs
// need (./operation-codec.ts, ./blob-codec.ts): varints, length-delimited
// fields, and skipping what a reader does not know.

export const VARINT = 0;
export const FIXED64 = 1;
export const BYTES = 2;
export const FIXED32 = 5;

/** Bytes of `v` as a varint. */
export function varintSize(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 0x80);
    n++;
  }
  return n;
}

export function num(v: number | string | undefined): number {
  return typeof v === 'string' ? Number(v) : (v ?? 0);
}

// A message's fields are listed once, in a function that writes them to a
// Writer, and written twice: without a buffer the Writer only counts their
// bytes, then into a buffer with room for that many. No nested message is
// moved once its length is known. Zero numbers and empty strings are not
// written.
export class Writer {
  /** Bytes written (or counted) so far. */
  at = 0;
  /** Where the bytes of `hole` would have gone, once written around. */
  holeAt = -1;

  /** `hole`: the bytes of field `holeField` left out (its tag and length written): the caller sends them from where they are. */
  constructor(
    readonly buf: Buffer | null,
    private readonly holeField = 0,
    private readonly hole: Buffer | null = null,
  ) {}

  varint(v: number): void {
    const buf = this.buf;
    if (buf === null) {
      this.at += varintSize(v);
      return;
    }
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
    if (field === this.holeField && b === this.hole && this.buf !== null) {
      this.holeAt = this.at;
      return;
    }
    if (this.buf !== null) b.copy(this.buf, this.at);
    this.at += b.length;
  }

  string(field: number, s: string | undefined): void {
    if (!s) return;
    const length = Buffer.byteLength(s);
    this.varint(field * 8 + BYTES);
    this.varint(length);
    if (this.buf !== null) this.buf.write(s, this.at, 'utf8');
    this.at += length;
  }
}

/** Reads one message's fields. */
export class Reader {
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

  /** Skips a length-delimited field; returns its length. */
  skipBytes(): number {
    const n = this.varint();
    if (n < 0 || this.at + n > this.end) throw new Error('truncated field');
    this.at += n;
    return n;
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
