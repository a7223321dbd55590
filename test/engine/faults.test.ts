// Damaged files: torn tails, flipped bytes, lost or garbage index files.
import fs from 'node:fs';
import path from 'node:path';
import t, { Test } from 'tap';
import { Engine, EngineError, EngineErrorCode, engineInfo, isEngineError } from '../../src/store/engine';
import { blobFiles, copyPartition, flipByte, indexFiles, recordsIn } from '../helpers/blob-files';
import { keyOf, valueOf, ver } from '../helpers/records';
import { tempDir } from '../helpers/tmpdir';

const N = 20;
const sizeOfRecord = (i: number) => (i === N - 1 ? 1024 : 64 + i);
// Stamped as a coordinator would: tick and node travel with every record.
const versionOf = (i: number) => ver(100 + i, 1_700_000_000_000_000 + i, 7);

async function writeRecords(dir: string, opts = {}): Promise<Engine> {
  const e = await Engine.open(dir, opts);
  for (let i = 0; i < N; i++) await e.put(keyOf(i), versionOf(i), valueOf(i, 1, sizeOfRecord(i)));
  return e;
}

async function expectRecords(t: Test, e: Engine, present: number[], absent: number[], label: string): Promise<void> {
  let bad = 0;
  for (const i of present) {
    const r = await e.get(keyOf(i));
    if (r?.kind !== 'found' || !r.value.equals(valueOf(i, 1, sizeOfRecord(i)))) bad++;
  }
  for (const i of absent) if ((await e.get(keyOf(i))) !== null) bad++;
  t.equal(bad, 0, label);
}

t.test('truncating the active blob at every offset inside its last record keeps all earlier records', async (t) => {
  const live = tempDir(t);
  const e = await writeRecords(live);
  const image = tempDir(t);
  copyPartition(live, image); // the files as a crash would leave them: no index for the active blob
  await e.close();
  const [blob] = blobFiles(image);
  const last = recordsIn(blob, 16).at(-1)!;
  const end = last.offset + last.headerSize + last.valueSize;
  t.equal(fs.statSync(blob).size, end);
  const earlier = Array.from({ length: N - 1 }, (_, i) => i);
  let failures = 0;
  for (let cut = last.offset; cut < end; cut++) {
    const dir = path.join(image, `cut-${cut}`);
    fs.mkdirSync(dir);
    fs.copyFileSync(blob, path.join(dir, path.basename(blob)));
    fs.truncateSync(path.join(dir, path.basename(blob)), cut);
    const r = await Engine.open(dir);
    let ok = r.recovery.bytesTruncated === cut - last.offset && r.recovery.corruptRecords === 0;
    for (const i of earlier) {
      const got = await r.get(keyOf(i));
      ok &&= got?.kind === 'found' && got.value.equals(valueOf(i, 1, sizeOfRecord(i)));
    }
    ok &&= (await r.get(keyOf(N - 1))) === null;
    if (cut === last.offset + 7) {
      // Writing goes on at the cut: a new record lands where the torn one began.
      await r.put(keyOf(N - 1), ver(500), Buffer.from('rewritten'));
      await r.close();
      const again = await Engine.open(dir);
      const got = await again.get(keyOf(N - 1));
      ok &&= got?.kind === 'found' && got.value.toString() === 'rewritten';
      await again.close();
    } else {
      await r.close();
    }
    fs.rmSync(dir, { recursive: true });
    if (!ok) failures++;
  }
  t.equal(failures, 0, `all ${end - last.offset} cut points recover the ${N - 1} earlier records`);
});

t.test('garbage appended to a blob is cut off', async (t) => {
  const dir = tempDir(t);
  const e = await writeRecords(dir);
  await e.close();
  const [blob] = blobFiles(dir);
  const size = fs.statSync(blob).size;
  fs.appendFileSync(blob, Buffer.alloc(4096, 0xab));
  const r = await Engine.open(dir);
  t.equal(r.recovery.indexesRebuilt, 1, 'the index no longer matches the blob and is rebuilt');
  t.equal(r.recovery.bytesTruncated, 4096);
  t.equal(fs.statSync(blob).size, size);
  await expectRecords(t, r, Array.from({ length: N }, (_, i) => i), [], 'every record survives');
  await r.close();
});

t.test('a flipped value byte is reported as corruption for that key only', async (t) => {
  for (const closed of [true, false]) {
    const live = tempDir(t);
    const e = await writeRecords(live);
    let dir = live;
    if (closed) {
      await e.close();
    } else {
      dir = tempDir(t);
      copyPartition(live, dir); // crash image: the blob is rescanned on open
      await e.close();
    }
    const [blob] = blobFiles(dir);
    const victim = recordsIn(blob, 16)[5];
    flipByte(blob, victim.offset + victim.headerSize + 10);
    const r = await Engine.open(dir);
    if (!closed) t.equal(r.recovery.corruptRecords, 1, 'the rescan counts the damaged record');
    const err = await r.get(keyOf(5)).then(
      () => null,
      (x: unknown) => x,
    );
    t.ok(isEngineError(err, EngineErrorCode.corruption), `${closed ? 'indexed' : 'rescanned'} blob: get reports corruption`);
    t.same((err as EngineError | null)?.version, versionOf(5), 'the error carries the version of the damaged record');
    await expectRecords(t, r, [0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 19], [], 'the other records read fine');
    t.equal((await r.stats()).corruptReads, 1, 'the corrupt read is counted');
    t.same(await r.exists([keyOf(5)]), [{ kind: 'found', version: versionOf(5) }], 'exists does not read values');
    await r.put(keyOf(5), ver(106), Buffer.from('repaired'));
    const fixed = await r.get(keyOf(5));
    t.equal(fixed?.kind === 'found' && fixed.value.toString(), 'repaired', 'a newer write replaces the damaged record');
    await r.close();
  }
});

