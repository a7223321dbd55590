// Replica digests through the addon: EngineSet.digest and entries answer by
// the newest record of each key only, match the definition of docs/FORMAT.md
// ("Replica digests") computed here independently, and refuse bad arguments.
import t from 'tap';
import { Engine, EngineErrorCode, EngineSet, isEngineError } from '../../src/store/engine';
import { MAX_DIGEST_BITS, SnapshotEntry } from '../../src/store/engine-snapshot';
import { native } from '../../src/store/native';
import { Version } from '../../src/model/version';
import { keyOf, ver } from '../helpers/records';
import { tempDir } from '../helpers/tmpdir';

// KeyHash64 of docs/FORMAT.md §5.1, in BigInt arithmetic mod 2^64.
const M64 = (1n << 64n) - 1n;
function fmix64(k: bigint): bigint {
  k ^= k >> 33n;
  k = (k * 0xff51afd7ed558ccdn) & M64;
  k ^= k >> 33n;
  k = (k * 0xc4ceb9fe1a85ec53n) & M64;
  return k ^ (k >> 33n);
}
function keyHash64(b: Buffer): bigint {
  let h = 0x9e3779b97f4a7c15n;
  let i = 0;
  for (; i + 8 <= b.length; i += 8) h = fmix64(h ^ b.readBigUInt64LE(i));
  if (i < b.length) {
    const last = Buffer.alloc(8);
    b.copy(last, 0, i);
    h = fmix64(h ^ last.readBigUInt64LE(0));
  }
  return fmix64(h ^ BigInt(b.length));
}

const bucketOf = (key: Buffer, bits: number) => (bits === 0 ? 0 : Number(keyHash64(key) >> BigInt(64 - bits)));

/** The digests the definition gives for these newest records. */
function expectedDigests(entries: SnapshotEntry[], bits: number): Buffer {
  const sums = new Array<bigint>(2 ** bits).fill(0n);
  for (const e of entries) {
    const packed = Buffer.alloc(17 + e.key.length);
    packed[0] = e.kind === 'deleted' ? 2 : 1;
    packed.writeBigUInt64LE(BigInt(e.version.timestamp), 1);
    packed.writeBigUInt64LE((BigInt(e.version.tick) << 12n) | BigInt(e.version.node), 9);
    e.key.copy(packed, 17);
    const b = bucketOf(e.key, bits);
    sums[b] = (sums[b] + keyHash64(packed)) & M64;
  }
  const out = Buffer.alloc(8 * sums.length);
  sums.forEach((s, i) => out.writeBigUInt64LE(s, 8 * i));
  return out;
}

function differing(a: Buffer, b: Buffer): number[] {
  const out: number[] = [];
  for (let i = 0; i < a.length / 8; i++) if (a.readBigUInt64LE(8 * i) !== b.readBigUInt64LE(8 * i)) out.push(i);
  return out;
}

/** "n kind ts.tick@node" per entry, for comparing lists. */
const readable = (entries: SnapshotEntry[]) =>
  entries.map((e) => `${e.key.readUIntLE(0, 6)} ${e.kind} ${e.version.timestamp}.${e.version.tick}@${e.version.node}`);

/** The newest record of key n in the fixtures: every fifth a tombstone. */
function newestOf(n: number): { kind: 'found' | 'deleted'; version: Version } {
  return { kind: n % 5 === 0 ? 'deleted' : 'found', version: ver(1000 + n, 1_700_000_000_000_000 + (n % 7), 1 + (n % 3)) };
}

async function write(e: Engine, n: number, r: { kind: 'found' | 'deleted'; version: Version }): Promise<void> {
  if (r.kind === 'deleted') await e.delete(keyOf(n), r.version);
  else await e.put(keyOf(n), r.version, Buffer.from(`value ${n}`));
}

t.test('equal newest records give equal digests however they are spread', async (t) => {
  const n = 400;
  const compact = await Engine.open(tempDir(t));
  const [p, q] = await Promise.all([Engine.open(tempDir(t)), Engine.open(tempDir(t))]);
  for (let i = 0; i < n; i++) await write(compact, i, newestOf(i));
  // Spread: older versions first, then the newest records half in closed
  // blobs and half in active ones, a value beaten by a tombstone of its version.
  for (let i = 0; i < n; i += 3) await (i % 2 ? p : q).put(keyOf(i), ver(i), Buffer.from('old'));
  await p.closeActiveBlob();
  for (let i = 0; i < n; i++) {
    await write(i % 2 ? p : q, i, newestOf(i));
    if (i === n / 2) await Promise.all([p.closeActiveBlob(), q.closeActiveBlob()]);
    if (newestOf(i).kind === 'deleted') await (i % 2 ? q : p).put(keyOf(i), newestOf(i).version, Buffer.from('deleted'));
  }
  const one = new EngineSet([compact]);
  const two = new EngineSet([p, q]);
  const snapshot = await compact.snapshot();
  t.equal(snapshot.length, n);
  for (const bits of [0, 4, 12, MAX_DIGEST_BITS]) {
    const [a, b] = await Promise.all([one.digest(bits), two.digest(bits)]);
    t.equal(a.digests.length, 8 * 2 ** bits, `bits ${bits}: 2^bits u64 digests`);
    t.ok(a.digests.equals(expectedDigests(snapshot, bits)), `bits ${bits}: the digests of the definition`);
    t.same(differing(a.digests, b.digests), [], `bits ${bits}: no bucket differs`);
    t.same([a.keys, b.keys], [n, n], 'distinct keys are counted once');
  }
  const all = Array.from({ length: 16 }, (_, i) => i);
  const sorted = [...snapshot].sort((x, y) => Buffer.compare(x.key, y.key));
  t.same(readable(await one.entries(4, all)), readable(sorted), 'entries of every bucket: the snapshot, sorted by key');
  t.same(readable(await two.entries(4, all)), readable(sorted), '... from the spread set too');
  const some = await two.entries(4, [9, 2, 9]);
  t.ok(some.length > 0 && some.every((e) => [2, 9].includes(bucketOf(e.key, 4))), 'only keys of the buckets asked for');
  t.same(readable(some), readable(sorted.filter((e) => [2, 9].includes(bucketOf(e.key, 4)))), 'all of them');
  await Promise.all([compact.close(), p.close(), q.close()]);
});

