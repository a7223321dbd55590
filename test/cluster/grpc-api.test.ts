// The BobApi gRPC service as a bob client or peer sees it, through test/helpers/grpc-client.ts (loaded from bob.proto,
// independently of src/grpc):
//  * cluster A, key_size 8: n0, n1, n2 running and n3 never started;
//    v0 [n0,n1], v1 [n1,n2], v2 [n2,n0], v3 [n3,n0]; quorum 2. Copies held
//    for n3 stay aliens, so the force_node alien options can be observed.
//  * cluster B, key_size 16: m0 and m1, one replica per vdisk, quorum 1.
import path from 'node:path';
import t from 'tap';
import { BobClient, GetSource, Status, failure, keyBytes } from '../helpers/grpc-client';
import { TestCluster, keyOn, ls, waitFor } from './lib';

const A_NODES = ['n0', 'n1', 'n2', 'n3'];
const A_REPLICAS = [
  ['n0', 'n1'],
  ['n1', 'n2'],
  ['n2', 'n0'],
  ['n3', 'n0'],
];
const RUNNING = ['n0', 'n1', 'n2'];
const hex = (k: Buffer) => k.toString('hex').toUpperCase();
const k8 = (n: number | bigint) => keyBytes(n, 8);
const TS = 1_700_000_000;

