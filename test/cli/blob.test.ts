// oyster blob check | info | recover on real partition files: written by
// the engine, damaged on purpose (as test/engine/faults.test.ts does), and
// read back by the engine after recovery. Also a partition tree written by
// a real node, recovered and served again.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t, { Test } from 'tap';
import { Engine } from '../../src/store/engine';
import { blobFiles, blobFormatOf, copyPartition, flipByte, FORMAT1_FIXTURE, recordsIn } from '../helpers/blob-files';
import { startNode, writeCluster } from '../helpers/oysterd';
import { keyOf, valueOf, ver } from '../helpers/records';
import { tempDir } from '../helpers/tmpdir';
import { oyster, OYSTER } from './lib';

const PREFIX = 'bob_t';
const N = 50;
const sizeOf = (i: number) => 64 + i;

/**
 * 50 records in blobs of 20 (ids 1, 2, 3), key 3 deleted, key 4 written
 * twice. `crash`: the files as a crash leaves them (blob 3 active, no index).
 */
async function writePartition(dir: string, crash = false): Promise<void> {
  const live = crash ? path.join(dir, '..', `${path.basename(dir)}.live`) : dir;
  const e = await Engine.open(live, { blobFilePrefix: PREFIX, maxDataInBlob: 20 });
  for (let i = 0; i < N; i++) await e.put(keyOf(i), ver(100 + i, 1_700_000_000_000_000 + i, 1), valueOf(i, 1, sizeOf(i)));
  await e.delete(keyOf(3), ver(200));
  await e.put(keyOf(4), ver(300), valueOf(4, 2, 99));
  if (crash) {
    // The sealed blobs' indexes are built in the background: a crash after they are written.
    const built = () => fs.readdirSync(live).filter((f) => f.endsWith('.index')).length === 2 && !fs.readdirSync(live).some((f) => f.endsWith('.tmp'));
    for (const end = Date.now() + 10_000; !built() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 5));
    copyPartition(live, dir);
  }
  await e.close();
}

/** Every key as the engine reads it: 'v1', 'v2', 'deleted', 'absent' or 'WRONG'. */
async function readAll(dir: string): Promise<{ versions: string[]; recovery: Engine['recovery'] }> {
  const e = await Engine.open(dir, { blobFilePrefix: PREFIX });
  const versions: string[] = [];
  for (let i = 0; i < N; i++) {
    const r = await e.get(keyOf(i));
    if (r === null) versions.push('absent');
    else if (r.kind === 'deleted') versions.push('deleted');
    else if (r.value.equals(valueOf(i, 1, sizeOf(i)))) versions.push('v1');
    else if (r.value.equals(valueOf(i, 2, 99))) versions.push('v2');
    else versions.push('WRONG');
  }
  const recovery = e.recovery;
  await e.close();
  return { versions, recovery };
}

function expected(lost: number[] = []): string[] {
  return Array.from({ length: N }, (_, i) => (lost.includes(i) ? 'absent' : i === 3 ? 'deleted' : i === 4 ? 'v2' : 'v1'));
}

/** Path, size, mtime and content hash of every file below dir. */
function fingerprint(dir: string): string[] {
  const out: string[] = [];
  for (const name of fs.readdirSync(dir, { recursive: true }) as string[]) {
    const p = path.join(dir, name);
    const st = fs.statSync(p);
    if (!st.isFile()) continue;
    out.push(`${name} ${st.size} ${st.mtimeMs} ${crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex')}`);
  }
  return out.sort();
}

interface CheckJson {
  partitions: Array<{ dir: string; keySize: number; blobs: Array<Record<string, unknown>>; problems: Array<{ file: string; text: string }>; notes: Array<{ file: string; text: string }> }>;
  problems: number;
}

async function checkJson(t: Test, target: string, code: number): Promise<CheckJson> {
  const r = await oyster(['blob', 'check', '--json', target]);
  t.equal(r.code, code, `check ${path.basename(target)} exits ${code}`);
  return JSON.parse(r.stdout) as CheckJson;
}

// The offset of key i's record in a blob and where its value starts.
function recordOf(blob: string, i: number): { offset: number; valueAt: number } {
  const r = recordsIn(blob, 16).find((x) => x.key.equals(keyOf(i)))!;
  return { offset: r.offset, valueAt: r.offset + r.headerSize };
}

