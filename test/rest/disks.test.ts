// Disks over REST: POST /disks/{name}/stop|start, writes for
// a stopped disk going to this node's alien directory, a disk directory
// removed under a write load (NotReady, the node keeps serving, writes still
// succeed through the alien directory) and brought back automatically once
// the directory is there again.
import fs from 'node:fs';
import path from 'node:path';
import t, { Test } from 'tap';
import { Client, client, failure, RestNode, sleep, startRestNode, statusExt, waitFor } from './lib/node';

interface DiskJson {
  name: string;
  path: string;
  is_active: boolean;
}
interface Dir {
  name: string;
  children: Dir[];
}

// Node n1 with disks d1 and d2; the alien directory is on d1. vdisks 0 and 2
// live on d1, 1 and 3 on d2; keys go to vdisk key mod 4.
async function twoDisks(t: Test): Promise<{ node: RestNode; api: Client }> {
  const node = await startRestNode(t, {
    spec: { nodes: [{ name: 'n1', disks: ['d1', 'd2'] }], replicas: [['n1/d1'], ['n1/d2'], ['n1/d1'], ['n1/d2']] },
  });
  return { node, api: client(node.url) };
}

async function active(api: Client): Promise<Record<string, boolean>> {
  const list = await api.json<DiskJson[]>('/disks/list');
  return { d1: list[0].is_active, d2: list[1].is_active, alien: list[2].is_active };
}

/** "<owner>/<vdisk>" directories under the alien root. */
async function alienVdisks(api: Client): Promise<string[]> {
  const tree = await api.json<Dir>('/alien/dir');
  return tree.children.flatMap((o) => o.children.filter((v) => v.children.length > 0).map((v) => `${o.name}/${v.name}`)).sort();
}

t.test('stop and start by hand', async (t) => {
  const { node, api } = await twoDisks(t);
  t.same(await active(api), { d1: true, d2: true, alien: true });
  t.equal((await api.post('/data/1', 'before')).status, 201, 'key 1 is in vdisk 1 on d2');

  statusExt(t, await api.post('/disks/d2/stop'), 200, true, undefined, 'stop d2');
  t.same(await active(api), { d1: true, d2: false, alien: true });
  const list = await api.json<DiskJson[]>('/disks/list');
  t.same(list.map((d) => d.name), ['d1', 'd2', 'd1'], 'local disks first, the alien directory last');

  t.test('a vdisk on the stopped disk', async (t) => {
    statusExt(t, await api.post('/data/5', 'during'), 201, true, 'Created', 'writes still succeed');
    t.equal((await api.get('/data/5')).text, 'during', 'and read back');
    t.equal((await api.head('/data/5')).status, 200);
    t.same(await alienVdisks(api), ['n1/1'], 'the record went to alien/n1/1');
    failure(t, await api.get('/vdisks/1/records/count'), 503, /not available/, 'records/count');
    failure(t, await api.get('/vdisks/1/partitions'), 503, /not available/, 'partitions');
    failure(t, await api.post('/vdisks/1/remount'), 503, /not available/, 'remount');
    // What the stopped disk held cannot be read meanwhile.
    failure(t, await api.get('/data/1'), 503, /not available/, 'a record stored on the stopped disk');
  });

  t.test('the other disk serves as before', async (t) => {
    t.equal((await api.post('/data/2', 'two')).status, 201);
    t.equal((await api.get('/data/2')).text, 'two');
    t.equal(await api.json<number>('/vdisks/2/records/count'), 1);
    t.same(await alienVdisks(api), ['n1/1'], 'no alien copies for a ready disk');
  });

  t.test('a disk stopped by hand stays stopped', async (t) => {
    statusExt(t, await api.post('/disks/d2/stop'), 200, true, undefined, 'stopping again is fine');
    await sleep(2500); // longer than the first automatic retry of a failed disk
    t.same(await active(api), { d1: true, d2: false, alien: true });
  });

  t.test('start is 503 while the disk path is missing', async (t) => {
    const d2 = node.disk('d2');
    fs.renameSync(d2, `${d2}.away`);
    failure(t, await api.post('/disks/d2/start'), 503, /d2.*does not exist/);
    t.same(await active(api), { d1: true, d2: false, alien: true });
    fs.renameSync(`${d2}.away`, d2);
  });

  t.test('start brings it back with its data', async (t) => {
    statusExt(t, await api.post('/disks/d2/start'), 200, true, "all disk controllers for disk 'd2' successfully started");
    t.same(await active(api), { d1: true, d2: true, alien: true });
    t.equal((await api.get('/data/1')).text, 'before');
    // The alien copy is read where it is, or on d2 once handed over.
    t.equal((await api.get('/data/5')).text, 'during', 'the record written while stopped is found');
    const before = await api.json<number>('/vdisks/1/records/count');
    t.ok(before >= 1, 'the record written before the stop is on d2');
    t.equal((await api.post('/data/9', 'after')).status, 201);
    t.ok((await api.json<number>('/vdisks/1/records/count')) > before, 'new writes go to d2 again');
    t.equal((await api.get('/data/9')).text, 'after');
    statusExt(t, await api.post('/disks/d2/start'), 200, true, undefined, 'starting a ready disk is fine');
  });

  t.test('unknown disks are 404', async (t) => {
    failure(t, await api.post('/disks/nope/stop'), 404, "Disk Controller with name 'nope' not found");
    failure(t, await api.post('/disks/nope/start'), 404, "Disk Controller with name 'nope' not found");
    failure(t, await api.post('/disks/alien/stop'), 404, undefined, 'the alien directory goes by its disk name');
  });

  t.test('stopping the disk of the alien directory stops both', async (t) => {
    statusExt(t, await api.post('/disks/d1/stop'), 200, true);
    t.same(await active(api), { d1: false, d2: true, alien: false });
    t.equal((await api.post('/data/3', 'd2 still writes')).status, 201, 'vdisk 3 on d2 is served');
    const r = await api.post('/data/0', 'nowhere to go');
    t.not(r.status, 201, 'no replica and no alien directory: the write fails');
    t.equal(r.status, 503, 'a disk that is not ready is 503');
    failure(t, r, r.status, undefined, 'the failed write');
    statusExt(t, await api.post('/disks/d1/start'), 200, true);
    t.same(await active(api), { d1: true, d2: true, alien: true });
    t.equal((await api.post('/data/0', 'back')).status, 201);
  });

  t.test('the node is still up and stops cleanly', async (t) => {
    t.ok(node.alive());
    t.equal(await node.proc.stop(), 0);
  });
});

