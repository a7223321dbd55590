// bob's Blob message (bob.proto), the answer of BobApi.Get, written here
// rather than by protobufjs, so that an answer need not take a fresh
// buffer: one of a value up to one of the budget's buffers (VALUE_BUFFER)
// is written into a buffer kept for the next answers. grpc-js copies what a
// serializer returns, behind its message header, before it returns from the
// write that called it (ReadFile's chunks rely on the same,
// ./replicas-service.ts), so the kept buffer is free again by the next call.
// A fresh buffer for every answer of 1 MiB had V8 collect its whole heap
// every ~15 answers (docs/BENCHMARKS.md). Larger answers get a buffer of
// their own, as protobufjs gave them.
import { VALUE_BUFFER } from '../rest/body-budget';
import { BlobMetaMsg, BlobMsg } from './proto';
import { BYTES, num, Writer } from './protobuf-wire';

// The kept buffer: a value of VALUE_BUFFER bytes, the header of its field and its meta.
const KEPT = VALUE_BUFFER + 64;

function writeMeta(f: Writer, m: BlobMetaMsg): void {
  f.uint(1, num(m.timestamp));
  f.uint(1001, num(m.oyster_tick));
  f.uint(1002, m.oyster_node ?? 0);
  f.uint(1003, m.oyster_deleted ? 1 : 0);
}

function writeBlob(f: Writer, m: BlobMsg, metaSize: number): void {
  f.bytes(1, m.data);
  if (m.meta === null) return;
  f.varint(2 * 8 + BYTES);
  f.varint(metaSize);
  writeMeta(f, m.meta);
}

let kept: Buffer | null = null;

/** `m` in protobuf's wire format; the bytes are valid until the next call (they may be in the kept buffer). */
export function encodeBlob(m: BlobMsg): Buffer {
  const counter = new Writer(null);
  if (m.meta !== null) writeMeta(counter, m.meta);
  const metaSize = counter.at;
  counter.at = 0;
  writeBlob(counter, m, metaSize);
  const size = counter.at;
  let buf: Buffer;
  if (size <= KEPT) {
    kept ??= Buffer.allocUnsafeSlow(KEPT);
    buf = kept;
  } else {
    buf = Buffer.allocUnsafe(size);
  }
  const w = new Writer(buf);
  writeBlob(w, m, metaSize);
  return buf.subarray(0, size);
}