t.test('a clean partition: check passes, info shows the headers and counts', async (t) => {
  const dir = path.join(tempDir(t), 'part');
  await writePartition(dir);
  const before = fingerprint(dir);
  const check = await oyster(['blob', 'check', '-v', dir]);
  t.equal(check.code, 0);
  t.match(check.stdout, `${path.join(dir, `${PREFIX}.1.blob`)}: ok, 20 records\n`);
  t.match(check.stdout, /checked 1 partition, 3 blobs \([\d.]+ KiB\): no problems\n$/);

  const info = await oyster(['blob', 'info', dir]);
  t.equal(info.code, 0);
  t.match(info.stdout, `${dir}: 3 blobs, key size 16\n  ${PREFIX}.1.blob: `);
  t.match(info.stdout, `${PREFIX}.1.blob: `);
  t.match(info.stdout, /format 2, key size 16, id 1\n/);
  t.match(
    info.stdout,
    /index bob_t\.1\.index: 8\.0 KiB, format 2, 20 entries for 20 records, 1 blocks of 4096 B, bloom 1 x 64 B with 6 probes, timestamps 100\.\.119, newest 119\.1700000000000019@1, largest tick 1700000000000019, blob size \d+: valid/,
  );
  t.notMatch(info.stdout, 'records 20', 'counts only with --full');

  const full = JSON.parse((await oyster(['blob', 'info', '--full', '--json', dir])).stdout) as { partitions: Array<{ blobs: Array<Record<string, number>> }> };
  const blobs = full.partitions[0].blobs;
  t.same(blobs.map((b) => b.records), [20, 20, 12]);
  t.same(blobs.map((b) => b.keys), [20, 20, 12]);
  t.same(blobs.map((b) => b.tombstones), [0, 0, 1]);
  t.same([blobs[0].minTimestamp, blobs[2].maxTimestamp, blobs[2].maxTick], [100, 300, 1_700_000_000_000_049]);
  t.same(blobs.map((b) => b.version), [2, 2, 2]);

  const one = await oyster(['blob', 'check', '-v', path.join(dir, `${PREFIX}.2.blob`)]);
  t.equal(one.code, 0, 'a single blob file');
  t.match(one.stdout, 'checked 1 partition, 1 blob');
  const tree = await oyster(['blob', 'check', path.dirname(dir)]);
  t.equal(tree.code, 0, 'a directory above partitions');
  t.same(fingerprint(dir), before, 'check and info changed nothing');
});

t.test('a partition a running engine holds is refused', async (t) => {
  const dir = path.join(tempDir(t), 'part');
  await writePartition(dir);
  const e = await Engine.open(dir, { blobFilePrefix: PREFIX });
  t.teardown(() => e.close());
  for (const cmd of [['check'], ['info'], ['recover', '--in-place']]) {
    const r = await oyster(['blob', ...cmd, dir]);
    t.equal(r.code, 3, `${cmd[0]} exits 3`);
    t.match(r.stderr, 'in use by a running node (stop it first)');
  }
});

