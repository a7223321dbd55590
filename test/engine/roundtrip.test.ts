// Values of every size survive a put/get and a reopen; versions resolve by
// timestamp (ties to the later write) within and across blobs.
import t from 'tap';
import { Engine, EngineErrorCode, EngineSet, GetResult, isEngineError } from '../../src/engine/engine';
import { keyOf, valueOf } from '../helpers/records';
import { tempDir } from '../helpers/tmpdir';

const MiB = 1 << 20;

t.test('values of 0 B, 1 B, 1 KiB, 1 MiB and 64 MiB round-trip, also after reopen', async (t) => {
  const dir = tempDir(t);
  const sizes = [0, 1, 1024, MiB, 64 * MiB];
  let e = await Engine.open(dir);
  for (const [i, size] of sizes.entries()) await e.put(keyOf(i), 1000 + i, valueOf(i, 1, size));
  const check = async (label: string) => {
    for (const [i, size] of sizes.entries()) {
      const r = await e.get(keyOf(i));
      t.equal(r?.kind, 'found', `${label}: ${size} B found`);
      if (r?.kind === 'found') {
        t.equal(r.timestamp, 1000 + i);
        t.ok(r.value.equals(valueOf(i, 1, size)), `${label}: ${size} B value is byte-exact`);
      }
    }
  };
  await check('open');
  await e.close();
  e = await Engine.open(dir);
  t.equal(e.recovery.blobsScanned, 0, 'clean reopen reads no blob');
  await check('reopened');
  await e.close();
});

t.test('overwrite returns the newest value; an older timestamp does not win', async (t) => {
  const e = await Engine.open(tempDir(t));
  await e.put(keyOf(1), 100, Buffer.from('first'));
  await e.put(keyOf(1), 200, Buffer.from('second'));
  await e.put(keyOf(1), 150, Buffer.from('late but older'));
  const r = await e.get(keyOf(1));
  t.same(r && r.kind === 'found' && [r.timestamp, r.value.toString()], [200, 'second']);
  t.equal(await e.recordsCount(), 3, 'every version is a record');
  await e.close();
});

t.test('delete then put within the same second: the later write wins', async (t) => {
  const e = await Engine.open(tempDir(t));
  const k = keyOf(7);
  await e.put(k, 500, Buffer.from('v1'));
  await e.delete(k, 500);
  t.same(await e.get(k), { kind: 'deleted', timestamp: 500 });
  t.same(await e.exists([k]), [{ kind: 'deleted', timestamp: 500 }]);
  await e.put(k, 500, Buffer.from('v2'));
  const r = await e.get(k);
  t.same(r && r.kind === 'found' && r.value.toString(), 'v2');
  await e.delete(k, 499);
  t.equal((await e.get(k))?.kind, 'found', 'an older tombstone does not hide a newer value');
  await e.put(k, 400, Buffer.from('ancient'));
  await e.delete(k, 600);
  await e.put(k, 550, Buffer.from('older than the tombstone'));
  t.same(await e.get(k), { kind: 'deleted', timestamp: 600 }, 'a put older than the tombstone stays hidden');
  t.equal(await e.get(keyOf(8)), null, 'a key never written is absent');
  await e.close();
});

t.test('newest wins across blobs and after reopen, ties to the later blob', async (t) => {
  const dir = tempDir(t);
  let e = await Engine.open(dir, { maxDataInBlob: 2 });
  const k = keyOf(42);
  await e.put(k, 300, Buffer.from('newest'));        // blob 1
  await e.put(keyOf(1), 1, Buffer.from('filler'));   // blob 1 full
  await e.put(k, 100, Buffer.from('older, later'));  // blob 2
  await e.put(k, 300, Buffer.from('same ts, later')); // blob 2 full
  await e.put(keyOf(2), 5, Buffer.from('x'));         // blob 3
  await e.delete(keyOf(2), 4);                        // older tombstone, blob 3
  t.ok((await e.stats()).blobs >= 3, 'records spread over several blobs');
  const expect = async (label: string) => {
    const r = await e.get(k);
    t.equal(r?.kind === 'found' && r.value.toString(), 'same ts, later', `${label}: tie goes to the later write`);
    const r2 = await e.get(keyOf(2));
    t.equal(r2?.kind, 'found', `${label}: older tombstone in a later blob loses`);
  };
  await expect('open');
  await e.close();
  e = await Engine.open(dir, { maxDataInBlob: 2 });
  await expect('reopened');
  await e.close();
});

t.test('bad arguments reject without touching data', async (t) => {
  const e = await Engine.open(tempDir(t), { keySize: 8 });
  await t.rejects(e.put(Buffer.alloc(16), 1, Buffer.alloc(1)), /exactly 8 bytes/);
  await t.rejects(e.put(Buffer.alloc(8), -1, Buffer.alloc(1)), /timestamp/);
  await t.rejects(e.put(Buffer.alloc(8), 1.5, Buffer.alloc(1)), /timestamp/);
  await t.rejects(e.put(Buffer.alloc(8), 2 ** 53, Buffer.alloc(1)), /timestamp/);
  await t.rejects(e.put(Buffer.alloc(8), 1, 'text' as unknown as Buffer), /value must be a Buffer/);
  await t.rejects(e.get('key' as unknown as Buffer), /key must be a Buffer/);
  await t.rejects(e.exists([Buffer.alloc(8), Buffer.alloc(3)]), /keys\[1\]/);
  t.equal(await e.recordsCount(), 0);
  await t.rejects(Engine.open(tempDir(t), { keySize: 0 }), /key_size/);
  await t.rejects(Engine.open(tempDir(t), { blobFilePrefix: 'a.b' }), /prefix/);
  await e.close();
  const err = await e.get(Buffer.alloc(8)).catch((x: unknown) => x);
  t.ok(isEngineError(err, EngineErrorCode.closed), 'a closed engine answers OYSTER_CLOSED');
  await t.rejects(e.put(Buffer.alloc(8), 1, Buffer.alloc(1)), { code: EngineErrorCode.closed });
});