t.test('a disk directory removed under a write load', async (t) => {
  const { node, api } = await twoDisks(t);
  const d2 = node.disk('d2');
  let stop = false;
  let written = 0;
  let removed = false;
  const failures: string[] = [];
  // Acknowledged keys, and whether the write started after d2's directory was removed.
  const acked: Array<{ key: number; afterRemoval: boolean }> = [];
  // Four writers over all vdisks, each key written once.
  const writer = async (w: number) => {
    for (let i = 0; !stop; i++) {
      const key = 1000 + i * 4 * 4 + w * 4; // w-th writer's keys: all vdisks in turn
      for (const k of [key, key + 1, key + 2, key + 3]) {
        const afterRemoval = removed;
        const r = await api.post(`/data/${k}`, `load ${k}`).catch((e: Error) => ({ status: e.message }));
        if (r.status === 201) {
          written++;
          acked.push({ key: k, afterRemoval });
        }
        else failures.push(`${k}: ${r.status}`);
      }
    }
  };
  const load = Promise.all([0, 1, 2, 3].map(writer));
  await waitFor('some writes', async () => written > 40, 5000, 20);

  fs.rmSync(d2, { recursive: true, force: true });
  removed = true;
  await waitFor('d2 to go not ready', async () => !(await active(api)).d2, 5000);
  const atDetection = written;
  await waitFor('writes after the failure', async () => written > atDetection + 40, 5000, 20);
  stop = true;
  await load;

  t.test('the node keeps serving', async (t) => {
    t.ok(node.alive(), 'the process is alive');
    t.same(await active(api), { d1: true, d2: false, alien: true }, 'only d2 is out');
    t.same(failures, [], 'every write of the load succeeded');
    t.equal((await api.post('/data/2', 'd1 vdisk')).status, 201);
    t.equal((await api.get('/data/2')).text, 'd1 vdisk');
    t.ok((await api.json<number>('/vdisks/0/records/count')) > 0, 'vdisks on d1 answer');
    failure(t, await api.get('/vdisks/1/records/count'), 503, undefined, 'a vdisk on the removed disk');
  });

  t.test('acknowledged writes of the load are readable', async (t) => {
    // Records of d2 written before its directory was removed went with it.
    // A write to the removed files is never acknowledged (the engine checks
    // that its blob still exists), so every write started after the removal
    // must read back, before the disk was noticed gone as well as after.
    const check = acked.filter((a) => a.key % 2 === 0 || a.afterRemoval);
    let bad = 0;
    for (const { key } of check) if ((await api.get(`/data/${key}`)).text !== `load ${key}`) bad++;
    t.equal(bad, 0, `${check.length} records of d1 and of d2 after the removal read back`);
    let lost = 0;
    for (const { key } of acked.filter((a) => a.key % 2 === 1 && !a.afterRemoval)) if ((await api.head(`/data/${key}`)).status !== 200) lost++;
    t.comment(`${lost} acknowledged records of d2 went with its directory`);
  });

  t.test('writes for the removed disk go to the alien directory', async (t) => {
    for (const k of [5, 7, 9, 11]) {
      t.equal((await api.post(`/data/${k}`, `alien ${k}`)).status, 201, `POST ${k}`);
      t.equal((await api.get(`/data/${k}`)).text, `alien ${k}`, `GET ${k}`);
    }
    t.same(await alienVdisks(api), ['n1/1', 'n1/3']);
    t.ok(fs.readdirSync(path.join(node.disk('d1'), 'alien', 'n1', '1')).length > 0, 'on d1');
  });

  t.test('an empty directory in its place is refused, until accepted as a replacement', async (t) => {
    // What an unmounted disk looks like: its mount point, empty.
    fs.mkdirSync(path.join(d2, 'bob'), { recursive: true });
    await new Promise((r) => setTimeout(r, 3000));
    const list = await api.json<Array<{ name: string; is_active: boolean; refused?: { reason: string; message: string } }>>('/disks/list');
    t.equal(list[1].is_active, false, 'd2 stays out of service: it lacks the identity this node gave it');
    t.equal(list[1].refused?.reason, 'no_identity', '/disks/list says why');
    t.match(list[1].refused?.message, /has no oyster-disk\.json, but this node initialised it/);
    t.match((await api.get('/metrics')).text, /^oyster_disk_refused\{[^}]*disk="d2"[^}]*reason="no_identity"[^}]*\} 1$/m, 'and /metrics');
    t.same(fs.readdirSync(d2), ['bob'], 'nothing was written on it');
    t.same(fs.readdirSync(path.join(d2, 'bob')), []);
    const accepted = await api.post('/disks/d2/accept');
    t.equal(accepted.status, 200, `POST /disks/d2/accept: ${accepted.text}`);
    await waitFor('d2 to come back', async () => (await active(api)).d2, 12_000, 200);
    t.same(await active(api), { d1: true, d2: true, alien: true });
    t.ok(fs.existsSync(path.join(d2, 'oyster-disk.json')), 'with a new identity');
    // Records written meanwhile are read from the alien directory, or from d2
    // once handed over to it.
    for (const k of [5, 7, 9, 11]) t.equal((await api.get(`/data/${k}`)).text, `alien ${k}`, `record ${k} of the outage still read`);
    let bad = 0;
    for (const { key } of acked.filter((a) => a.key % 2 === 1 && a.afterRemoval)) if ((await api.get(`/data/${key}`)).text !== `load ${key}`) bad++;
    t.equal(bad, 0, 'records of the load written during the outage still read');
    const before = await api.json<number>('/vdisks/1/records/count');
    t.equal((await api.post('/data/13', 'home again')).status, 201);
    t.equal((await api.get('/data/13')).text, 'home again');
    t.ok((await api.json<number>('/vdisks/1/records/count')) > before, 'written to d2 again');
  });

  t.test('the node is still up and stops cleanly', async (t) => {
    t.ok(node.alive());
    t.equal(await node.proc.stop(), 0);
  });
});
