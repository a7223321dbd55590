// Values of every size survive a put/get and a reopen; records resolve by
// version (timestamp, then tick, then node; a tombstone wins a tie of
// versions, a full tie goes to the later write) within and across blobs.
import t from 'tap';
import { Engine, EngineErrorCode, EngineSet, isEngineError } from '../../src/store/engine';
import { MAX_NODE_ID, MAX_TICK, StoredRecord } from '../../src/model/version';
import { isOpened } from '../../src/model/value';
import { keyOf, valueOf, ver } from '../helpers/records';
import { tempDir } from '../helpers/tmpdir';

const MiB = 1 << 20;

/** [timestamp, tick, node, value] of a found record, else the record itself. */
const found = (r: StoredRecord | null | undefined) =>
  r?.kind === 'found' ? [r.version.timestamp, r.version.tick, r.version.node, r.value.toString()] : r;
/** The value of a found record as text, else its kind. */
const text = (r: StoredRecord | null | undefined) => (r?.kind === 'found' ? r.value.toString() : r?.kind);

t.test('values of 0 B, 1 B, 1 KiB, 1 MiB and 64 MiB round-trip with their versions, also after reopen', async (t) => {
  const dir = tempDir(t);
  const sizes = [0, 1, 1024, MiB, 64 * MiB];
  const versionOf = (i: number) => ver(1000 + i, 1_700_000_000_000_000 + i, i);
  let e = await Engine.open(dir);
  for (const [i, size] of sizes.entries()) await e.put(keyOf(i), versionOf(i), valueOf(i, 1, size));
  const check = async (label: string) => {
    for (const [i, size] of sizes.entries()) {
      const r = await e.get(keyOf(i));
      t.equal(r?.kind, 'found', `${label}: ${size} B found`);
      if (r?.kind === 'found') {
        t.same(r.version, versionOf(i));
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

t.test('results have exactly the shapes of src/model/version.ts', async (t) => {
  const e = await Engine.open(tempDir(t));
  await e.put(keyOf(1), ver(5, 6, 7), Buffer.from('v'));
  await e.delete(keyOf(2), ver(8, 9, 10));
  const got = await e.get(keyOf(1));
  t.same(Object.keys(got!), ['kind', 'version', 'value']);
  t.same(Object.keys(got!.version), ['timestamp', 'tick', 'node']);
  t.same(await e.get(keyOf(2)), { kind: 'deleted', version: { timestamp: 8, tick: 9, node: 10 } });
  t.same(Object.keys((await e.get(keyOf(2)))!), ['kind', 'version']);
  t.same(await e.exists([keyOf(1), keyOf(2), keyOf(3)]), [
    { kind: 'found', version: { timestamp: 5, tick: 6, node: 7 } },
    { kind: 'deleted', version: { timestamp: 8, tick: 9, node: 10 } },
    null,
  ]);
  await e.close();
});

t.test('overwrite returns the newest version; an older one does not win', async (t) => {
  const e = await Engine.open(tempDir(t));
  await e.put(keyOf(1), ver(100), Buffer.from('first'));
  await e.put(keyOf(1), ver(200), Buffer.from('second'));
  await e.put(keyOf(1), ver(150, MAX_TICK, MAX_NODE_ID), Buffer.from('late but older'));
  t.same(found(await e.get(keyOf(1))), [200, 0, 0, 'second']);
  // Within one second the tick decides, then the node, whatever the order of writing.
  await e.put(keyOf(1), ver(200, 50, 1), Buffer.from('tick 50'));
  await e.put(keyOf(1), ver(200, 40, 9), Buffer.from('tick 40'));
  t.same(found(await e.get(keyOf(1))), [200, 50, 1, 'tick 50']);
  await e.put(keyOf(1), ver(200, 50, 2), Buffer.from('node 2'));
  t.same(found(await e.get(keyOf(1))), [200, 50, 2, 'node 2']);
  t.equal(await e.recordsCount(), 6, 'every version is a record');
  await e.close();
});

t.test('delete and put at one version: the tombstone wins; a later stamp brings the key back', async (t) => {
  const e = await Engine.open(tempDir(t));
  const k = keyOf(7);
  await e.put(k, ver(500), Buffer.from('v1'));
  await e.delete(k, ver(500));
  t.same(await e.get(k), { kind: 'deleted', version: ver(500) });
  await e.put(k, ver(500), Buffer.from('a copy of what was deleted'));
  t.same(await e.get(k), { kind: 'deleted', version: ver(500) }, 'the same version does not undo the delete');
  t.same(await e.exists([k]), [{ kind: 'deleted', version: ver(500) }]);
  await e.put(k, ver(500, 1, 1), Buffer.from('v2'));
  t.same(found(await e.get(k)), [500, 1, 1, 'v2'], 'a stamped write of the same second is newer');
  await e.delete(k, ver(499, MAX_TICK, MAX_NODE_ID));
  t.equal((await e.get(k))?.kind, 'found', 'an older tombstone does not hide a newer value');
  await e.put(k, ver(400), Buffer.from('ancient'));
  await e.delete(k, ver(600));
  await e.put(k, ver(550), Buffer.from('older than the tombstone'));
  t.same(await e.get(k), { kind: 'deleted', version: ver(600) }, 'a put older than the tombstone stays hidden');
  await e.put(keyOf(8), ver(10), Buffer.from('a'));
  await e.put(keyOf(8), ver(10), Buffer.from('b'));
  t.same(found(await e.get(keyOf(8))), [10, 0, 0, 'b'], 'the same write twice: the later record');
  t.equal(await e.get(keyOf(9)), null, 'a key never written is absent');
  await e.close();
});

t.test('newest wins across blobs and after reopen, full ties to the later blob', async (t) => {
  const dir = tempDir(t);
  let e = await Engine.open(dir, { maxDataInBlob: 2 });
  const k = keyOf(42);
  await e.put(k, ver(300), Buffer.from('newest'));            // blob 1
  await e.put(keyOf(1), ver(1), Buffer.from('filler'));       // blob 1 full
  await e.put(k, ver(100), Buffer.from('older, later'));      // blob 2
  await e.put(k, ver(300), Buffer.from('same version, later')); // blob 2 full
  await e.put(keyOf(2), ver(5), Buffer.from('x'));            // blob 3
  await e.delete(keyOf(2), ver(4));                           // older tombstone, blob 3
  await e.delete(keyOf(3), ver(9, 9, 9));                     // blob 4
  await e.put(keyOf(4), ver(9, 1, 1), Buffer.from('stamped, older blob'));
  await e.put(keyOf(3), ver(9, 9, 9), Buffer.from('copy in a later blob')); // blob 5
  await e.put(keyOf(4), ver(9), Buffer.from('unstamped, later blob'));
  t.ok((await e.stats()).blobs >= 5, 'records spread over several blobs');
  const expect = async (label: string) => {
    t.equal(text(await e.get(k)), 'same version, later', `${label}: a full tie goes to the later blob`);
    t.equal((await e.get(keyOf(2)))?.kind, 'found', `${label}: older tombstone in a later blob loses`);
    t.same(await e.get(keyOf(3)), { kind: 'deleted', version: ver(9, 9, 9) }, `${label}: a tombstone in an older blob wins a tie of versions`);
    t.equal(text(await e.get(keyOf(4))), 'stamped, older blob', `${label}: a stamp beats a later blob`);
  };
  await expect('open');
  await e.close();
  e = await Engine.open(dir, { maxDataInBlob: 2 });
  await expect('reopened');
  await e.close();
});

t.test('bad arguments reject without touching data', async (t) => {
  const e = await Engine.open(tempDir(t), { keySize: 8 });
  const k = Buffer.alloc(8);
  await t.rejects(e.put(Buffer.alloc(16), ver(1), Buffer.alloc(1)), /exactly 8 bytes/);
  await t.rejects(e.put(k, ver(-1), Buffer.alloc(1)), { name: 'RangeError', message: /timestamp must be an integer in 0\.\.2\^53-1/ });
  await t.rejects(e.put(k, ver(1.5), Buffer.alloc(1)), /timestamp/);
  await t.rejects(e.put(k, ver(2 ** 53), Buffer.alloc(1)), /timestamp/);
  await t.rejects(e.put(k, ver(1, -1), Buffer.alloc(1)), { name: 'RangeError', message: /tick must be an integer in 0\.\.2\^52-1/ });
  await t.rejects(e.put(k, ver(1, MAX_TICK + 1), Buffer.alloc(1)), /tick/);
  await t.rejects(e.put(k, ver(1, 0.5), Buffer.alloc(1)), /tick/);
  await t.rejects(e.put(k, ver(1, 0, 4096), Buffer.alloc(1)), { name: 'RangeError', message: /node must be an integer in 0\.\.4095/ });
  await t.rejects(e.put(k, ver(1, 0, NaN), Buffer.alloc(1)), /node/);
  await t.rejects(e.delete(k, ver(1, 0, -1)), /node/);
  await t.rejects(e.put(k, { timestamp: 1, tick: '2', node: 0 } as never, Buffer.alloc(1)), { name: 'TypeError', message: /tick must be a number/ });
  await t.rejects(e.delete(k, { timestamp: 1 } as never), { name: 'TypeError', message: /tick must be a number/ });
  await t.rejects(e.put(k, ver(1), 'text' as unknown as Buffer), /value must be a Buffer/);
  await t.rejects(e.get('key' as unknown as Buffer), /key must be a Buffer/);
  await t.rejects(e.exists([Buffer.alloc(8), Buffer.alloc(3)]), /keys\[1\]/);
  t.equal(await e.recordsCount(), 0);
  await e.put(k, ver(2 ** 53 - 1, MAX_TICK, MAX_NODE_ID), Buffer.from('the largest version'));
  t.same(found(await e.get(k)), [2 ** 53 - 1, MAX_TICK, MAX_NODE_ID, 'the largest version']);
  await t.rejects(Engine.open(tempDir(t), { keySize: 0 }), /key_size/);
  await t.rejects(Engine.open(tempDir(t), { blobFilePrefix: 'a.b' }), /prefix/);
  await e.close();
  const err = await e.get(Buffer.alloc(8)).catch((x: unknown) => x);
  t.ok(isEngineError(err, EngineErrorCode.closed), 'a closed engine answers OYSTER_CLOSED');
  await t.rejects(e.put(Buffer.alloc(8), ver(1), Buffer.alloc(1)), { code: EngineErrorCode.closed });
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
  await a.put(k1, ver(100), Buffer.from('a100'));
  await b.put(k1, ver(200, 3, 4), Buffer.from('b200'));
  await c.delete(k1, ver(150));
  await b.put(k2, ver(50), Buffer.from('b50'));
  await c.delete(k2, ver(60, 7, 8));
  await a.put(keyOf(4), ver(7), Buffer.from('first'));
  await b.put(keyOf(4), ver(7), Buffer.from('second'));
  await a.put(keyOf(7), ver(9, 1, 1), Buffer.from('stamped'));
  await c.put(keyOf(7), ver(9), Buffer.from('unstamped'));
  await a.put(keyOf(8), ver(11, 2, 2), Buffer.from('value'));
  await c.delete(keyOf(8), ver(11, 2, 2));
  await b.put(keyOf(5), ver(300), Buffer.alloc(64 * 1024, 5));
  await c.put(keyOf(6), ver(300), Buffer.alloc(64 * 1024 + 1, 6));
  const abc = new EngineSet([a, b, c]);
  for (const [how, read] of [
    ['getNewest', (set: EngineSet, k: Buffer) => set.getNewest(k)],
    ['readNewestNow', async (set: EngineSet, k: Buffer) => set.readNewestNow(k)],
  ] as const) {
    t.same(found(await read(abc, k1)), [200, 3, 4, 'b200'], `${how}: the newest value wins`);
    t.same(await read(abc, k2), { kind: 'deleted', version: ver(60, 7, 8) }, `${how}: a newer tombstone wins`);
    t.equal(await read(abc, keyOf(3)), null, `${how}: no record anywhere`);
    t.same(found(await read(new EngineSet([a, b]), keyOf(4))), [7, 0, 0, 'first'], `${how}: full ties go to the earlier engine`);
    t.same(found(await read(new EngineSet([b, a]), keyOf(4))), [7, 0, 0, 'second'], `${how}: ... whichever it is`);
    t.same(found(await read(new EngineSet([c, a]), keyOf(7))), [9, 1, 1, 'stamped'], `${how}: a stamp beats the earlier engine`);
    t.same(await read(abc, keyOf(8)), { kind: 'deleted', version: ver(11, 2, 2) }, `${how}: a tombstone wins a tie of versions`);
    const big = await read(abc, keyOf(5));
    t.ok(big?.kind === 'found' && big.value.equals(Buffer.alloc(64 * 1024, 5)), `${how}: a 64 KiB value`);
  }
  // The page cache holds what was just written, so nothing here needs the engine threads.
  t.equal(abc.readNewestNow(keyOf(6)), undefined, 'readNewestNow leaves values over 64 KiB to the engine threads');
  const large = await abc.getNewest(keyOf(6));
  t.ok(large?.kind === 'found' && large.value.equals(Buffer.alloc(64 * 1024 + 1, 6)), 'getNewest reads them');
  // Opening one needs only its header and block checksums: at once too.
  const v = abc.readNewestNow(keyOf(6), true) ?? null;
  t.ok(isOpened(v), 'readNewestNow with open: a value over 64 KiB opened at once');
  if (isOpened(v)) {
    t.same([v.version, v.size, v.head.equals(Buffer.alloc(512, 6))], [ver(300), 64 * 1024 + 1, true], 'its version, size and first bytes');
    const all = Buffer.alloc(v.size);
    await v.reader.read(0, all);
    t.ok(all.equals(Buffer.alloc(64 * 1024 + 1, 6)), 'its reader reads the value');
    v.reader.close();
  }
  const small = abc.readNewestNow(k1, true) ?? null;
  t.same(isOpened(small) ? 'opened' : found(small), [200, 3, 4, 'b200'], 'a small value is still read whole with open');
  const first = abc.readNewestNow(k1);
  abc.readNewestNow(keyOf(5));
  t.same(found(first), [200, 3, 4, 'b200'], 'a value read at once is not overwritten by the next read');
  t.same(await abc.lookupNewest([k1, k2, keyOf(3), keyOf(8)]), [
    { kind: 'found', version: ver(200, 3, 4) },
    { kind: 'deleted', version: ver(60, 7, 8) },
    null,
    { kind: 'deleted', version: ver(11, 2, 2) },
  ]);
  for (const [k, want] of [
    [k1, { kind: 'found', version: ver(200, 3, 4) }],
    [k2, { kind: 'deleted', version: ver(60, 7, 8) }],
    [keyOf(3), null],
    [keyOf(6), { kind: 'found', version: ver(300) }],
    [keyOf(8), { kind: 'deleted', version: ver(11, 2, 2) }],
  ] as const) {
    t.same(abc.lookupNewestNow(k), want, `lookupNewestNow of key ${k.readUInt8(0)} agrees with lookupNewest (large values included)`);
  }
  const none = new EngineSet([]);
  t.equal(none.lookupNewestNow(k1), null);
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
  t.throws(() => abc.lookupNewestNow(k1), { code: EngineErrorCode.closed }, 'lookupNewestNow too');
});

t.test('snapshot lists the newest record of every key across blobs', async (t) => {
  const e = await Engine.open(tempDir(t), { maxDataInBlob: 2 });
  await e.put(keyOf(1), ver(10), Buffer.from('a'));
  await e.put(keyOf(2), ver(10), Buffer.from('b'));
  await e.put(keyOf(1), ver(20, 1_700_000_000_000_001, 3), Buffer.from('a2')); // a later blob
  await e.delete(keyOf(2), ver(15));
  await e.put(keyOf(3), ver(5), Buffer.from('c'));
  await e.put(keyOf(3), ver(5), Buffer.from('c, same version, later'));
  await e.delete(keyOf(4), ver(2 ** 53 - 1, MAX_TICK, MAX_NODE_ID));
  await e.delete(keyOf(5), ver(7, 7, 7));
  await e.put(keyOf(5), ver(7, 7, 7), Buffer.from('a copy of what was deleted'));
  const snap = (await e.snapshot()).map((s) => [s.key.readUInt32LE(0), s.kind, s.version]).sort((a, b) => Number(a[0]) - Number(b[0]));
  t.same(snap, [
    [1, 'found', ver(20, 1_700_000_000_000_001, 3)],
    [2, 'deleted', ver(15)],
    [3, 'found', ver(5)],
    [4, 'deleted', ver(2 ** 53 - 1, MAX_TICK, MAX_NODE_ID)],
    [5, 'deleted', ver(7, 7, 7)],
  ]);
  await e.close();
  t.same(await Engine.open(tempDir(t)).then(async (x) => [await x.snapshot(), await x.close()][0]), [], 'an empty engine has nothing');
});

t.test('stats report the largest version and tick stored, also after a reopen', async (t) => {
  const dir = tempDir(t);
  let e = await Engine.open(dir, { maxDataInBlob: 2 });
  t.match(await e.stats(), { maxTimestamp: 0, maxTick: 0 }, 'nothing stored');
  await e.put(keyOf(1), ver(100, 9_000, 1), Buffer.from('a'));
  await e.put(keyOf(1), ver(200, 10, 2), Buffer.from('b')); // supersedes the largest tick
  await e.delete(keyOf(2), ver(150, MAX_TICK, 3));
  await e.put(keyOf(3), ver(90), Buffer.from('c'));
  t.match(await e.stats(), { maxTimestamp: 200, maxTick: MAX_TICK });
  await e.close();
  e = await Engine.open(dir);
  t.match(await e.stats(), { maxTimestamp: 200, maxTick: MAX_TICK }, 'from the index files');
  await e.close();
});