t.test('a partition directory is used by one engine at a time', async (t) => {
  const dir = tempDir(t);
  const e = await Engine.open(dir);
  await t.rejects(Engine.open(dir), { code: EngineErrorCode.busy });
  await e.close();
  const again = await Engine.open(dir);
  await again.close();
});

t.test('an EngineSet resolves versions across engines, on the engine threads and at once', async (t) => {
  const [a, b, c] = await Promise.all([Engine.open(tempDir(t)), Engine.open(tempDir(t)), Engine.open(tempDir(t))]);
  const k1 = keyOf(1);
  const k2 = keyOf(2);
  await a.put(k1, 100, Buffer.from('a100'));
  await b.put(k1, 200, Buffer.from('b200'));
  await c.delete(k1, 150);
  await b.put(k2, 50, Buffer.from('b50'));
  await c.delete(k2, 60);
  await a.put(keyOf(4), 7, Buffer.from('first'));
  await b.put(keyOf(4), 7, Buffer.from('second'));
  await b.put(keyOf(5), 300, Buffer.alloc(64 * 1024, 5));
  await c.put(keyOf(6), 300, Buffer.alloc(64 * 1024 + 1, 6));
  const abc = new EngineSet([a, b, c]);
  const found = (r: GetResult | undefined) => (r?.kind === 'found' ? [r.timestamp, r.value.toString()] : r);
  for (const [how, read] of [
    ['getNewest', (set: EngineSet, k: Buffer) => set.getNewest(k)],
    ['readNewestNow', async (set: EngineSet, k: Buffer) => set.readNewestNow(k)],
  ] as const) {
    t.same(found(await read(abc, k1)), [200, 'b200'], `${how}: the newest value wins`);
    t.same(await read(abc, k2), { kind: 'deleted', timestamp: 60 }, `${how}: a newer tombstone wins`);
    t.equal(await read(abc, keyOf(3)), null, `${how}: no record anywhere`);
    t.same(found(await read(new EngineSet([a, b]), keyOf(4))), [7, 'first'], `${how}: ties go to the earlier engine`);
    const big = await read(abc, keyOf(5));
    t.ok(big?.kind === 'found' && big.value.equals(Buffer.alloc(64 * 1024, 5)), `${how}: a 64 KiB value`);
  }
  // The page cache holds what was just written, so nothing here needs the engine threads.
  t.equal(abc.readNewestNow(keyOf(6)), undefined, 'readNewestNow leaves values over 64 KiB to the engine threads');
  const large = await abc.getNewest(keyOf(6));
  t.ok(large?.kind === 'found' && large.value.equals(Buffer.alloc(64 * 1024 + 1, 6)), 'getNewest reads them');
  const first = abc.readNewestNow(k1);
  abc.readNewestNow(keyOf(5));
  t.same(found(first), [200, 'b200'], 'a value read at once is not overwritten by the next read');
  t.same(await abc.lookupNewest([k1, k2, keyOf(3)]), [
    { kind: 'found', timestamp: 200 },
    { kind: 'deleted', timestamp: 60 },
    null,
  ]);
  const none = new EngineSet([]);
  t.equal(await none.getNewest(k1), null, 'no engines: no record');
  t.equal(none.readNewestNow(k1), null);
  t.same(await none.lookupNewest([k1, k2]), [null, null]);
  t.throws(() => new EngineSet([a, {} as Engine]), /engines\[1\]/);
  t.throws(() => abc.readNewestNow(Buffer.alloc(3)), /key must be a Buffer of 16 bytes/);
  await t.rejects(abc.getNewest(Buffer.alloc(3)), /key must be a Buffer of 16 bytes/);
  const other = await Engine.open(tempDir(t), { keySize: 8 });
  t.throws(() => new EngineSet([a, other]), /one key size/);
  await Promise.all([a, b, c, other].map((e) => e.close()));
  t.throws(() => abc.readNewestNow(k1), { code: EngineErrorCode.closed }, 'a closed engine throws OYSTER_CLOSED at once');
});

t.test('snapshot lists the newest version of every key across blobs', async (t) => {
  const e = await Engine.open(tempDir(t), { maxDataInBlob: 2 });
  await e.put(keyOf(1), 10, Buffer.from('a'));
  await e.put(keyOf(2), 10, Buffer.from('b'));
  await e.put(keyOf(1), 20, Buffer.from('a2')); // a later blob
  await e.delete(keyOf(2), 15);
  await e.put(keyOf(3), 5, Buffer.from('c'));
  await e.put(keyOf(3), 5, Buffer.from('c, same second, later'));
  await e.delete(keyOf(4), 7);
  const snap = (await e.snapshot()).map((s) => [s.key.readUInt32LE(0), s.kind, s.timestamp]).sort((a, b) => Number(a[0]) - Number(b[0]));
  t.same(snap, [
    [1, 'found', 20],
    [2, 'deleted', 15],
    [3, 'found', 5],
    [4, 'deleted', 7],
  ]);
  await e.close();
  t.same(await Engine.open(tempDir(t)).then(async (x) => [await x.snapshot(), await x.close()][0]), [], 'an empty engine has nothing');
});
