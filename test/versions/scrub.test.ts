// Scrub on real nodes: a flipped byte in a value and in a tombstone's header
// of closed blobs on one replica is found by the periodic scrub, counted,
// logged once and repaired from the other replica, so that the replica reads
// the value and the deletion again on its own; the repaired records are not
// reported again by later passes, and the scrub's place survives a restart.
// A damaged value larger than http_body_memory_limit is repaired too, read
// from the other replica a part at a time as it is written.
// On a node alone, a damaged value has no healthy copy: it is reported lost,
// and reads answer an error, never "absent". A disk out of service when the
// node started keeps its scrub's place once it is back.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { flipByte, recordsIn, RecordLocation } from '../helpers/blob-files';
import { codeOf, GetSource, keyBytes, Status } from '../helpers/grpc-client';
import { TestCluster, waitFor } from '../cluster/lib';
import { startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { Rest } from './lib';

const value = (k: number) => Buffer.from(`value of key ${k};`.repeat(100));

/** The newest record of `key` in the closed blobs of every partition under `vdiskDir`, with its blob file. */
function closedRecordOf(vdiskDir: string, key: number): { file: string; record: RecordLocation } {
  const bytes = keyBytes(key, 8);
  let found: { file: string; record: RecordLocation } | null = null;
  for (const partition of fs.readdirSync(vdiskDir)) {
    const blobs = fs
      .readdirSync(path.join(vdiskDir, partition))
      .filter((n) => /\.\d+\.blob$/.test(n))
      .map((n) => ({ file: path.join(vdiskDir, partition, n), id: Number(n.split('.').at(-2)) }))
      .sort((a, b) => a.id - b.id)
      .map((b) => b.file);
    // The last blob is the active one.
    for (const file of blobs.slice(0, -1)) {
      for (const record of recordsIn(file, 8)) if (record.key.equals(bytes)) found = { file, record };
    }
  }
  if (!found) throw new Error(`no record of key ${key} in a closed blob under ${vdiskDir}`);
  return found;
}

function metric(text: string, name: string, labels: string): number {
  const m = new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

async function writeKeys(c: TestCluster, node: string, from: number, to: number): Promise<void> {
  let next = from;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < to) {
        const k = next++;
        await c.put(node, k, value(k));
      }
    }),
  );
}