t.test('damaged records and index files: check reports them, recover saves what is intact', async (t) => {
  const base = tempDir(t);
  const dir = path.join(base, 'part');
  await writePartition(dir);
  const [b1] = blobFiles(dir, PREFIX);
  flipByte(b1, recordOf(b1, 5).valueAt + 10); // key 5's only version
  fs.rmSync(path.join(dir, `${PREFIX}.2.index`));
  flipByte(path.join(dir, `${PREFIX}.3.index`), 4096 + 100); // an index block
  fs.writeFileSync(path.join(dir, `${PREFIX}.7.index.tmp`), 'unfinished');
  const damaged = fingerprint(dir);

  const report = await checkJson(t, dir, 1);
  const problems = report.partitions[0].problems.map((p) => `${p.file}: ${p.text}`);
  t.same(problems, [
    `${PREFIX}.1.blob: 1 record fails its checksum, 1 of them the newest version of their key: reading those keys reports corruption`,
    `${PREFIX}.2.index: missing; the engine scans the blob and writes it at open`,
    `${PREFIX}.3.index: index block 0 checksum mismatch in ${path.join(dir, `${PREFIX}.3.index`)}; the engine rebuilds it at open`,
    `${PREFIX}.7.index.tmp: unfinished index build; the engine removes it at open`,
  ]);
  t.equal(report.partitions[0].blobs[0].corruptRecords, 1);

  // A copy under --out: the source is only read.
  const out = path.join(base, 'recovered');
  const r = await oyster(['blob', 'recover', dir, '--out', out]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, `${PREFIX}.1.blob: rewritten (1 record fails its checksum): 19 records kept, 1 corrupt dropped (1 the newest of their key`);
  t.match(r.stdout, `${PREFIX}.2.blob: copied: 20 records kept; index written`);
  t.match(r.stdout, `${PREFIX}.3.blob: copied: 12 records kept; index written`);
  t.same(fingerprint(dir), damaged, 'the source is unchanged');
  t.same(fs.readdirSync(out).sort(), [1, 2, 3].flatMap((i) => [`${PREFIX}.${i}.blob`, `${PREFIX}.${i}.index`]));
  const copy = await readAll(out);
  t.same(copy.versions, expected([5]), 'everything but the damaged record');
  t.equal(copy.recovery.indexesLoaded, 3, 'served from the new index files without a scan');
  t.equal(copy.recovery.blobsScanned, 0);
  t.equal((await oyster(['blob', 'check', out])).code, 0, 'the copy checks clean');

  // In place: originals kept under corrupted/, the rest repaired. New files
  // take the directory's owner (seen when running as root).
  const root = process.getuid?.() === 0;
  if (root) fs.chownSync(dir, 4321, 4321);
  const inPlace = await oyster(['blob', 'recover', '--json', '--in-place', dir]);
  t.equal(inPlace.code, 0, inPlace.stderr);
  const blobs = (JSON.parse(inPlace.stdout) as { partitions: Array<{ blobs: Array<{ name: string; action: string; keptAs: string | null; indexWritten: boolean }> }> }).partitions[0].blobs;
  t.same(
    blobs.map((b) => [b.name, b.action, b.keptAs, b.indexWritten]),
    [
      [`${PREFIX}.1.blob`, 'rewritten', `corrupted/${PREFIX}.1.blob`, true],
      [`${PREFIX}.2.blob`, 'index-rebuilt', null, true],
      [`${PREFIX}.3.blob`, 'index-rebuilt', null, true],
    ],
  );
  if (root) {
    for (const f of [`${PREFIX}.1.blob`, `${PREFIX}.1.index`, `${PREFIX}.2.index`, `${PREFIX}.3.index`, 'corrupted']) {
      t.equal(fs.statSync(path.join(dir, f)).uid, 4321, `${f} belongs to the directory's owner`);
    }
  }
  t.equal(fs.readFileSync(path.join(dir, 'corrupted', `${PREFIX}.1.blob`)).length, fs.statSync(path.join(out, `${PREFIX}.1.blob`)).size + 44 + 16 + sizeOf(5));
  const after = await checkJson(t, dir, 1);
  t.same(after.partitions[0].problems.map((p) => p.file), [`${PREFIX}.7.index.tmp`], 'only the leftover the engine removes is left');
  t.same(after.partitions[0].notes.map((n) => n.text), [`1 file quarantined earlier: ${PREFIX}.1.blob`]);
  fs.rmSync(path.join(dir, `${PREFIX}.7.index.tmp`));
  const repaired = await readAll(dir);
  t.same(repaired.versions, expected([5]));
  t.equal(repaired.recovery.indexesLoaded, 3);
});

t.test('a torn tail of the active blob after a crash', async (t) => {
  const dir = path.join(tempDir(t), 'part');
  await writePartition(dir, true);
  const active = path.join(dir, `${PREFIX}.3.blob`);
  fs.appendFileSync(active, Buffer.from('OYRC torn write'));
  const report = await checkJson(t, dir, 1);
  t.same(report.partitions[0].problems.map((p) => p.text), [
    'torn tail of 15 bytes after the last record (an interrupted write; the engine cuts it off at open)',
  ]);
  t.equal(report.partitions[0].blobs[2].active, true);
  const r = await oyster(['blob', 'recover', '--in-place', dir]);
  t.equal(r.code, 0);
  t.match(r.stdout, `${PREFIX}.3.blob: rewritten (torn tail of 15 bytes): 12 records kept; original kept as corrupted/${PREFIX}.3.blob\n`);
  t.notOk(fs.existsSync(path.join(dir, `${PREFIX}.3.index`)), 'the active blob stays active');
  const e = await Engine.open(dir, { blobFilePrefix: PREFIX });
  t.equal(e.recovery.bytesTruncated, 0, 'nothing left to cut');
  await e.put(keyOf(60), ver(400), Buffer.from('after'));
  t.equal((await e.stats()).activeBlobId, 3, 'writes continue in the same blob');
  await e.close();
});

