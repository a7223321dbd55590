// Blob rotation by record count and by size; a clean reopen serves closed
// blobs from their index files without reading them.
import fs from 'node:fs';
import t, { Test } from 'tap';
import { Engine, engineInfo } from '../../src/store/engine';
import { blobFiles, indexFiles } from '../helpers/blob-files';
import { keyOf, valueOf, ver } from '../helpers/records';
import { tempDir } from '../helpers/tmpdir';

async function indexesWritten(e: Engine): Promise<void> {
  // Sealed blobs get their index files in the background.
  for (let i = 0; i < 500; i++) {
    const s = await e.stats();
    if (s.blobsInMemory <= (s.activeBlobId === null ? 0 : 1)) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('index builds did not finish');
}

async function checkAll(t: Test, e: Engine, n: number, size: (i: number) => number): Promise<void> {
  let bad = 0;
  for (let i = 0; i < n; i++) {
    const r = await e.get(keyOf(i));
    if (r?.kind !== 'found' || !r.value.equals(valueOf(i, 1, size(i)))) bad++;
  }
  t.equal(bad, 0, `all ${n} records read back`);
}

t.test('rotation by record count, and a reopen that uses the index files', async (t) => {
  const dir = tempDir(t);
  const opts = { maxDataInBlob: 100 };
  let e = await Engine.open(dir, opts);
  await Promise.all(Array.from({ length: 1050 }, (_, i) => e.put(keyOf(i), ver(10 + i), valueOf(i, 1, 100))));
  await indexesWritten(e);
  const st = await e.stats();
  t.equal(st.blobs, 11, '10 full blobs and the active one');
  t.equal(st.records, 1050);
  t.equal(indexFiles(dir).length, 10, 'each sealed blob has its index file');
  t.ok(st.filterMemory > 0, 'closed blobs hold bloom filters');
  await checkAll(t, e, 1050, () => 100);
  await e.close();
  t.equal(indexFiles(dir).length, 11, 'close writes the index of the active blob');

  e = await Engine.open(dir, opts);
  t.equal(e.recovery.blobs, 11);
  t.equal(e.recovery.indexesLoaded, 11, 'every blob is served by its index file');
  t.equal(e.recovery.blobsScanned, 0, 'no blob is rescanned');
  t.equal((await e.stats()).activeBlobId, null, 'no active blob until the next write');
  await checkAll(t, e, 1050, () => 100);
  await e.put(keyOf(5000), ver(9999), valueOf(5000, 1, 10));
  t.equal((await e.stats()).activeBlobId, 12, 'a write starts a new blob; ids are never reused');
  t.equal(await e.recordsCount(), 1051);
  await e.close();
});

t.test('rotation by size keeps every blob within max_blob_size', async (t) => {
  const dir = tempDir(t);
  const maxBlobSize = 64 * 1024;
  const e = await Engine.open(dir, { maxBlobSize, keySize: 16 });
  const n = 300;
  for (let i = 0; i < n; i++) await e.put(keyOf(i), ver(1), valueOf(i, 1, 1000));
  await e.put(keyOf(n), ver(1), valueOf(n, 1, 100 * 1024)); // larger than a blob: gets one of its own
  await e.close();
  const recordSize = engineInfo.format.recordFixedSize + 16 + 1000;
  const perBlob = Math.floor((maxBlobSize - engineInfo.format.blobHeaderSize) / recordSize);
  const files = blobFiles(dir);
  t.equal(files.length, Math.ceil(n / perBlob) + 1);
  for (const f of files.slice(0, -1)) t.ok(fs.statSync(f).size <= maxBlobSize, `${f} within the limit`);
  t.ok(fs.statSync(files[files.length - 1]).size > maxBlobSize, 'the oversized record sits alone');
  const again = await Engine.open(dir, { maxBlobSize });
  await checkAll(t, again, n, () => 1000);
  const big = await again.get(keyOf(n));
  t.ok(big?.kind === 'found' && big.value.equals(valueOf(n, 1, 100 * 1024)));
  await again.close();
});

t.test('closeActiveBlob seals the blob and writes its index at once', async (t) => {
  const dir = tempDir(t);
  const e = await Engine.open(dir);
  await e.put(keyOf(1), ver(1), Buffer.from('a'));
  await e.closeActiveBlob();
  t.equal(indexFiles(dir).length, 1);
  const st = await e.stats();
  t.equal(st.activeBlobId, null);
  t.equal(st.blobsInMemory, 0);
  await e.closeActiveBlob(); // nothing active: a no-op
  await e.put(keyOf(1), ver(2), Buffer.from('b'));
  const r = await e.get(keyOf(1));
  t.equal(r?.kind === 'found' && r.value.toString(), 'b');
  await e.close();
  t.equal(blobFiles(dir).length, 2);
});

t.test('an empty active blob leaves no file behind', async (t) => {
  const dir = tempDir(t);
  const e = await Engine.open(dir);
  await e.close();
  t.same(fs.readdirSync(dir), [], 'opening and closing creates nothing');
});