t.test('one newer record or one extra tombstone changes exactly its bucket', async (t) => {
  const bits = 12;
  const [a, b] = await Promise.all([Engine.open(tempDir(t)), Engine.open(tempDir(t))]);
  for (let i = 0; i < 300; i++) await Promise.all([write(a, i, newestOf(i)), write(b, i, newestOf(i))]);
  const sa = new EngineSet([a]);
  const sb = new EngineSet([b]);
  t.same(differing((await sa.digest(bits)).digests, (await sb.digest(bits)).digests), []);

  await b.put(keyOf(42), ver(5000, 1, 1), Buffer.from('newer'));
  const bucket = bucketOf(keyOf(42), bits);
  t.same(differing((await sa.digest(bits)).digests, (await sb.digest(bits)).digests), [bucket]);
  const [ours, theirs] = await Promise.all([sa.entries(bits, [bucket]), sb.entries(bits, [bucket])]);
  const pick = (es: SnapshotEntry[]) => es.find((e) => e.key.equals(keyOf(42)));
  t.same(pick(ours), { key: keyOf(42), ...newestOf(42) }, 'ours: the older record');
  t.same(pick(theirs), { key: keyOf(42), kind: 'found', version: ver(5000, 1, 1) }, 'theirs: the newer one');

  await a.delete(keyOf(999), ver(6000, 2, 3));
  const [da, db] = await Promise.all([sa.digest(bits), sb.digest(bits)]);
  t.same(differing(da.digests, db.digests), [bucket, bucketOf(keyOf(999), bits)].sort((x, y) => x - y));
  t.same([da.keys, db.keys], [301, 300]);
  const extra = (await sa.entries(bits, [bucketOf(keyOf(999), bits)])).find((e) => e.key.equals(keyOf(999)));
  t.same(extra, { key: keyOf(999), kind: 'deleted', version: ver(6000, 2, 3) }, 'the tombstone is listed');

  await a.put(keyOf(7), ver(3), Buffer.from('older'));
  t.same(differing((await sa.digest(bits)).digests, da.digests), [], 'an older version changes nothing');
  await Promise.all([a.close(), b.close()]);
});

t.test('an empty set answers zeros; arguments are checked', async (t) => {
  const none = new EngineSet([]);
  const d = await none.digest(3);
  t.ok(d.digests.equals(Buffer.alloc(64)));
  t.equal(d.keys, 0);
  t.same(await none.entries(3, [1, 7]), []);
  const e = await Engine.open(tempDir(t));
  const set = new EngineSet([e]);
  t.same(await set.entries(3, []), [], 'no bucket, no entry');
  t.equal((await set.digest(0)).digests.length, 8, 'bits 0: one digest');
  for (const s of [none, set]) {
    await t.rejects(s.digest(17), RangeError);
    await t.rejects(s.digest(-1), RangeError);
    await t.rejects(s.digest(1.5), RangeError);
    await t.rejects(s.digest('4' as unknown as number), TypeError);
    await t.rejects(s.entries(4, [16]), RangeError);
    await t.rejects(s.entries(0, [1]), RangeError);
    await t.rejects(s.entries(4, [-1]), RangeError);
    await t.rejects(s.entries(4, [2 ** 32]), RangeError, 'not wrapped to bucket 0');
    await t.rejects(s.entries(4, ['1' as unknown as number]), TypeError);
  }
  // The binding checks on its own.
  const handle = new native.EngineSet([e.handle], Buffer.alloc(16), new Float64Array(3));
  t.throws(() => handle.entries(4, [1] as unknown as Uint32Array), TypeError);
  t.throws(() => handle.entries(4, Uint32Array.of(3, 16)), RangeError);
  t.throws(() => handle.digest(17), RangeError);
  t.throws(() => handle.digest(null as unknown as number), TypeError);
  await e.close();
  const closed = await set.digest(4).catch((err: unknown) => err);
  t.ok(isEngineError(closed, EngineErrorCode.closed), 'a closed engine: OYSTER_CLOSED');
  t.ok(isEngineError(await set.entries(4, [1]).catch((err: unknown) => err), EngineErrorCode.closed));
});
