// A full disk is said as such: REST 507 with a StatusExt body, gRPC
// RESOURCE_EXHAUSTED — not "unavailable", not an internal error — and what
// was acknowledged before stays readable. One node whose only disk (the
// alien directory included) is a 4 MiB tmpfs; mounting one needs root, as CI
// has.
import { execFileSync } from 'node:child_process';
import t from 'tap';
import { BobClient, failure, keyBytes, Status } from '../helpers/grpc-client';
import { startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { Rest } from './lib';

const root = process.getuid?.() === 0;

t.test('a full disk: 507 and RESOURCE_EXHAUSTED, earlier writes still readable', { skip: root ? false : 'mounting a tmpfs needs root' }, async (t) => {
  const dir = tempDir(t);
  const files = await writeCluster(dir, { nodes: [{ name: 'n1', disks: ['d1'] }], vdisks: 1 });
  const disk = files.disks.n1.d1;
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', disk]);
  t.teardown(() => execFileSync('umount', ['-l', disk]));
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
  t.match(body.msg, /ENOSPC|No space/i, 'naming the cause');

  const err = await failure(grpc.put(keyBytes(1000, 16), value, Math.floor(Date.now() / 1000)));
  t.equal(err.code, Status.RESOURCE_EXHAUSTED, `gRPC Put: RESOURCE_EXHAUSTED (${err.details})`);

  for (const key of stored) {
    const r = await rest.request(node.url, 'GET', `/data/${key}`);
    if (r.status !== 200 || !r.body.equals(value)) t.fail(`key ${key}: ${r.status}`);
  }
  t.pass(`all ${stored.length} acknowledged values read back`);
});
