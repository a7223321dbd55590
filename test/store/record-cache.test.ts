// The records a vdisk keeps: within the node's budget whatever is read, the
// oldest entries going first whichever shelf holds them; and a vdisk
// reading through them under concurrent writes, new partitions and
// remounts never answers older than its engines.
import t from 'tap';
import { RecordCache } from '../../src/store/record-cache';
import { StoredRecord } from '../../src/model/version';
import { Vdisk } from '../../src/store/vdisk';
import { tempDir } from '../helpers/tmpdir';

const key = (i: number) => {
  const k = Buffer.alloc(8);
  k.writeUInt32LE(i);
  return k;
};
const record = (size: number, ts = 1): StoredRecord => ({ kind: 'found', version: { timestamp: ts, tick: 0, node: 0 }, value: Buffer.alloc(size, ts) });

t.test('entries within the budget, oldest first', async (t) => {
  const cache = new RecordCache(100_000);
  const shelf = cache.newShelf();
  for (let i = 0; i < 1000; i++) {
    shelf.keep(key(i), record(1000));
    t.ok(cache.stats().usage <= 100_000, `usage after ${i}`);
  }
  const kept = Array.from({ length: 1000 }, (_, i) => shelf.get(key(i)) !== undefined);
  const first = kept.indexOf(true);
  t.ok(first > 0, 'the oldest were evicted');
  t.ok(kept.slice(first).every(Boolean), 'everything newer than the oldest kept is kept');
  t.equal(cache.stats().entries, 1000 - first);
  t.equal(shelf.get(key(999))?.version.timestamp, 1);
});

t.test('absence, tombstones, replacement, forgetting, large values', async (t) => {
  const cache = new RecordCache(1 << 20, 4096);
  const shelf = cache.newShelf();
  shelf.keep(key(1), null);
  shelf.keep(key(2), { kind: 'deleted', version: { timestamp: 3, tick: 1, node: 2 } });
  t.equal(shelf.get(key(1)), null, 'absence is an answer');
  t.equal(shelf.get(key(2))?.kind, 'deleted');
  t.equal(shelf.get(key(3)), undefined, 'nothing kept');
  shelf.keep(key(2), record(10, 4));
  t.equal(shelf.get(key(2))?.version.timestamp, 4, 'replaced');
  t.equal(cache.stats().entries, 2);
  shelf.forget(key(2));
  t.equal(shelf.get(key(2)), undefined, 'forgotten');
  shelf.keep(key(5), record(4097));
  t.equal(shelf.get(key(5)), undefined, 'values over maxValue are not kept');
  const s = cache.stats();
  t.equal(s.hits, 3);
  t.equal(s.misses, 3);
  shelf.drop();
  t.equal(cache.stats().usage, 0, 'a dropped shelf gives everything back');
  t.equal(cache.stats().entries, 0);
  const none = new RecordCache(0).newShelf();
  none.keep(key(1), record(1));
  t.equal(none.get(key(1)), undefined, 'capacity 0 keeps nothing');
});

t.test('a shelf coming late gets room from the oldest entries', async (t) => {
  const cache = new RecordCache(50_000);
  const full = cache.newShelf();
  const other = cache.newShelf();
  for (let i = 0; i < 100; i++) full.keep(key(i), record(1000));
  for (let i = 0; i < 10; i++) other.keep(key(i), record(1000));
  t.equal(other.size, 10, 'the newcomer got room');
  t.ok(full.size < 100, 'the fullest gave way');
  t.ok(cache.stats().usage <= 50_000);
});

t.test('a vdisk never answers older than its engines', async (t) => {
  const cache = new RecordCache(1 << 20);
  const vdisk = new Vdisk({
    dir: tempDir(t),
    id: 0,
    hash: 'h',
    blobPrefix: 'bob',
    periodSeconds: 100,
    roundStarts: true,
    engine: { keySize: 8 },
    openAttempts: 1,
    openRetryDelayMs: 0,
    idleCloseMs: 10_000,
    records: cache,
  });
  await vdisk.run();
  t.teardown(() => vdisk.stop());
  const base = 1_700_000_000;
  const latest = new Map<number, number>(); // key -> newest acknowledged timestamp
  let stale = 0;
  let ts = base;
  const check = async (i: number) => {
    const known = latest.get(i) ?? 0;
    const r = await vdisk.get(key(i));
    if ((r?.version.timestamp ?? 0) < known) stale++;
  };
  for (let round = 0; round < 300; round++) {
    const writes: Array<Promise<void>> = [];
    for (let w = 0; w < 8; w++) {
      const i = (round * 7 + w * 3) % 20;
      const v = ++ts;
      // Reads of the key while its write is in flight, and once it is acknowledged.
      writes.push(
        vdisk.put(key(i), { timestamp: v, tick: 0, node: 0 }, Buffer.alloc(100, v % 256)).then(() => {
          latest.set(i, Math.max(latest.get(i) ?? 0, v));
        }),
      );
      void vdisk.get(key(i));
    }
    await Promise.all(writes);
    for (let i = 0; i < 20; i++) await check(i);
    // A new partition now and then (a new period), and a remount.
    if (round % 50 === 49) ts += 100;
    if (round % 100 === 99) await vdisk.remount();
  }
  t.equal(stale, 0, 'no read older than an acknowledged write');
  t.ok(cache.stats().hits > 0, 'reads were answered from the records kept');
});