t.test('key_size 8: data operations through every node', async (t) => {
  const c = await TestCluster.start(t, { nodes: A_NODES, replicas: A_REPLICAS, keySize: 8, opts: { quorum: 2 } }, RUNNING);
  await c.waitLinks();

  await t.test('Put, Get, Exist, Delete through any node', async (t) => {
    for (const [i, via] of RUNNING.entries()) {
      for (let v = 0; v < 4; v++) {
        const key = k8(keyOn(v, 4, 10 * i + 1));
        const data = Buffer.from(`via ${via} v${v}`);
        await c.grpc(via).put(key, data, TS + i);
        for (const n of RUNNING) {
          const b = await c.grpc(n).get(key);
          t.same(b, { data, timestamp: String(TS + i) }, `vdisk ${v} key written through ${via}, read through ${n} with meta`);
        }
      }
    }
    const present = k8(keyOn(1, 4, 1));
    const absent = k8(keyOn(1, 4, 999));
    const present2 = k8(keyOn(3, 4, 11)); // vdisk 3: n0 and an alien copy for n3
    for (const n of RUNNING) {
      t.same(await c.grpc(n).exist([present, absent, present2, absent, present]), [true, false, true, false, true], `Exist in order through ${n}`);
      t.same(await c.grpc(n).exist([]), [], `Exist of no keys through ${n}`);
    }
    // Deleted through one node, gone through all; bob's NOT_FOUND message.
    for (const [i, via] of RUNNING.entries()) {
      const key = k8(keyOn(i, 4, 10 * i + 1));
      await c.grpc(via).delete(key, TS + 100);
      for (const n of RUNNING) {
        const err = await failure(c.grpc(n).get(key));
        t.equal(err.code, Status.NOT_FOUND, `deleted through ${via}: NOT_FOUND through ${n}`);
        t.equal(err.details, `KeyNotFound ${hex(key)}`, 'message "KeyNotFound <HEX>"');
      }
      t.same(await c.grpc(via).exist([key]), [false], 'Exist false after the delete');
    }
    const never = k8(0xdeadbeefn);
    const err = await failure(c.grpc('n2').get(never));
    t.equal(err.details, `KeyNotFound ${hex(never)}`, `never written: KeyNotFound ${hex(never)}`);
  });

  await t.test('versions: the newest timestamp wins', async (t) => {
    const key = k8(keyOn(0, 4, 50));
    await c.grpc('n2').put(key, Buffer.from('ten'), TS + 10);
    await c.grpc('n2').put(key, Buffer.from('five'), TS + 5); // older: stored, but not the answer
    t.same(await c.grpc('n0').get(key), { data: Buffer.from('ten'), timestamp: String(TS + 10) }, 'an older put does not replace a newer value');
    await c.grpc('n1').delete(key, TS + 7);
    t.equal((await c.grpc('n2').get(key)).data.toString(), 'ten', 'a delete older than the value leaves it');
    await c.grpc('n1').delete(key, TS + 10);
    t.equal((await failure(c.grpc('n2').get(key))).code, Status.NOT_FOUND, 'a delete as new as the value removes it');
    await c.grpc('n1').put(key, Buffer.from('again'), TS + 10);
    t.equal((await c.grpc('n0').get(key)).data.toString(), 'again', 'put, delete, put within one second: the last put wins');
    const big = k8(keyOn(0, 4, 51));
    await c.grpc('n0').put(big, Buffer.from('far future'), Number.MAX_SAFE_INTEGER);
    t.same(await c.grpc('n1').get(big), { data: Buffer.from('far future'), timestamp: String(Number.MAX_SAFE_INTEGER) }, 'timestamp 2^53-1 round-trips');
    const empty = k8(keyOn(1, 4, 52));
    await c.grpc('n0').put(empty, Buffer.alloc(0), TS);
    t.same(await c.grpc('n2').get(empty), { data: Buffer.alloc(0), timestamp: String(TS) }, 'an empty value is a value');
  });

  await t.test('keys: exactly 8 bytes; any other length is refused, the empty key included', async (t) => {
    const key = k8(0x4321);
    await c.grpc('n0').put(key, Buffer.from('eight'), TS);
    t.equal((await c.grpc('n1').get(key)).data.toString(), 'eight', 'an 8-byte key');
    t.equal((await c.get('n1', 0x4321))?.toString(), 'eight', 'the same key through REST (decimal, little-endian)');
    await c.put('n2', 1000, 'rest value');
    t.equal((await c.grpc('n0').get(k8(1000))).data.toString(), 'rest value', 'REST key 1000 is gRPC key e8 03 00…');
    for (const [name, bad] of [
      ['empty', Buffer.alloc(0)],
      ['2-byte', Buffer.from([0x21, 0x43])],
      ['9-byte', Buffer.concat([key, Buffer.from([0])])],
      ['16-byte', Buffer.concat([key, Buffer.alloc(8)])],
    ] as const) {
      for (const [what, p] of [
        ['Put', c.grpc('n0').put(bad, Buffer.from('x'), TS)],
        ['Get', c.grpc('n0').get(bad)],
        ['Exist', c.grpc('n0').exist([key, bad])],
        ['Delete', c.grpc('n0').delete(bad, TS)],
        ['force_node Put', c.grpc('n0').put(bad, Buffer.from('x'), TS, { force_node: true })],
        ['force_node Get', c.grpc('n0').get(bad, { force_node: true })],
        ['force_node Delete', c.grpc('n0').delete(bad, TS, { force_node: true })],
      ] as const) {
        const err = await failure(p);
        t.equal(err.code, Status.INVALID_ARGUMENT, `${what} with a ${name} key: INVALID_ARGUMENT (${err.details})`);
      }
    }
    await failure(c.grpc('n1').get(k8(0))).then((err) => t.equal(err.code, Status.NOT_FOUND, 'the all-zero key was never written: the empty key did not touch it'));
  });

  await t.test('force_node: GetSource NORMAL, ALIEN, ALL', async (t) => {
    const key = k8(keyOn(0, 4, 60)); // v0: n0, n1
    await c.grpc('n2').put(key, Buffer.from('normal'), TS);
    for (const n of ['n0', 'n1']) {
      for (const source of [GetSource.NORMAL, GetSource.ALL, undefined]) {
        const b = await c.grpc(n).get(key, { force_node: true, ...(source === undefined ? {} : { source }) });
        t.same(b, { data: Buffer.from('normal'), timestamp: String(TS) }, `replica ${n}, source ${source ?? '(default ALL)'}`);
      }
      const err = await failure(c.grpc(n).get(key, { force_node: true, source: GetSource.ALIEN }));
      t.equal(err.code, Status.NOT_FOUND, `replica ${n}, ALIEN: NOT_FOUND`);
      t.equal(err.details, `KeyNotFound ${hex(key)}`, 'with "KeyNotFound <HEX>"');
    }
    const normal = await failure(c.grpc('n2').get(key, { force_node: true, source: GetSource.NORMAL }));
    t.equal(normal.code, Status.FAILED_PRECONDITION, `n2 holds no replica of vdisk 0: NORMAL is FAILED_PRECONDITION (${normal.details})`);
    t.equal((await failure(c.grpc('n2').get(key, { force_node: true, source: GetSource.ALL }))).code, Status.NOT_FOUND, 'n2, ALL: NOT_FOUND');
    t.same(await c.grpc('n2').exist([key], { force_node: true, source: GetSource.ALL }), [false], 'n2, force_node Exist ALL: false');
    t.same(await c.grpc('n2').exist([key, key], { force_node: true, source: GetSource.NORMAL }), [false, false], 'n2, force_node Exist NORMAL without a replica: false (bob: Exist never fails)');
    t.same(await c.grpc('n0').exist([key], { force_node: true, source: GetSource.NORMAL }), [true], 'n0, force_node Exist NORMAL: true');
    t.same(await c.grpc('n0').exist([key], { force_node: true, source: GetSource.ALIEN }), [false], 'n0, force_node Exist ALIEN: false');
  });

  await t.test('force_node Put with remote_nodes stores an alien copy', async (t) => {
    const key = k8(keyOn(3, 4, 70)); // v3: n3 (down) and n0
    await c.grpc('n1').put(key, Buffer.from('alien for n3'), TS, { force_node: true, remote_nodes: ['n3'] });
    t.ok((await c.alienDir('n1')).some((p) => /^n3\/3\/\d+_/.test(p)), 'GET /alien/dir on n1 shows n3/3/<partition>');
    t.same(await c.grpc('n1').get(key, { force_node: true, source: GetSource.ALIEN }), { data: Buffer.from('alien for n3'), timestamp: String(TS) }, 'n1, ALIEN: the copy');
    t.equal((await c.grpc('n1').get(key, { force_node: true, source: GetSource.ALL })).data.toString(), 'alien for n3', 'n1, ALL: the copy');
    t.equal((await failure(c.grpc('n1').get(key, { force_node: true, source: GetSource.NORMAL }))).code, Status.FAILED_PRECONDITION, 'n1, NORMAL: no replica');
    t.equal((await failure(c.grpc('n0').get(key, { force_node: true }))).code, Status.NOT_FOUND, 'not on the replica n0');
    t.same(await c.grpc('n1').exist([key], { force_node: true, source: GetSource.ALIEN }), [true], 'n1, Exist ALIEN: true');
    t.equal((await c.grpc('n2').get(key)).data.toString(), 'alien for n3', 'a coordinated Get through n2 finds the alien copy');
    t.same(await c.grpc('n2').exist([key]), [true], 'a coordinated Exist through n2 too');

    const err = await failure(c.grpc('n1').put(key, Buffer.from('x'), TS, { force_node: true, remote_nodes: ['nobody'] }));
    t.equal(err.code, Status.INVALID_ARGUMENT, `remote_nodes naming a node outside the cluster: INVALID_ARGUMENT (${err.details})`);
    // Coordinated requests ignore remote_nodes.
    const coordinated = k8(keyOn(1, 4, 71)); // v1: n1, n2
    await c.grpc('n0').put(coordinated, Buffer.from('coordinated'), TS, { force_node: false, remote_nodes: ['n3'] });
    t.equal((await c.grpc('n1').get(coordinated, { force_node: true, source: GetSource.NORMAL })).data.toString(), 'coordinated', 'force_node false: remote_nodes ignored');
    t.notOk((await c.alienDir('n0')).some((p) => p.startsWith('n3/1/')), 'and no alien copy made for it');

    // A copy held for a reachable owner is handed over to it.
    const handed = k8(keyOn(1, 4, 72)); // v1: n1, n2
    await c.grpc('n0').put(handed, Buffer.from('hand me over'), TS, { force_node: true, remote_nodes: ['n2'] });
    await waitFor('the copy held for n2 to reach it', async () => (await c.alienDir('n0')).length === 0 || null, 10_000).catch(() => undefined);
    const got = await c.grpc('n2').get(handed, { force_node: true, source: GetSource.NORMAL });
    t.equal(got.data.toString(), 'hand me over', 'the alien copy held for a live owner reached its replica');
    t.notOk((await c.alienDir('n0')).some((p) => p.startsWith('n2/')), 'and left the alien directory');
  });

  await t.test('force_node Delete: replicas, is_alien, force_alien_nodes', async (t) => {
    // Local replicas.
    const key = k8(keyOn(0, 4, 80)); // v0: n0, n1
    await c.grpc('n2').put(key, Buffer.from('v'), TS);
    await c.grpc('n0').delete(key, TS + 1, { force_node: true });
    t.equal((await failure(c.grpc('n0').get(key, { force_node: true, source: GetSource.NORMAL }))).code, Status.NOT_FOUND, 'tombstone on n0');
    t.equal((await c.grpc('n1').get(key, { force_node: true, source: GetSource.NORMAL })).data.toString(), 'v', 'n1 untouched');
    const err = await failure(c.grpc('n2').delete(key, TS + 1, { force_node: true }));
    t.equal(err.code, Status.FAILED_PRECONDITION, `force_node Delete on a node without a replica: FAILED_PRECONDITION (${err.details})`);

    // is_alien without force: only where an alien copy exists.
    const alien = k8(keyOn(3, 4, 81)); // v3: n3 (down) and n0
    await c.grpc('n2').put(alien, Buffer.from('alien'), TS, { force_node: true, remote_nodes: ['n3'] });
    await c.grpc('n1').delete(alien, TS + 1, { force_node: true, is_alien: true });
    t.same(ls(path.join(c.alienRoot('n1'), 'n0')), [], 'a non-forced alien delete creates no alien directory (n1 holds nothing for n0)');
    t.equal((await c.grpc('n2').get(alien, { force_node: true, source: GetSource.ALIEN })).data.toString(), 'alien', 'n2 copy untouched by n1');
    await c.grpc('n2').delete(alien, TS + 1, { force_node: true, is_alien: true });
    t.equal((await failure(c.grpc('n2').get(alien, { force_node: true, source: GetSource.ALIEN }))).code, Status.NOT_FOUND, 'n2 copy deleted by is_alien');
    t.equal(
      (await failure(c.grpc('n0').get(alien, { force_node: true, source: GetSource.NORMAL }))).code,
      Status.NOT_FOUND,
      'is_alien does not touch the normal replica',
    );

    // force_alien_nodes: a tombstone even where no copy exists.
    const forced = k8(keyOn(3, 4, 82));
    const before = c.alienPartitions('n1', 'n3', 3).length;
    await c.grpc('n1').delete(forced, TS + 5, { force_node: true, is_alien: true, force_alien_nodes: ['n3'] });
    t.ok(c.alienPartitions('n1', 'n3', 3).length > before || before > 0, 'n1 holds alien/n3/3 with the forced tombstone');
    await c.grpc('n2').put(forced, Buffer.from('older'), TS, { force_node: true, remote_nodes: ['n3'] });
    await c.grpc('n0').put(forced, Buffer.from('older'), TS, { force_node: true });
    t.equal((await failure(c.grpc('n1').get(forced, { force_node: true, source: GetSource.ALIEN }))).code, Status.NOT_FOUND, 'n1, ALIEN: NOT_FOUND');
    const e2 = await failure(c.grpc('n1').get(forced));
    t.equal(e2.code, Status.NOT_FOUND, 'the forced alien tombstone on n1 hides the older copies in a Get coordinated by n1');
  });
});