t.test('a damaged record header in the middle of a rescanned blob: later records stay readable', async (t) => {
  const live = tempDir(t);
  const e = await writeRecords(live);
  const dir = tempDir(t);
  copyPartition(live, dir);
  await e.close();
  const [blob] = blobFiles(dir);
  flipByte(blob, recordsIn(blob, 16)[8].offset + 17); // inside the timestamp field
  const r = await Engine.open(dir);
  t.ok(r.recovery.skippedBytes > 0, 'the damaged region is stepped over');
  t.equal(r.recovery.bytesTruncated, 0, 'nothing valid is cut');
  await expectRecords(t, r, [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 19], [8], 'records before and after the damage read fine');
  await r.close();
});

t.test('deleted index files are rebuilt on open', async (t) => {
  const dir = tempDir(t);
  const e = await writeRecords(dir, { maxDataInBlob: 4 });
  await e.close();
  const blobs = blobFiles(dir).length;
  t.equal(blobs, 5);
  for (const f of indexFiles(dir)) fs.rmSync(f);
  const r = await Engine.open(dir, { maxDataInBlob: 4 });
  t.equal(r.recovery.blobsScanned, blobs, 'every blob is rescanned');
  t.equal(r.recovery.indexesRebuilt, blobs - 1, 'older blobs get new index files');
  t.equal((await r.stats()).activeBlobId, 5, 'the newest blob, without an index, is written to again');
  t.equal(indexFiles(dir).length, blobs - 1);
  await expectRecords(t, r, Array.from({ length: N }, (_, i) => i), [], 'every record survives');
  await r.close();
  t.equal(indexFiles(dir).length, blobs);
});

t.test('garbage index files are rebuilt on open', async (t) => {
  const dir = tempDir(t);
  const e = await writeRecords(dir, { maxDataInBlob: 4 });
  await e.close();
  const indexes = indexFiles(dir);
  for (const [i, f] of indexes.entries()) {
    const size = fs.statSync(f).size;
    if (i === 0) fs.writeFileSync(f, Buffer.alloc(size, 0x77)); // same size, garbage
    else if (i === 1) fs.truncateSync(f, 100); // cut short
    else flipByte(f, engineInfo.format.indexHeaderSize + 6); // one byte in the fences
  }
  const r = await Engine.open(dir, { maxDataInBlob: 4 });
  t.equal(r.recovery.indexesLoaded, 0);
  t.equal(r.recovery.indexesRebuilt, indexes.length, 'every damaged index is rebuilt');
  t.equal(r.recovery.events.filter((ev) => ev.includes('unusable')).length, indexes.length);
  await expectRecords(t, r, Array.from({ length: N }, (_, i) => i), [N + 1], 'every record survives');
  await r.close();
  const again = await Engine.open(dir, { maxDataInBlob: 4 });
  t.equal(again.recovery.indexesLoaded, indexes.length, 'the rebuilt indexes are used next time');
  await again.close();
});

t.test('leftovers of interrupted work are cleaned up', async (t) => {
  const dir = tempDir(t);
  const e = await writeRecords(dir, { maxDataInBlob: 10 });
  await e.close();
  fs.writeFileSync(path.join(dir, 'oyster.1.index.tmp'), 'half-written index');
  fs.writeFileSync(path.join(dir, 'oyster.9.index'), 'index of a blob that does not exist');
  fs.writeFileSync(path.join(dir, 'oyster.10.blob'), Buffer.alloc(7)); // created, header never written
  fs.writeFileSync(path.join(dir, 'notes.txt'), 'not ours');
  const r = await Engine.open(dir, { maxDataInBlob: 10 });
  t.equal(r.recovery.filesRemoved, 3);
  t.same(fs.readdirSync(dir).sort(), ['notes.txt', 'oyster.1.blob', 'oyster.1.index', 'oyster.2.blob', 'oyster.2.index']);
  await r.put(keyOf(99), ver(1), Buffer.from('x'));
  t.equal((await r.stats()).activeBlobId, 11, 'ids of removed files are not reused');
  await r.close();
});

t.test('a blob whose header is unreadable is moved aside, the rest is served', async (t) => {
  const dir = tempDir(t);
  const e = await writeRecords(dir, { maxDataInBlob: 10 });
  await e.close();
  const [first] = blobFiles(dir);
  flipByte(first, 3);
  const r = await Engine.open(dir, { maxDataInBlob: 10 });
  t.equal(r.recovery.blobsQuarantined, 1);
  t.ok(fs.existsSync(path.join(dir, 'corrupted', path.basename(first))), 'kept in corrupted/ for an operator');
  await expectRecords(t, r, [10, 11, 19], [0, 9], 'records of the other blob are served');
  await r.close();
});
