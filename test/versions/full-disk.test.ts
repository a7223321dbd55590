// A full disk is said as such: REST 507 with a StatusExt body, gRPC
// RESOURCE_EXHAUSTED — not "unavailable", not an internal error — and what
// was acknowledged before stays readable. One node whose only disk (the
// alien directory included) is a 4 MiB tmpfs; mounting one needs root, as CI
// has.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { BobClient, failure, keyBytes, Status } from '../helpers/grpc-client';
import { startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { mountTmpfs, Rest } from './lib';

const root = process.getuid?.() === 0;

t.test('a full disk: 507 and RESOURCE_EXHAUSTED, earlier writes still readable', { skip: root ? false : 'mounting a tmpfs needs root' }, async (t) => {
  const dir = tempDir(t);
  const files = await writeCluster(dir, { nodes: [{ name: 'n1', disks: ['d1'] }], vdisks: 1 });
  const disk = files.disks.n1.d1;
  mountTmpfs(t, disk, '4m');
  const node = await startNode(files, 'n1');
  const rest = new Rest();
  const grpc = new BobClient(files.addresses.n1);
  t.teardown(async () => {
    rest.close();
    grpc.close();
    if (node.child.exitCode === null && node.child.signalCode === null) await node.stop();
  });

  const value = Buffer.alloc(256 * 1024, 7);
  const stored: number[] = [];
  let refused: { status: number; body: Buffer } | null = null;
  for (let key = 0; key < 64 && refused === null; key++) {
    const r = await rest.request(node.url, 'POST', `/data/${key}`, value);
    if (r.status === 201) stored.push(key);
    else refused = r;
  }
  t.ok(stored.length > 0, `${stored.length} values of 256 KiB stored before the disk filled`);
  t.ok(refused, 'a write was refused once the disk was full');
  t.equal(refused!.status, 507, 'REST: 507 Insufficient Storage');
  const body = JSON.parse(refused!.body.toString()) as { ok: boolean; msg: string };
  t.equal(body.ok, false, 'with a StatusExt body');
  t.match(body.msg, /ENOSPC|No space|below min_free_space/i, 'naming the cause');

  const err = await failure(grpc.put(keyBytes(1000, 16), value, Math.floor(Date.now() / 1000)));
  t.equal(err.code, Status.RESOURCE_EXHAUSTED, `gRPC Put: RESOURCE_EXHAUSTED (${err.details})`);

  for (const key of stored) {
    const r = await rest.request(node.url, 'GET', `/data/${key}`);
    if (r.status !== 200 || !r.body.equals(value)) t.fail(`key ${key}: ${r.status}`);
  }
  t.pass(`all ${stored.length} acknowledged values read back`);
});

// min_free_space: a disk stops taking writes before it is full (507, touching
// nothing), says so once, shows it in /disks/list and /metrics, and takes
// writes again by itself once it has room — with every acknowledged value
// still there.
t.test('below min_free_space under 4 writers: 507 only, one line per change, writes resume when the disk grows', { skip: root ? false : 'mounting a tmpfs needs root' }, async (t) => {
  const dir = tempDir(t);
  const files = await writeCluster(dir, { nodes: [{ name: 'n1', disks: ['d1'] }], vdisks: 1 }, { extra: { min_free_space: '2 MiB' } });
  const disk = files.disks.n1.d1;
  mountTmpfs(t, disk, '8m');
  const node = await startNode(files, 'n1');
  const rest = new Rest();
  t.teardown(async () => {
    rest.close();
    if (node.child.exitCode === null && node.child.signalCode === null) await node.stop();
  });
  const linesBefore = node.output.length;

  const valueOf = (key: number) => Buffer.alloc(64 * 1024, key & 0xff);
  const acked = new Set<number>();
  const statuses = new Map<number, number>();
  let next = 0;
  let refusedInARow = 0;
  const writer = async () => {
    while (refusedInARow < 40) {
      const key = next++;
      const r = await rest.request(node.url, 'POST', `/data/${key}`, valueOf(key));
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.status === 201) {
        acked.add(key);
        refusedInARow = 0;
      } else refusedInARow++;
    }
  };
  await Promise.all([writer(), writer(), writer(), writer()]);
  t.same([...statuses.keys()].sort(), [201, 507], `only 201 and 507: ${JSON.stringify([...statuses])}`);
  t.ok(acked.size > 40, `${acked.size} values of 64 KiB acknowledged before the disk filled`);

  // The state, as an operator sees it.
  const disksList = async () => JSON.parse((await rest.request(node.url, 'GET', '/disks/list')).body.toString()) as Array<{ name: string; is_writable: boolean }>;
  let list = await disksList();
  for (let i = 0; i < 30 && list.some((d) => d.is_writable); i++) {
    await new Promise((r) => setTimeout(r, 100));
    list = await disksList();
  }
  t.same(list.map((d) => d.is_writable), [false, false], '/disks/list: d1 and the alien directory on it are not writable');
  const metrics = (await rest.request(node.url, 'GET', '/metrics')).body.toString();
  t.match(metrics, /^oyster_disk_writable\{[^}]*disk="d1"[^}]*alien="false"[^}]*\} 0$/m, 'oyster_disk_writable is 0');
  const refused = await rest.request(node.url, 'POST', '/data/999999', valueOf(1));
  t.equal(refused.status, 507, 'a write now is refused at once');
  t.match(JSON.parse(refused.body.toString()).msg, /d1: .* free, below min_free_space/, 'naming the disk and the threshold');
  const loud = node.output.slice(linesBefore).filter((l) => /"level":"(warn|error|fatal)"/.test(l));
  t.ok(loud.length <= 2, `at most one warning per disk and alien directory, not one per request (${loud.length}: ${loud.map((l) => JSON.parse(l).msg).join(' | ')})`);
  t.ok(loud.every((l) => /is full/.test(l)), 'and they say the disk is full');
  // Nothing written for the refused requests: no alien copies, no empty blobs.
  const alienRoot = path.join(disk, 'alien');
  t.same(fs.existsSync(alienRoot) ? fs.readdirSync(alienRoot) : [], [], 'no alien copies were made for the refused writes');
  const blobs = (fs.readdirSync(disk, { recursive: true }) as string[]).filter((f) => f.endsWith('.blob'));
  const empty = blobs.filter((f) => fs.statSync(path.join(disk, f)).size <= 64);
  t.same(empty, [], `no empty blob files among ${blobs.length}`);

  // More room: writes resume without a restart.
  execFileSync('mount', ['-o', 'remount,size=32m', disk]);
  let resumed = 0;
  for (let i = 0; i < 50 && resumed === 0; i++) {
    const r = await rest.request(node.url, 'POST', `/data/${next}`, valueOf(next));
    if (r.status === 201) {
      acked.add(next);
      resumed = next;
    } else await new Promise((res) => setTimeout(res, 100));
    next++;
  }
  t.ok(resumed > 0, 'writes are taken again once the disk has room');
  // The disk and the alien directory on it each look at the space every second.
  let again = await disksList();
  for (let i = 0; i < 30 && again.some((d) => !d.is_writable); i++) {
    await new Promise((r) => setTimeout(r, 100));
    again = await disksList();
  }
  t.same(again.map((d) => d.is_writable), [true, true], '/disks/list: writable again');
  t.ok(node.output.some((l) => l.includes('takes writes again')), 'logged once it takes writes again');

  let lost = 0;
  for (const key of acked) {
    const r = await rest.request(node.url, 'GET', `/data/${key}`);
    if (r.status !== 200 || !r.body.equals(valueOf(key))) lost++;
  }
  t.equal(lost, 0, `all ${acked.size} acknowledged values read back`);
});
