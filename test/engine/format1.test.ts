// A partition written by the previous engine (test/fixtures/format-1): its
// format-1 blobs read as written, the blob that was active is sealed rather
// than appended to, and records stamped by the new engine win ties of the
// same second against them.
import fs from 'node:fs';
import path from 'node:path';
import t, { Test } from 'tap';
import { Engine, EngineSet } from '../../src/store/engine';
import { bobVersion, StoredRecord } from '../../src/model/version';
import { blobFiles, blobFormatOf, copyPartition, FORMAT1_FIXTURE, indexFiles, recordsIn } from '../helpers/blob-files';
import { keyOf, ver } from '../helpers/records';
import { tempDir } from '../helpers/tmpdir';

/** What every key of the fixture reads as: its value or 'deleted' or null, and its timestamp. */
const FIXTURE: Array<[number, string | 'deleted' | null, number]> = [
  [1, 'one, same second, later blob', 1700000001],
  [2, 'two, overwritten', 1700000012],
  [3, 'deleted', 1700000013],
  [4, 'four, overwritten in blob 2', 1700000014],
  [5, 'deleted', 1700000015],
  [6, 'six', 1700000006],
  [7, '', 1700000007],
  [8, null, 0],
];

const text = (r: StoredRecord | null | undefined) => (r == null ? r : r.kind === 'found' ? r.value.toString() : 'deleted');

function fixtureCopy(t: Test): string {
  const dir = path.join(tempDir(t), 'partition');
  copyPartition(FORMAT1_FIXTURE, dir);
  return dir;
}

async function expectFixture(t: Test, e: Engine, label: string): Promise<void> {
  for (const [n, want, timestamp] of FIXTURE) {
    const r = await e.get(keyOf(n));
    t.equal(text(r), want, `${label}: key ${n}`);
    if (r) t.same(r.version, bobVersion(timestamp), `${label}: key ${n} has its timestamp and no stamp`);
  }
}

t.test('the fixture holds what its README says', async (t) => {
  t.same(fs.readdirSync(FORMAT1_FIXTURE).sort(), ['oyster.1.blob', 'oyster.1.index', 'oyster.2.blob']);
  for (const blob of blobFiles(FORMAT1_FIXTURE)) t.equal(blobFormatOf(blob), 1, `${path.basename(blob)} is of format 1`);
  const records = blobFiles(FORMAT1_FIXTURE).map((b) => recordsIn(b, 16));
  t.same(records.map((r) => r.length), [7, 6]);
  t.same(records.flat().filter((r) => r.tombstone).map((r) => r.key.readUInt32LE(0)), [3, 5]);
  t.ok(records.flat().every((r) => r.version.tick === 0 && r.version.node === 0), 'no record has a stamp');
});

t.test('every key reads as written; new records go to a blob of format 2', async (t) => {
  const dir = fixtureCopy(t);
  let e = await Engine.open(dir);
  t.match(e.recovery, { blobs: 2, indexesLoaded: 0, blobsScanned: 2, indexesRebuilt: 2, bytesTruncated: 0, corruptRecords: 0 });
  t.ok(e.recovery.events.some((ev) => ev.includes('index format version 1 is no longer read')), 'the version-1 index is rebuilt');
  t.ok(e.recovery.events.some((ev) => ev.includes('oyster.2.blob is a format-1 blob: sealed and indexed')), 'the active blob is sealed');
  t.equal(indexFiles(dir).length, 2);
  t.match(await e.stats(), { activeBlobId: null, maxTimestamp: 1700000015, maxTick: 0 });
  await expectFixture(t, e, 'upgraded');
  await e.put(keyOf(9), ver(1700000020, 1700000020000000, 1), Buffer.from('nine'));
  t.equal((await e.stats()).activeBlobId, 3);
  t.same(blobFiles(dir).map(blobFormatOf), [1, 1, 2], 'format-1 blobs stay as they are');
  await e.close();
  e = await Engine.open(dir);
  t.match(e.recovery, { indexesLoaded: 3, blobsScanned: 0 });
  await expectFixture(t, e, 'reopened');
  t.equal(text(await e.get(keyOf(9))), 'nine');
  await e.close();
});

t.test('a stamped record wins a tie of seconds against a format-1 record', async (t) => {
  const e = await Engine.open(fixtureCopy(t));
  await e.put(keyOf(5), ver(1700000015, 1, 1), Buffer.from('five, stamped'));
  t.equal(text(await e.get(keyOf(5))), 'five, stamped', 'over the format-1 tombstone of the same second');
  await e.put(keyOf(3), bobVersion(1700000013), Buffer.from('three, unstamped'));
  t.equal(text(await e.get(keyOf(3))), 'deleted', 'unstamped, the same version: the tombstone stays');
  await e.put(keyOf(2), ver(1700000011, 2 ** 52 - 1, 4095), Buffer.from('two, an older second'));
  t.equal(text(await e.get(keyOf(2))), 'two, overwritten', 'an older second loses whatever its stamp');

  const fresh = await Engine.open(tempDir(t));
  await fresh.put(keyOf(6), ver(1700000006, 1, 1), Buffer.from('six, stamped'));
  await fresh.put(keyOf(7), bobVersion(1700000007), Buffer.from('seven, unstamped'));
  const set = new EngineSet([e, fresh]);
  for (const [how, read] of [
    ['getNewest', (k: Buffer) => set.getNewest(k)],
    ['readNewestNow', async (k: Buffer) => set.readNewestNow(k)],
  ] as const) {
    t.equal(text(await read(keyOf(6))), 'six, stamped', `${how}: the stamp beats the earlier engine`);
    t.equal(text(await read(keyOf(7))), '', `${how}: a full tie goes to the earlier engine`);
  }
  await Promise.all([e.close(), fresh.close()]);
});
