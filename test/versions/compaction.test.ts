// Compaction on a real node: what it gives back, that it fails no request
// and serves no stale value while it runs, that a kill at any moment of it
// loses and resurrects nothing, and that it refuses to make a full disk
// fuller; that the live keys the node exports stay right through it and a
// restart; that a record whose header is damaged no longer keeps its blob
// from being compacted. Every key's expected state comes from a model of the
// acknowledged operations (./lib.ts KeyModel).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { flipByte, recordsIn, RecordLocation } from '../helpers/blob-files';
import { ClusterFiles, OysterProcess, startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { filesUnder, KeyModel, mountTmpfs, Rest, Rng, seedFromEnv, sleep, stored } from './lib';

const VALUE = 4096;

/** Value `seq` of key: its first bytes say which, so a read tells what it got. */
function valueOf(key: number, seq: number, size = VALUE): Buffer {
  const b = Buffer.alloc(size, (key * 31 + seq) & 0xff);
  b.write(`${key}:${seq}:`, 0, 'latin1');
  return b;
}

function seqOf(value: Buffer): number {
  return Number(value.toString('latin1', 0, 24).split(':')[1]);
}

async function setup(t: Test, compaction: Record<string, unknown> = {}, extra: Record<string, unknown> = {}, pearl: Record<string, unknown> = {}) {
  // Compaction runs only when asked (not enabled: its passes only count the
  // garbage of partitions opened from disk), at full speed unless a test slows it.
  return writeCluster(
    tempDir(t),
    { nodes: [{ name: 'n1', disks: ['d1'] }], vdisks: 1 },
    { maxDataInBlob: 200, extra: { ...extra, compaction: { enabled: false, rate: '1 GiB', ...compaction } }, pearl },
  );
}

/** Node n1 of `files` started, and a REST client: both closed when the test ends. */
async function serve(t: Test, files: ClusterFiles): Promise<{ node: OysterProcess; rest: Rest }> {
  const node = await startNode(files, 'n1');
  const rest = new Rest();
  t.teardown(async () => {
    rest.close();
    await node.stop();
  });
  return { node, rest };
}

/** Runs ops, those of one key one after the other in the given order (so that acknowledgements follow versions). */
async function writeAll(rest: Rest, node: OysterProcess, model: KeyModel[], ops: Array<{ key: number; value: Buffer | null }>, concurrency = 16): Promise<void> {
  const byKey = new Map<number, Array<Buffer | null>>();
  for (const { key, value } of ops) byKey.set(key, [...(byKey.get(key) ?? []), value]);
  const keys = [...byKey.keys()];
  let next = 0;
  const worker = async () => {
    while (next < keys.length) {
      const key = keys[next++];
      for (const value of byKey.get(key)!) {
        const r = await rest.request(node.url, value ? 'POST' : 'DELETE', `/data/${key}`, value ?? undefined);
        if (r.status === (value ? 201 : 200)) model[key].ack(value);
        else model[key].fail(value);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** oyster_live_keys of the disk (not of the alien directory) in the node's /metrics; null without the series. */
async function liveKeys(rest: Rest, node: OysterProcess, disk = 'd1', alien = false): Promise<number | null> {
  const metrics = (await rest.request(node.url, 'GET', '/metrics')).body.toString();
  const m = new RegExp(`^oyster_live_keys\\{disk="${disk}",alien="${alien}"\\} (\\d+)$`, 'm').exec(metrics);
  return m ? Number(m[1]) : null;
}

/** Reads every key of the model but those in `except` and checks it against what was acknowledged. */
async function checkAll(t: Test, rest: Rest, node: OysterProcess, model: KeyModel[], what: string, except = new Set<number>()): Promise<void> {
  let bad = 0;
  for (let key = 0; key < model.length; key++) {
    if (except.has(key)) continue;
    const r = await rest.request(node.url, 'GET', `/data/${key}`);
    const state = r.status === 200 ? r.body : r.status === 404 ? null : undefined;
    if (state === undefined || !model[key].allows(state)) {
      if (++bad <= 5) t.fail(`${what}: key ${key} reads ${r.status} ${state ? JSON.stringify(state.toString('latin1', 0, 16)) : ''}, ${model[key].describe()}`);
    }
  }
  if (bad === 0) t.pass(`${what}: all ${model.length - except.size} keys read as acknowledged`);
}

t.test('overwritten ten times, half deleted: compaction leaves at most 1.3x the live bytes, also after a restart', async (t) => {
  const files = await setup(t);
  let node = await startNode(files, 'n1');
  const rest = new Rest();
  t.teardown(async () => {
    rest.close();
    if (node.child.exitCode === null && node.child.signalCode === null) await node.stop();
  });
  const KEYS = 1000;
  const model = Array.from({ length: KEYS }, () => new KeyModel());
  for (let round = 1; round <= 10; round++) {
    await writeAll(rest, node, model, Array.from({ length: KEYS }, (_, key) => ({ key, value: valueOf(key, round) })));
  }
  await writeAll(rest, node, model, Array.from({ length: KEYS / 2 }, (_, i) => ({ key: i * 2, value: null })));
  const live = (KEYS / 2) * VALUE;
  const before = stored(files.disks.n1.d1).bytes;
  t.ok(before > 8 * live, `before: ${before} bytes on disk for ${live} live bytes`);
  // Counted as the writes came (the partitions were made by these writes).
  t.equal(await liveKeys(rest, node), KEYS / 2, 'oyster_live_keys: the keys not deleted, as the writes came');
  t.equal(await liveKeys(rest, node, 'd1', true), 0, 'and none in the alien directory');

  const answer = await rest.request(node.url, 'POST', '/vdisks/0/compact');
  t.equal(answer.status, 200, `POST /vdisks/0/compact: ${answer.body.toString().slice(0, 300)}`);
  const state = JSON.parse(answer.body.toString()) as { disks: Array<{ blobsCompacted: number; bytesReclaimed: number }> };
  t.ok(state.disks[0].blobsCompacted > 0, `${state.disks[0].blobsCompacted} blobs compacted`);
  const after = stored(files.disks.n1.d1);
  t.ok(after.bytes <= 1.3 * live, `after: ${after.bytes} bytes on disk, ${(after.bytes / live).toFixed(2)}x the live bytes`);
  t.same(after.leftovers, [], 'no compaction file left');
  await checkAll(t, rest, node, model, 'after compaction');

  const partitions = JSON.parse((await rest.request(node.url, 'GET', '/vdisks/0/partitions')).body.toString()) as { partitions: string[] };
  const p = JSON.parse((await rest.request(node.url, 'GET', `/vdisks/0/partitions/${partitions.partitions[0]}`)).body.toString()) as Record<string, number>;
  t.ok(p.disk_bytes > 0 && p.reclaimable_bytes >= 0 && p.reclaimable_bytes < p.disk_bytes, `partition: ${JSON.stringify(p)}`);
  const metrics = (await rest.request(node.url, 'GET', '/metrics')).body.toString();
  t.match(metrics, /oyster_compaction_blobs_total\{disk="d1"\} [1-9]/, 'compacted blobs counted');
  t.match(metrics, /oyster_reclaimable_bytes\{disk="d1",vdisk="0"\} \d+/, 'reclaimable bytes per vdisk');
  t.equal(await liveKeys(rest, node), KEYS / 2, 'oyster_live_keys after the compaction');

  t.equal(await node.stop(), 0, 'stopped');
  // The offline checker reads compacted blobs as any others.
  const check = spawnSync(process.execPath, [path.resolve(__dirname, '..', '..', '..', 'bin', 'oyster.js'), 'blob', 'check', files.disks.n1.d1], { encoding: 'utf8' });
  t.equal(check.status, 0, `oyster blob check: ${check.stdout.slice(-300)}${check.stderr.slice(-300)}`);
  // The first garbage count soon after the start sets the counters (they
  // start from nothing when partitions open), compaction disabled as it is,
  // and nothing is written meanwhile.
  node = await startNode(files, 'n1');
  const first = await liveKeys(rest, node);
  t.ok(first !== null && first >= KEYS / 2, `right after the restart, before the count: ${first}, not below the keys not deleted`);
  let counted = first;
  for (const until = Date.now() + 30_000; counted !== KEYS / 2 && Date.now() < until; ) {
    await sleep(200);
    counted = await liveKeys(rest, node);
  }
  t.equal(counted, KEYS / 2, 'oyster_live_keys after the restart, once the garbage was counted');
  await checkAll(t, rest, node, model, 'after a restart');
});

t.test('8 writers and readers while the blobs of their keys are compacted: no request fails, no read is stale', async (t) => {
  // Slowed down so that the load meets the compaction.
  const files = await setup(t, { rate: '4 MiB' });
  const { node, rest } = await serve(t, files);
  const KEYS = 400;
  const model = Array.from({ length: KEYS }, () => new KeyModel());
  const seqs = new Array<number>(KEYS).fill(0);
  for (let round = 1; round <= 6; round++) {
    await writeAll(rest, node, model, Array.from({ length: KEYS }, (_, key) => ({ key, value: valueOf(key, round) })));
    seqs.fill(round);
  }
  // Writer w owns the keys w, w + 4, ...: a key's acknowledged sequence only grows.
  const rng = new Rng(seedFromEnv());
  let stop = false;
  let failed = 0;
  let stale = 0;
  let reads = 0;
  let writes = 0;
  const problems: string[] = [];
  const writer = async (w: number) => {
    while (!stop) {
      const key = w + 4 * rng.int(KEYS / 4);
      const seq = seqs[key] + 1;
      const r = await rest.request(node.url, 'POST', `/data/${key}`, valueOf(key, seq));
      writes++;
      if (r.status === 201) seqs[key] = seq;
      else if (++failed <= 5) problems.push(`POST ${key}: ${r.status} ${r.body.toString().slice(0, 200)}`);
    }
  };
  const reader = async () => {
    while (!stop) {
      const key = rng.int(KEYS);
      const floor = seqs[key];
      const r = await rest.request(node.url, 'GET', `/data/${key}`);
      reads++;
      if (r.status !== 200) {
        if (++failed <= 5) problems.push(`GET ${key}: ${r.status}`);
      } else if (seqOf(r.body) < floor || !r.body.equals(valueOf(key, seqOf(r.body)))) {
        if (++stale <= 5) problems.push(`GET ${key}: sequence ${seqOf(r.body)}, ${floor} acknowledged before the read`);
      }
    }
  };
  const load = [0, 1, 2, 3].map(writer).concat([0, 1, 2, 3].map(reader));
  await sleep(200);
  const answer = await rest.request(node.url, 'POST', '/vdisks/0/compact', undefined, 120_000);
  stop = true;
  await Promise.all(load);
  t.equal(answer.status, 200, 'compaction done');
  const state = JSON.parse(answer.body.toString()) as { disks: Array<{ blobsCompacted: number }> };
  t.ok(state.disks[0].blobsCompacted > 0, `${state.disks[0].blobsCompacted} blobs compacted under ${writes} writes and ${reads} reads`);
  t.same(problems, [], 'no failed request, no stale read');
  t.equal(failed, 0, 'failed requests');
  t.equal(stale, 0, 'stale reads');
  for (let key = 0; key < KEYS; key++) {
    const r = await rest.request(node.url, 'GET', `/data/${key}`);
    if (r.status !== 200 || seqOf(r.body) !== seqs[key]) t.fail(`key ${key}: ${r.status} ${r.status === 200 ? seqOf(r.body) : ''}, expected ${seqs[key]}`);
  }
});

t.test('SIGKILL at random moments of compactions: nothing lost, nothing resurrected, no file left behind', async (t) => {
  const files = await setup(t, { rate: '2 MiB' });
  let node = await startNode(files, 'n1');
  const rest = new Rest();
  t.teardown(async () => {
    rest.close();
    if (node.child.exitCode === null && node.child.signalCode === null) await node.stop();
  });
  const rng = new Rng(seedFromEnv());
  const KEYS = 600;
  const model = Array.from({ length: KEYS }, () => new KeyModel());
  let seq = 0;
  let killedWhileRunning = 0;
  for (let kill = 0; kill < 6; kill++) {
    // More garbage: overwrites and deletes of random keys.
    const ops = Array.from({ length: 1500 }, () => {
      const key = rng.int(KEYS);
      return { key, value: rng.next() < 0.2 ? null : valueOf(key, ++seq) };
    });
    await writeAll(rest, node, model, ops);
    const started = await rest.request(node.url, 'POST', '/vdisks/0/compact?wait=false');
    t.equal(started.status, 202, 'compaction started');
    await sleep(rng.int(400));
    const status = JSON.parse((await rest.request(node.url, 'GET', '/vdisks/0/compact')).body.toString()) as { disks: Array<{ running: boolean }> };
    if (status.disks[0].running) killedWhileRunning++;
    await node.kill();
    node = await startNode(files, 'n1');
    t.same(stored(files.disks.n1.d1).leftovers, [], `kill ${kill + 1}: no compaction file left after the restart`);
    await checkAll(t, rest, node, model, `kill ${kill + 1}`);
  }
  t.ok(killedWhileRunning > 0, `${killedWhileRunning} of 6 kills hit a compaction under way`);
  const done = await rest.request(node.url, 'POST', '/vdisks/0/compact', undefined, 120_000);
  t.equal(done.status, 200, 'a last compaction runs to the end');
  await checkAll(t, rest, node, model, 'at the end');
});

const root = process.getuid?.() === 0;

t.test('a disk without room for what a blob keeps: compaction refuses with a log line, the disk keeps serving', { skip: root ? false : 'mounting a tmpfs needs root' }, async (t) => {
  const files = await setup(t, {}, { min_free_space: '1 MiB' }, { max_data_in_blob: 1000 });
  const disk = files.disks.n1.d1;
  mountTmpfs(t, disk, '8m');
  const { node, rest } = await serve(t, files);
  const KEYS = 1000;
  const model = Array.from({ length: 3 * KEYS }, () => new KeyModel());
  // One blob of about 4 MiB of which a third is garbage, then new keys (no
  // more garbage, which a compaction could free to make room) until the
  // disk has less room than that blob keeps.
  await writeAll(rest, node, model, Array.from({ length: KEYS }, (_, key) => ({ key, value: valueOf(key, 1) })));
  await writeAll(rest, node, model, Array.from({ length: 330 }, (_, key) => ({ key, value: valueOf(key, 2) })));
  for (let key = KEYS; ; key++) {
    const st = fs.statfsSync(disk);
    if (st.bavail * st.bsize < 2.5 * 1024 * 1024) break;
    if (key === model.length) throw new Error('the disk did not fill up');
    await writeAll(rest, node, model, [{ key, value: valueOf(key, 1) }]);
  }
  // Compaction takes closed blobs only: the first one's index is written in
  // the background after it filled up (late on a busy machine).
  for (let waited = 0; !filesUnder(disk).some((f) => /\.1\.index$/.test(f)); waited += 50) {
    if (waited > 20_000) throw new Error('blob 1 was not closed');
    await sleep(50);
  }
  const linesBefore = node.output.length;
  const answer = await rest.request(node.url, 'POST', '/vdisks/0/compact');
  t.equal(answer.status, 200, 'asked');
  // The log line travels through the node's stdout, which may deliver it after the answer.
  let refusal: string | undefined;
  for (let waited = 0; waited <= 5000 && refusal === undefined; waited += 50) {
    refusal = node.output.slice(linesBefore).find((l) => /compaction of blob \d+ refused/.test(l));
    if (refusal === undefined) await sleep(50);
  }
  t.ok(refusal, `a log line says why: ${refusal?.slice(0, 300)}`);
  const metrics = (await rest.request(node.url, 'GET', '/metrics')).body.toString();
  t.match(metrics, /oyster_compaction_skipped_total\{disk="d1",reason="no_space"\} [1-9]/, 'counted as skipped for lack of room');
  const w = await rest.request(node.url, 'POST', '/data/5000', valueOf(5000, 1, 100));
  t.equal(w.status, 201, 'the disk still takes writes');
  await checkAll(t, rest, node, model, 'after the refusal');
});

t.test('records with damaged headers and no replica to repair them: their blobs are compacted all the same, the damage stays visible', async (t) => {
  const files = await setup(t, {}, {}, { max_data_in_blob: 10 });
  const { node, rest } = await serve(t, files);
  const KEYS = 200;
  const BIG = 300 * 1024; // with block checksums
  const sizeOf = (key: number) => (key % 50 === 7 ? BIG : VALUE);
  const model = Array.from({ length: KEYS }, () => new KeyModel());
  for (let round = 1; round <= 3; round++) {
    await writeAll(rest, node, model, Array.from({ length: KEYS }, (_, key) => ({ key, value: valueOf(key, round, sizeOf(key)) })));
  }
  // Every other key once more: the blobs of the two keys below hold garbage to reclaim.
  const again = Array.from({ length: KEYS }, (_, key) => key).filter((key) => key !== 10 && key !== 57);
  await writeAll(rest, node, model, again.map((key) => ({ key, value: valueOf(key, 4, sizeOf(key)) })));
  t.equal(model.filter((m) => m.acked !== undefined && m.maybe.length === 0).length, KEYS, 'every write acknowledged');
  // A record of round 3 (the newest of its key) in a closed blob, with its file.
  const blobs = filesUnder(files.disks.n1.d1).filter((f) => /\.\d+\.blob$/.test(f));
  const newest = (key: number): { file: string; record: RecordLocation } => {
    for (const file of blobs) {
      if (!fs.existsSync(file.replace(/\.blob$/, '.index'))) continue; // the active blob
      const data = fs.readFileSync(file);
      for (const record of recordsIn(file, 16)) {
        const at = record.offset + record.headerSize;
        if (record.key.readUInt32LE(0) === key && !record.tombstone && seqOf(data.subarray(at, at + 24)) === 3) return { file, record };
      }
    }
    throw new Error(`no closed record of round 3 for key ${key}`);
  };
  // One small value and one large, a byte of their headers' versions flipped.
  const small = newest(10);
  const big = newest(57);
  t.equal(big.record.valueSize, BIG);
  flipByte(small.file, small.record.offset + 17);
  flipByte(big.file, big.record.offset + 17);
  t.ok((await rest.request(node.url, 'GET', '/data/10')).status >= 500, 'before: the small value reads as damaged');
  t.ok((await rest.request(node.url, 'GET', '/data/57')).status >= 500, 'and the large one');

  const linesBefore = node.output.length;
  const answer = await rest.request(node.url, 'POST', '/vdisks/0/compact', undefined, 120_000);
  t.equal(answer.status, 200, 'asked');
  const state = JSON.parse(answer.body.toString()) as { disks: Array<{ blobsCompacted: number; bytesReclaimed: number }> };
  t.ok(state.disks[0].bytesReclaimed > 0, `${state.disks[0].blobsCompacted} blobs compacted, ${state.disks[0].bytesReclaimed} bytes reclaimed`);
  let lines: string[] = [];
  for (let waited = 0; waited <= 5000; waited += 50) {
    lines = node.output.slice(linesBefore);
    if (lines.some((l) => l.includes('damaged record headers anew'))) break;
    await sleep(50);
  }
  t.notOk(lines.some((l) => /compaction of blob \d+ failed/.test(l)), 'no compaction failed');
  t.ok(lines.some((l) => l.includes('damaged record headers anew')), 'a warning says headers were written anew');
  const r10 = await rest.request(node.url, 'GET', '/data/10');
  t.ok(r10.status >= 500, `the small value, with nothing left to check it by, still reads as damaged (${r10.status}), never 404`);
  const r57 = await rest.request(node.url, 'GET', '/data/57');
  t.equal(r57.status, 200, 'the large value, its blocks checked, reads again');
  t.same(r57.body, valueOf(57, 3, BIG), 'byte for byte');
  await checkAll(t, rest, node, model, 'every other key', new Set([10]));
});
