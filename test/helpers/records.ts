// Deterministic keys and values: a value can be recomputed from its key
// number and version, so a test can tell a right value from a mixed-up one.
import { Version } from '../../src/model/version';

/** A version to write at: bob's timestamp, and Oyster's tick and node (0 when the write carries none). */
export function ver(timestamp: number, tick = 0, node = 0): Version {
  return { timestamp, tick, node };
}

/** Key number n as a little-endian integer padded to keySize bytes (bob's integer key form). */
export function keyOf(n: number, keySize = 16): Buffer {
  const k = Buffer.alloc(keySize);
  k.writeUIntLE(n, 0, Math.min(6, keySize));
  return k;
}

/** size bytes derived from (n, variant); starts with n and variant when it has room. */
export function valueOf(n: number, variant: number, size: number): Buffer {
  const words = new Uint32Array(Math.ceil(size / 4));
  // xorshift32 seeded from (n, variant): cheap enough for 64 MiB values.
  let x = (Math.imul(n ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(variant + 1, 0xc2b2ae35) ^ Math.floor(n / 2 ** 32)) | 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x;
  }
  const v = Buffer.from(words.buffer, 0, size);
  if (size >= 12) {
    v.writeUInt32LE(n >>> 0, 0);
    v.writeUInt32LE(Math.floor(n / 2 ** 32), 4);
    v.writeUInt32LE(variant >>> 0, 8);
  }
  return v;
}

/** Sizes spread over [0, max] that include the edge cases 0 and 1. */
export function sizeOf(n: number, max: number): number {
  if (n % 97 === 0) return 0;
  if (n % 89 === 0) return 1;
  return (n * 7919) % (max + 1);
}
