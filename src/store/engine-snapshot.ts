// What the engine hands back packed — the newest record of each key of a
// snapshot or of digest buckets — decoded, and the bounds of digest
// arguments (native/engine/digest.h).
import { Version } from '../model/version';

/** The newest record of one key, without its value. */
export interface SnapshotEntry {
  key: Buffer;
  kind: 'found' | 'deleted';
  version: Version;
}

// Snapshot entries: [u8 kind (1 value, 2 tombstone)][u64 timestamp LE][u64 stamp LE][key],
// stamp = (tick << 12) | node (native/engine/engine.h).
const SNAPSHOT_FIXED = 17;

/** Decodes packed snapshot entries of keySize-byte keys; the keys are views of `packed`. */
export function decodeEntries(packed: Buffer, keySize: number): SnapshotEntry[] {
  const size = SNAPSHOT_FIXED + keySize;
  const out: SnapshotEntry[] = [];
  for (let off = 0; off + size <= packed.length; off += size) {
    // The stamp in two halves: tick is its upper 52 bits, node the lower 12.
    const low = packed.readUInt32LE(off + 9);
    const high = packed.readUInt32LE(off + 13);
    out.push({
      kind: packed[off] === 2 ? 'deleted' : 'found',
      version: {
        timestamp: packed.readUInt32LE(off + 1) + packed.readUInt32LE(off + 5) * 2 ** 32,
        tick: high * 2 ** 20 + (low >>> 12),
        node: low & 0xfff,
      },
      key: packed.subarray(off + SNAPSHOT_FIXED, off + size),
    });
  }
  return out;
}

/** Bucket bits of EngineSet.digest and entries: 2^16 digests are 512 KiB. */
export const MAX_DIGEST_BITS = 16;

// The addon checks these too; checked here as well because an empty set never
// reaches it, and because a Uint32Array would silently wrap a bad bucket.
export function checkDigestArgs(bits: number, buckets: readonly number[] = []): void {
  if (typeof bits !== 'number') throw new TypeError('bits must be a number');
  if (!Number.isInteger(bits) || bits < 0 || bits > MAX_DIGEST_BITS) {
    throw new RangeError(`bits must be an integer in 0..${MAX_DIGEST_BITS}`);
  }
  for (const [i, b] of buckets.entries()) {
    if (typeof b !== 'number') throw new TypeError(`buckets[${i}] must be a number`);
    if (!Number.isInteger(b) || b < 0 || b >= 2 ** bits) throw new RangeError(`buckets[${i}] must be below 2^${bits}`);
  }
}
