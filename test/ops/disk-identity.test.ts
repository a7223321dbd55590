// Disk identity: a node takes only its own disks. A disk holding another
// node's identity is refused and left untouched; a disk with data but no
// identity (bob's, or from before identities) is adopted; the node's record
// of its disks lives in state_dir.
import fs from 'node:fs';
import path from 'node:path';
import t, { Test } from 'tap';
import { startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { Rest } from '../versions/lib';

/** A one-node, one-disk cluster's files (the node not started) and a REST client. */
async function oneDisk(t: Test) {
  const dir = tempDir(t);
  const files = await writeCluster(dir, { nodes: [{ name: 'n1', disks: ['d1'] }], vdisks: 1 });
  const rest = new Rest();
  t.teardown(() => rest.close());
  return { dir, files, disk: files.disks.n1.d1, rest };
}

interface DiskJson {
  name: string;
  is_active: boolean;
  refused?: { reason: string; message: string };
}

t.test("a disk holding another node's identity is refused and left untouched", async (t) => {
  const dir = tempDir(t);
  const files = await writeCluster(dir, { nodes: [{ name: 'n1', disks: ['d1'] }], vdisks: 1 });
  const disk = files.disks.n1.d1;
  const foreign = { format: 1, node: 'n7', disk: 'd3', id: 'f00d', created: '2026-01-01T00:00:00.000Z' };
  fs.writeFileSync(path.join(disk, 'oyster-disk.json'), JSON.stringify(foreign));
  // The other node's data.
  fs.mkdirSync(path.join(disk, 'bob', '0'), { recursive: true });
  fs.writeFileSync(path.join(disk, 'bob', '0', 'theirs'), 'n7');
  const node = await startNode(files, 'n1');
  const rest = new Rest();
  t.teardown(async () => {
    rest.close();
    await node.stop();
  });
  const list = JSON.parse((await rest.request(node.url, 'GET', '/disks/list')).body.toString()) as DiskJson[];
  t.equal(list[0].is_active, false, 'd1 is out of service');
  t.equal(list[0].refused?.reason, 'foreign_identity');
  t.match(list[0].refused?.message, /holds disk d3 of node n7/, 'naming whose disk it is');
  t.same(fs.readdirSync(disk, { recursive: true }).sort(), ['bob', 'bob/0', 'bob/0/theirs', 'oyster-disk.json'], 'nothing was written on it');
  t.same(JSON.parse(fs.readFileSync(path.join(disk, 'oyster-disk.json'), 'utf8')), foreign, 'its identity is unchanged');
  const r = await rest.request(node.url, 'GET', '/data/1');
  t.equal(r.status, 503, 'a read of its vdisk: 503, not 404');
  t.equal((await rest.request(node.url, 'POST', '/data/1', Buffer.from('x'))).status, 503, 'a write: 503');
  const accept = await rest.request(node.url, 'POST', '/disks/d1/accept');
  t.equal(accept.status, 409, "accepting it is refused: it holds another disk's identity and data");
  t.match(accept.body.toString(), /it is not taken over; wipe it first/);
  const errors = node.output.filter((l) => l.includes('"level":"error"') && l.includes('holds disk d3 of node n7'));
  t.equal(errors.length, 2, 'one error line for the disk and one for its alien directory');
});

t.test('a disk with data and no identity is adopted; the identity and the record survive restarts', async (t) => {
  const { dir, files, disk, rest } = await oneDisk(t);
  let node = await startNode(files, 'n1');
  const first = JSON.parse(fs.readFileSync(path.join(disk, 'oyster-disk.json'), 'utf8')) as { node: string; disk: string; id: string };
  t.same([first.node, first.disk], ['n1', 'd1'], 'a new disk gets its identity at initialisation');
  const state = JSON.parse(fs.readFileSync(path.join(dir, 'n1', 'oyster-node.json'), 'utf8')) as { disks: Record<string, string> };
  t.same(state.disks, { d1: first.id }, 'and the node records it in state_dir');
  t.equal((await rest.request(node.url, 'POST', '/data/5', Buffer.from('kept'))).status, 201);
  await node.stop();

  // As bob (or an Oyster before identities) left it: data, no identity, no record.
  fs.rmSync(path.join(disk, 'oyster-disk.json'));
  fs.rmSync(path.join(dir, 'n1', 'oyster-node.json'));
  node = await startNode(files, 'n1');
  t.teardown(() => node.stop());
  t.equal((await rest.request(node.url, 'GET', '/data/5')).body.toString(), 'kept', 'the data is served');
  const adopted = JSON.parse(fs.readFileSync(path.join(disk, 'oyster-disk.json'), 'utf8')) as { id: string };
  t.not(adopted.id, first.id, 'with a new identity');
  t.ok(node.output.some((l) => l.includes('data without an identity')), 'and a line saying so');
});

t.test('restarted with --init-folders on the empty mount point of its disk, a node refuses it and says 503, never 404', async (t) => {
  const { files, disk, rest } = await oneDisk(t);
  let node = await startNode(files, 'n1');
  t.equal((await rest.request(node.url, 'POST', '/data/8', Buffer.from('on the real disk'))).status, 201);
  await node.stop();
  // The disk is not mounted: its mount point is an empty directory.
  const real = `${disk}.real`;
  fs.renameSync(disk, real);
  fs.mkdirSync(disk);
  node = await startNode(files, 'n1'); // with --init-folders, as the packaged unit
  t.teardown(() => node.stop());
  t.equal((await rest.request(node.url, 'GET', '/data/8')).status, 503, 'its key: 503, not 404');
  t.equal((await rest.request(node.url, 'POST', '/data/9', Buffer.from('x'))).status, 503, 'a write: 503, nothing lands on the root file system');
  t.same(fs.readdirSync(disk), [], 'the mount point stays empty');
  // Mounted again: the node takes it back by itself (the retry finds its identity).
  fs.rmdirSync(disk);
  fs.renameSync(real, disk);
  let status = 0;
  for (let i = 0; i < 60 && status !== 200; i++) {
    await new Promise((r) => setTimeout(r, 250));
    status = (await rest.request(node.url, 'GET', '/data/8')).status;
  }
  t.equal(status, 200, 'once mounted, its key is served again without a restart');
});