t.test('a damaged value and a damaged tombstone are found by scrub and repaired from the other replica', async (t) => {
  const c = await TestCluster.start(t, {
    nodes: ['n1', 'n2'],
    replicas: [['n1', 'n2']],
    keySize: 8,
    // Both replicas acknowledge every write; small blobs, so most records sit in closed ones.
    opts: { quorum: 2, maxDataInBlob: 20, extra: { compaction: { interval: '1h', scrub_interval: '2s' }, anti_entropy: { interval: '1h' } } },
  });
  await c.waitLinks();
  await writeKeys(c, 'n1', 0, 100);
  for (let k = 0; k < 10; k++) await c.del('n1', k);
  // Behind the tombstones, enough to close the blobs that hold them.
  await writeKeys(c, 'n1', 100, 200);

  const dir = c.vdiskDir('n1', 0);
  const damagedValue = closedRecordOf(dir, 50);
  const damagedTombstone = closedRecordOf(dir, 3);
  t.ok(damagedTombstone.record.tombstone, 'key 3 ends in a tombstone in a closed blob');
  flipByte(damagedValue.file, damagedValue.record.offset + damagedValue.record.headerSize + 7);
  flipByte(damagedTombstone.file, damagedTombstone.record.offset + 12);

  const metrics = async () => (await c.rest('n1', 'GET', '/metrics')).text;
  await waitFor('two repairs on n1', async () => metric(await metrics(), 'oyster_scrub_repairs_total', 'disk="disk1",outcome="repaired"') >= 2, 30_000, 250);
  let m = await metrics();
  t.equal(metric(m, 'oyster_scrub_damaged_records_total', 'disk="disk1"'), 2, 'two damaged records found');
  t.ok(metric(m, 'oyster_corrupt_records_total', 'disk="disk1"') >= 2, 'and counted as corrupt records');
  t.ok(metric(m, 'oyster_scrub_bytes_total', 'disk="disk1"') > 0, 'scrub bytes counted');
  t.equal(metric(m, 'oyster_scrub_repairs_total', 'disk="disk1",outcome="unrepairable"'), 0, 'nothing unrepairable');

  // n1's own replica answers both keys correctly again.
  const own = c.grpc('n1');
  t.same((await own.get(keyBytes(50, 8), { force_node: true, source: GetSource.NORMAL })).data, value(50), 'the damaged value reads again from n1 alone');
  const deleted = await own.get(keyBytes(3, 8), { force_node: true, source: GetSource.NORMAL }).then(
    () => 'found',
    (err: unknown) => codeOf(err),
  );
  t.equal(deleted, Status.NOT_FOUND, 'the damaged tombstone still deletes key 3 on n1');
  const repairedLines = () => c.proc('n1').output.filter((l) => l.includes('failed its checksum'));
  t.equal(repairedLines().length, 2, `one log line per damaged record:\n${repairedLines().join('\n')}`);
  t.ok(repairedLines().every((l) => l.includes('"source":"n2"')), 'repaired from n2');

  // Later passes check what reads return: the damaged records are garbage now, not reported again.
  // The repairs may come before the pass that found them ends.
  const lastPass = async () => metric(await metrics(), 'oyster_scrub_last_pass_timestamp_seconds', 'disk="disk1"');
  const pass = await waitFor('a pass to end', async () => {
    const v = await lastPass();
    return Number.isFinite(v) ? v : 0;
  }, 30_000, 250);
  await waitFor('two more scrub passes', async () => (await lastPass()) > pass + 2, 30_000, 250);
  m = await metrics();
  t.equal(metric(m, 'oyster_scrub_damaged_records_total', 'disk="disk1"'), 2, 'no damage reported again');
  t.equal(repairedLines().length, 2, 'and not logged again');

  // Compaction drops the damaged records (superseded by their repairs).
  const compact = await c.rest('n1', 'POST', '/vdisks/0/compact');
  t.equal(compact.status, 200, 'compacted');
  const state = compact.json<{ disks: Array<{ scrub: { lastPass?: { finished: number }; damaged: number; repaired: number } }> }>();
  t.ok(state.disks[0].scrub.lastPass && state.disks[0].scrub.repaired === 2, `the scrub's state is reported: ${JSON.stringify(state.disks[0].scrub)}`);

  // Where the scrub stands is kept across a restart.
  const file = path.join(c.diskPath('n1'), 'bob', 'oyster-scrub.json');
  const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as { format: number; last_pass: { finished: number } | null };
  t.equal(stored.format, 1, 'scrub state kept in the disk root');
  t.ok(stored.last_pass && stored.last_pass.finished > 0, 'with the last pass');
  await c.stop('n1');
  await c.startNode('n1');
  const after = (await c.rest('n1', 'GET', '/vdisks/0/compact')).json<{ disks: Array<{ scrub: { lastPass?: { finished: number } } }> }>();
  t.ok((after.disks[0].scrub.lastPass?.finished ?? 0) >= stored.last_pass!.finished, 'the last pass is known after a restart');
  t.same((await c.grpc('n1').get(keyBytes(50, 8), { force_node: true, source: GetSource.NORMAL })).data, value(50), 'the value reads after compaction and a restart');
});