t.test('key_size 16', async (t) => {
  const c = await TestCluster.start(t, {
    nodes: ['m0', 'm1'],
    replicas: [['m0'], ['m1']],
    keySize: 16,
    opts: { quorum: 1 },
  });
  await c.waitLinks();
  const k16 = (n: number | bigint) => keyBytes(n, 16);
  for (const via of ['m0', 'm1']) {
    for (let v = 0; v < 2; v++) {
      const key = k16((BigInt(v + 2 * (via === 'm0' ? 10 : 20)) << 64n) + BigInt(v)); // bytes 8..15 non-zero
      t.equal(Number(key.readBigUInt64LE()) % 2, v, 'vdisk by the low bytes');
      await c.grpc(via).put(key, Buffer.from(`16-byte ${via} ${v}`), TS);
      for (const n of ['m0', 'm1']) {
        t.same(await c.grpc(n).get(key), { data: Buffer.from(`16-byte ${via} ${v}`), timestamp: String(TS) }, `vdisk ${v} through ${via}, read through ${n}`);
      }
      t.equal((await c.get(via, `0x${key.toString('hex')}`))?.toString(), `16-byte ${via} ${v}`, 'same key through REST as a 0x byte string');
      await c.grpc(via).delete(key, TS + 1);
      t.equal((await failure(c.grpc(via === 'm0' ? 'm1' : 'm0').get(key))).details, `KeyNotFound ${hex(key)}`, 'deleted: KeyNotFound with 32 hex digits');
    }
  }
  const eight = k8(7);
  await c.grpc('m0').put(eight, Buffer.from('eight'), TS);
  t.equal((await c.grpc('m1').get(k16(7))).data.toString(), 'eight', 'an 8-byte key (as bob clients send) is the zero-padded 16-byte key');
  for (const size of [0, 4, 12, 17, 32]) {
    const err = await failure(c.grpc('m1').get(Buffer.alloc(size)));
    t.equal(err.code, Status.INVALID_ARGUMENT, `a ${size}-byte key: INVALID_ARGUMENT (${err.details})`);
  }
  t.same(await c.grpc('m0').exist([k16(7), eight, k16(8)]), [true, true, false], 'Exist in order');
  const m0 = new BobClient(c.address('m0'));
  t.teardown(() => m0.close());
  await m0.ping();
  t.pass('Ping');

  // Answers up to 1 MiB are written into one buffer the node keeps for the
  // next (src/grpc/blob-codec.ts): many at once must each keep their own bytes.
  const sizes = [0, 1, 100, 65_537, 1_048_575, 1_048_576, 1_048_577, 3 << 20];
  const values = sizes.map((n, i) => Buffer.from(Array.from({ length: n }, (_, j) => (j * 31 + i * 7) & 0xff)));
  const keys = sizes.map((_, i) => k16(1000 + i));
  for (const [i, v] of values.entries()) await c.grpc('m0').put(keys[i], v, TS + i);
  const answers = await Promise.allSettled(
    Array.from({ length: 4 }, () => values.map((_, i) => c.grpc(i % 2 ? 'm0' : 'm1').get(keys[i]))).flat(),
  );
  const wrong = answers.filter((a, j) => a.status === 'rejected' || !a.value.data.equals(values[j % values.length]) || a.value.timestamp !== String(TS + (j % values.length)));
  t.equal(wrong.length, 0, `${answers.length} Gets at once of values of ${sizes.join(', ')} bytes: each answer its own value and timestamp`);
});
