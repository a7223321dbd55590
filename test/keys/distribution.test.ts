// Key -> vdisk: the key as a little-endian integer, modulo the vdisk count.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { parseRestKey } from '../../src/keys/key';
import { vdiskOf } from '../../src/keys/distribution';

function reference(key: Uint8Array, n: number): number {
  let v = 0n;
  for (let i = key.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(key[i]);
  return Number(v % BigInt(n));
}

t.test("the reference's examples", async (t) => {
  t.equal(vdiskOf(parseRestKey('1000', 8), 3), 1, 'u64 key 1000, 3 vdisks');
  t.equal(vdiskOf(Buffer.from([1, 2, 3, 4, 5, 6, 7, 8]), 7), 6, 'bytes 01..08, 7 vdisks');
  t.equal(vdiskOf(parseRestKey('0xe803', 8), 3), 1, '0xe803 is key 1000');
  t.equal(vdiskOf(parseRestKey('0x03e8', 8), 3), reference(parseRestKey('0x03e8', 8), 3));
});

t.test('small cases', async (t) => {
  t.equal(vdiskOf(Buffer.alloc(16), 5), 0);
  t.equal(vdiskOf(parseRestKey('4', 16), 1), 0, 'one vdisk');
  for (let k = 0; k < 300; k++) {
    for (const n of [1, 2, 3, 4, 7, 256, 1000]) {
      if (vdiskOf(parseRestKey(String(k), 16), n) !== k % n) t.fail(`${k} mod ${n}`);
    }
  }
  t.pass('k mod n for small k');
});

t.test('random keys agree with a BigInt reference', async (t) => {
  // Around 2^21 the computation changes from 32-bit words to bytes.
  const counts = [1, 2, 3, 5, 7, 10, 16, 100, 255, 256, 257, 1000, 4096, 65_537, 1_000_003, 2 ** 21 - 1, 2 ** 21, 2 ** 21 + 1, 2 ** 31 - 1, 2 ** 32 - 1, 2 ** 32];
  let mismatches = 0;
  let checked = 0;
  for (const size of [5, 8, 13, 16, 32]) {
    for (let i = 0; i < 2000; i++) {
      const key = randomBytes(size);
      const n = counts[i % counts.length];
      if (vdiskOf(key, n) !== reference(key, n)) mismatches++;
      checked++;
    }
  }
  const ff = Buffer.alloc(32, 0xff);
  for (const n of counts) if (vdiskOf(ff, n) !== reference(ff, n)) mismatches++;
  t.equal(mismatches, 0, `${checked} random keys`);
});

t.test('invalid vdisk counts', async (t) => {
  for (const n of [0, -1, 1.5, NaN, 2 ** 32 + 1]) t.throws(() => vdiskOf(Buffer.alloc(8), n), RangeError, String(n));
});