t.test('a damaged value larger than http_body_memory_limit is repaired from the other replica a part at a time', async (t) => {
  const MiB = 1024 * 1024;
  const c = await TestCluster.start(t, {
    nodes: ['n1', 'n2'],
    replicas: [['n1', 'n2']],
    keySize: 8,
    opts: {
      quorum: 2,
      maxDataInBlob: 20,
      httpMaxBodySize: '64 MiB',
      extra: { http_body_memory_limit: '16 MiB', compaction: { interval: '1h', scrub_interval: '2s' }, anti_entropy: { interval: '1h' } },
    },
  });
  await c.waitLinks();
  const big = Buffer.alloc(24 * MiB);
  for (let i = 0; i < big.length; i += 4) big.writeUInt32LE((i * 2654435761) >>> 0, i);
  t.equal((await fetch(`${c.url('n1')}/data/1000`, { method: 'POST', body: big })).status, 201, 'a value of 24 MiB stored on both replicas');
  // Behind it, enough to close its blob.
  await writeKeys(c, 'n1', 0, 40);
  const damaged = closedRecordOf(c.vdiskDir('n1', 0), 1000);
  flipByte(damaged.file, damaged.record.offset + damaged.record.headerSize + 13 * MiB);
  const metrics = async () => (await c.rest('n1', 'GET', '/metrics')).text;
  await waitFor('the repair', async () => metric(await metrics(), 'oyster_scrub_repairs_total', 'disk="disk1",outcome="repaired"') >= 1, 60_000, 250);
  t.equal(metric(await metrics(), 'oyster_scrub_repairs_total', 'disk="disk1",outcome="failed"'), 0, 'no repair failed');
  t.ok(c.proc('n1').output.some((l) => l.includes('failed its checksum') && l.includes('"source":"n2"')), 'repaired from n2');
  // n1 alone answers from its own replica.
  await c.stop('n2');
  const got = Buffer.from(await (await fetch(`${c.url('n1')}/data/1000`)).arrayBuffer());
  t.ok(got.equals(big), 'the value reads back byte-exact from n1 alone');
});

t.test('alone, a damaged value is reported lost and reads fail rather than answer absent', async (t) => {
  const c = await TestCluster.start(t, {
    nodes: ['n1'],
    replicas: [['n1']],
    keySize: 8,
    opts: { quorum: 1, maxDataInBlob: 20, extra: { compaction: { interval: '1h', scrub_interval: '2s' } } },
  });
  await writeKeys(c, 'n1', 0, 200);
  for (let k = 0; k < 10; k++) await c.del('n1', k);
  await writeKeys(c, 'n1', 200, 300);
  const dir = c.vdiskDir('n1', 0);
  const damagedValue = closedRecordOf(dir, 50);
  const damagedTombstone = closedRecordOf(dir, 3);
  flipByte(damagedValue.file, damagedValue.record.offset + damagedValue.record.headerSize + 7);
  flipByte(damagedTombstone.file, damagedTombstone.record.offset + 12);

  const metrics = async () => (await c.rest('n1', 'GET', '/metrics')).text;
  await waitFor('the scrub to judge both', async () => {
    const m = await metrics();
    return metric(m, 'oyster_scrub_repairs_total', 'disk="disk1",outcome="unrepairable"') + metric(m, 'oyster_scrub_repairs_total', 'disk="disk1",outcome="repaired"') >= 2;
  }, 30_000, 250);
  const m = await metrics();
  t.equal(metric(m, 'oyster_scrub_repairs_total', 'disk="disk1",outcome="unrepairable"'), 1, 'the value is unrepairable');
  t.equal(metric(m, 'oyster_scrub_repairs_total', 'disk="disk1",outcome="repaired"'), 1, 'the tombstone is written again from its index entry');
  const lost = c.proc('n1').output.filter((l) => l.includes('its value is lost'));
  t.equal(lost.length, 1, 'one error line for the lost value');
  t.match(lost[0], /"level":(50|"error")/, 'at error level');
  t.ok(c.proc('n1').output.some((l) => l.includes('repaired from its index entry')), 'the tombstone repair is logged');
  const r = await c.rest('n1', 'GET', '/data/50');
  t.ok(r.status >= 500, `a read of the damaged value fails (${r.status}), never 404`);
  t.equal((await c.rest('n1', 'GET', '/data/3')).status, 404, 'key 3 stays deleted');
});