t.test('an unreadable blob header: quarantined by the engine, recovered by the tool', async (t) => {
  const base = tempDir(t);
  const dir = path.join(base, 'part');
  await writePartition(dir);
  flipByte(path.join(dir, `${PREFIX}.1.blob`), 20); // inside the blob id: the header's checksum fails
  const report = await checkJson(t, dir, 1);
  t.same(report.partitions[0].problems.map((p) => p.text), [
    'header: blob header checksum mismatch; the engine quarantines the blob at open (oyster blob recover saves its records)',
  ]);
  t.equal(report.partitions[0].blobs[0].records, 20, 'records read all the same, with the partition\'s key size');

  // Let the engine quarantine it, then recover the kept copy into the partition.
  const quarantined = await readAll(dir);
  t.equal(quarantined.recovery.blobsQuarantined, 1);
  const kept = path.join(dir, 'corrupted', `${PREFIX}.1.blob`);
  const out = path.join(base, 'saved');
  const r = await oyster(['blob', 'recover', kept, '--out', out, '--key-size', '16']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, `${PREFIX}.1.blob: rewritten (header: blob header checksum mismatch): 20 records kept; index written`);
  for (const f of fs.readdirSync(out)) fs.copyFileSync(path.join(out, f), path.join(dir, f));
  t.same((await readAll(dir)).versions, expected(), 'every record is back');
  const inPlace = await oyster(['blob', 'recover', '--in-place', kept]);
  t.equal(inPlace.code, 3, 'a kept copy is recovered with --out only');
  t.match(inPlace.stderr, 'kept copy');
});

t.test('an index that passes its own checks but describes other records', async (t) => {
  const base = tempDir(t);
  const dir = path.join(base, 'part');
  await writePartition(dir);
  // Same record sizes and ids, other keys: an index file that fits the blob's size.
  const other = path.join(base, 'other');
  const e = await Engine.open(other, { blobFilePrefix: PREFIX, maxDataInBlob: 20 });
  for (let i = 0; i < 20; i++) await e.put(keyOf(1000 + i), ver(100 + i, 1_700_000_000_000_000 + i, 1), valueOf(1000 + i, 1, sizeOf(i)));
  await e.close();
  fs.copyFileSync(path.join(other, `${PREFIX}.1.index`), path.join(dir, `${PREFIX}.1.index`));
  const report = await checkJson(t, dir, 1);
  const [p] = report.partitions[0].problems;
  t.equal(p.file, `${PREFIX}.1.index`);
  t.match(p.text, /^does not describe the blob \(20 wrong entries, first: entry for key [0-9A-F]{32}, which the blob does not hold\); the engine would use it as it is/);
  const r = await oyster(['blob', 'recover', '--in-place', dir]);
  t.match(r.stdout, `${PREFIX}.1.blob: index-rebuilt (index: 20 wrong entries`);
  t.equal((await oyster(['blob', 'check', dir])).code, 0);
  t.same((await readAll(dir)).versions, expected());
});

t.test('a pearl blob is reported and left alone', async (t) => {
  const dir = path.join(tempDir(t), 'part');
  await writePartition(dir);
  const pearl = Buffer.alloc(64);
  pearl.writeBigUInt64LE(0xdeafabcdn, 0);
  fs.writeFileSync(path.join(dir, `${PREFIX}.9.blob`), pearl);
  const report = await checkJson(t, dir, 1);
  t.same(report.partitions[0].problems.map((p) => `${p.file}: ${p.text}`), [
    `${PREFIX}.9.blob: a pearl (bob) blob file, not Oyster's format; the engine refuses to open the partition`,
  ]);
  const r = await oyster(['blob', 'recover', '--in-place', dir]);
  t.equal(r.code, 1, 'not everything could be recovered');
  t.match(r.stdout, `${PREFIX}.9.blob: skipped (a pearl (bob) blob file, not Oyster's format)`);
  t.same(fs.readFileSync(path.join(dir, `${PREFIX}.9.blob`)), pearl);
});