t.test('a repair that cannot reach the other replica is tried again until it can', async (t) => {
  const c = await TestCluster.start(t, {
    nodes: ['n1', 'n2'],
    replicas: [['n1', 'n2']],
    keySize: 8,
    opts: { quorum: 2, checkInterval: '500ms', maxDataInBlob: 20, extra: { compaction: { interval: '1h', scrub_interval: '2s' }, anti_entropy: { interval: '1h' } } },
  });
  await c.waitLinks();
  await writeKeys(c, 'n1', 0, 200);
  await c.stop('n2');
  const damaged = closedRecordOf(c.vdiskDir('n1', 0), 50);
  flipByte(damaged.file, damaged.record.offset + damaged.record.headerSize + 7);
  const metrics = async () => (await c.rest('n1', 'GET', '/metrics')).text;
  const repairs = async (outcome: string) => metric(await metrics(), 'oyster_scrub_repairs_total', `disk="disk1",outcome="${outcome}"`);
  await waitFor('a failed repair', async () => (await repairs('failed')) >= 1, 30_000, 250);
  t.equal(await repairs('unrepairable'), 0, 'not taken for lost while n2 is down');
  t.equal(await repairs('repaired'), 0, 'nor repaired');
  // Found again by the next pass while its repair waits: not counted or logged twice.
  const lastPass = async () => metric(await metrics(), 'oyster_scrub_last_pass_timestamp_seconds', 'disk="disk1"') || 0;
  const pass = await lastPass();
  await waitFor('another scrub pass', async () => (await lastPass()) > pass, 30_000, 250);
  await c.startNode('n2');
  await waitFor('the repair once n2 is back', async () => (await repairs('repaired')) >= 1, 30_000, 250);
  t.same((await c.grpc('n1').get(keyBytes(50, 8), { force_node: true, source: GetSource.NORMAL })).data, value(50), 'the value reads again from n1 alone');
  t.equal(metric(await metrics(), 'oyster_scrub_damaged_records_total', 'disk="disk1"'), 1, 'found once');
  const lines = c.proc('n1').output.filter((l) => l.includes('scrub: ') && l.includes('"key":"3200000000000000"'));
  t.equal(lines.length, 2, `one line when the repair failed, one when it succeeded:\n${lines.join('\n')}`);
});

t.test('a disk out of service when the node started has its scrub state read once it is back, not a new pass over it', async (t) => {
  const files = await writeCluster(tempDir(t), { nodes: [{ name: 'n1', disks: ['d1'] }], vdisks: 1 }, { extra: { compaction: { scrub_interval: '2h' } } });
  const disk = files.disks.n1.d1;
  const rest = new Rest();
  t.teardown(() => rest.close());
  let node = await startNode(files, 'n1');
  t.equal((await rest.request(node.url, 'POST', '/data/8', Buffer.from('on the disk'))).status, 201);
  await node.stop();
  // The last pass ended an hour ago: the next is due in an hour.
  const lastPass = { started: Date.now() - 3_700_000, finished: Date.now() - 3_600_000 };
  const stateFile = path.join(disk, 'bob', 'oyster-scrub.json'); // the disk's root_dir_name
  fs.writeFileSync(stateFile, JSON.stringify({ format: 1, last_pass: lastPass, pass: null }));
  // Not mounted when the node starts: its mount point is empty.
  const real = `${disk}.real`;
  fs.renameSync(disk, real);
  fs.mkdirSync(disk);
  node = await startNode(files, 'n1');
  t.teardown(() => node.stop());
  t.equal((await rest.request(node.url, 'GET', '/data/8')).status, 503, 'out of service');
  fs.rmdirSync(disk);
  fs.renameSync(real, disk);
  await waitFor('the disk back in service', async () => (await rest.request(node.url, 'GET', '/data/8')).status === 200, 30_000, 250);
  const scrub = async () => (JSON.parse((await rest.request(node.url, 'GET', '/vdisks/0/compact')).body.toString()) as { disks: Array<{ scrub: { lastPass?: unknown; passStarted?: number } }> }).disks[0].scrub;
  await waitFor('the scrub state read from the disk', async () => (await scrub()).lastPass !== undefined, 10_000, 100);
  t.same((await scrub()).lastPass, lastPass, 'the last pass is the one the disk recorded');
  t.equal((await scrub()).passStarted, undefined, 'and no pass started');
  const metrics = (await rest.request(node.url, 'GET', '/metrics')).body.toString();
  t.match(metrics, new RegExp(`^oyster_scrub_last_pass_timestamp_seconds\\{disk="d1"\\} ${lastPass.finished / 1000}$`, 'm'), 'the metric shows that pass');
  t.same((JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { last_pass: unknown }).last_pass, lastPass, 'the state file is kept');
});