t.test('a partition of format 1 (the previous engine\'s): checked clean, described, recovered into format 2', async (t) => {
  const base = tempDir(t);
  const dir = path.join(base, 'part');
  copyPartition(FORMAT1_FIXTURE, dir);
  const before = fingerprint(dir);
  const report = await checkJson(t, dir, 0);
  t.same(report.partitions[0].problems, [], 'older formats are no problem');
  t.same(report.partitions[0].notes.map((n) => `${n.file}: ${n.text}`), [
    'oyster.1.index: index format 1, which this build no longer reads; the engine rebuilds it at open',
    'oyster.2.blob: format 1: the engine indexes it at open and writes new records to a new blob of format 2',
  ]);
  t.same(report.partitions[0].blobs.map((b) => [b.version, b.records, b.index]), [
    [1, 7, 'outdated'],
    [1, 6, 'absent'],
  ]);
  const check = await oyster(['blob', 'check', dir]);
  t.match(check.stdout, `${path.join(dir, 'oyster.1.index')}: note: index format 1`);
  t.match(check.stdout, 'no problems');

  const info = await oyster(['blob', 'info', '--full', dir]);
  t.equal(info.code, 0);
  t.match(info.stdout, 'oyster.1.blob: 445 B, format 1, key size 16, id 1\n');
  t.match(info.stdout, 'records 7, keys 5, tombstones 1, corrupt 0, timestamps 1700000001..1700000013, largest tick 0');
  t.match(info.stdout, 'index oyster.1.index: 8.0 KiB, outdated: index format 1');
  t.match(info.stdout, 'oyster.2.blob: 437 B, format 1, key size 16, id 2, active\n');
  t.same(fingerprint(dir), before, 'check and info changed nothing');

  const out = path.join(base, 'out');
  const r = await oyster(['blob', 'recover', dir, '--out', out]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, 'oyster.1.blob: copied (format 1, written as format 2): 7 records kept; index written');
  t.match(r.stdout, 'oyster.2.blob: copied (format 1, written as format 2): 6 records kept\n');
  t.same(blobFiles(out).map(blobFormatOf), [2, 2]);
  t.equal((await oyster(['blob', 'check', out])).code, 0, 'the copy checks clean');
  const copy = await Engine.open(out);
  const deleted = await copy.get(keyOf(5));
  t.same(deleted, { kind: 'deleted', version: ver(1700000015) }, 'records keep their versions');
  t.equal((await copy.stats()).activeBlobId, 2, 'written in format 2, the active blob takes writes again');
  await copy.close();

  // The engine upgrades the partition itself; then there is nothing to note.
  const e = await Engine.open(dir);
  await e.close();
  const after = await checkJson(t, dir, 0);
  t.same([after.partitions[0].problems, after.partitions[0].notes], [[], []]);
  t.same(after.partitions[0].blobs.map((b) => [b.version, b.index, b.indexEntriesVerified]), [
    [1, 'ok', true],
    [1, 'ok', true],
  ]);
});

t.test('a progress bar on a terminal only', async (t) => {
  const dir = path.join(tempDir(t), 'part');
  await writePartition(dir);
  const plain = await oyster(['blob', 'check', dir]);
  t.notMatch(plain.stderr, '[', 'no bar into a pipe');
  let script: string;
  try {
    script = execFileSync('sh', ['-c', 'command -v script'], { encoding: 'utf8' }).trim();
  } catch {
    t.skip('script(1) is not installed: no terminal to test with', () => undefined);
    return;
  }
  const typescript = execFileSync(script, ['-qec', `${process.execPath} ${OYSTER} blob check ${dir}`, '/dev/null'], { encoding: 'utf8' });
  t.match(typescript, /part \[[#.]{30}\] +\d+% [\d.]+ (B|KiB)\/[\d.]+ (B|KiB)/, 'the bar is drawn on a terminal');
  t.match(typescript, 'no problems');
});

t.test('a node\'s data: checked, recovered into a new disk, served from there', async (t) => {
  const base = tempDir(t);
  const files = await writeCluster(base, { nodes: [{ name: 'a' }] });
  const node = await startNode(files, 'a');
  t.equal((await oyster(['put', '1-200', '--value', 'kept', '--rest', node.url])).code, 0);
  const disk = files.disks.a.disk1;
  t.equal(await node.stop(), 0);
  const check = await oyster(['blob', 'check', disk]);
  t.equal(check.code, 0);
  t.match(check.stdout, /checked 4 partitions, 4 blobs/);

  const fresh = path.join(base, 'fresh');
  const r = await oyster(['blob', 'recover', path.join(disk, 'bob'), '--out', path.join(fresh, 'bob')]);
  t.equal(r.code, 0, r.stderr);
  // The same node on the recovered copy.
  fs.renameSync(disk, `${disk}.old`);
  fs.renameSync(fresh, disk);
  const again = await startNode(files, 'a');
  t.teardown(() => again.stop());
  // The copy lacks the disk's identity: the node refuses it until the operator accepts it.
  t.equal((await fetch(`${again.url}/data/150`)).status, 503, 'refused at first: not the disk this node initialised');
  t.equal((await fetch(`${again.url}/disks/disk1/accept`, { method: 'POST' })).status, 200, 'POST /disks/disk1/accept');
  const exists = await oyster(['exists', '1-200', '--rest', again.url]);
  t.equal(exists.code, 0, 'every key is served from the recovered partitions');
  t.equal((await oyster(['get', '150', '--rest', again.url])).stdout, 'kept');
});
