// Exist and HEAD answer what the replicas hold, and refuse when no replica of
// a vdisk could be asked — they never report "absent" for a key nobody was
// asked about. A 4-node cluster (8 vdisks × 2 replicas) holds 100 000 keys,
// written into each replica's directory by the engine before the nodes start
// (through the API that would take a minute on two cores); Exist of all of
// them through any node finds every one; a client built from bob's proto with
// grpc's default limits asks one node for 20 000 of its keys with force_node;
// then both replicas of vdisk 0 stop.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { Engine } from '../../src/store/engine';
import { partitionStart } from '../../src/store/partition';
import { BobClient, failure, GetSource, keyBytes, Status } from '../helpers/grpc-client';
import { TestCluster, ring } from '../cluster/lib';

const NODES = ['n0', 'n1', 'n2', 'n3'];
const VDISKS = 8;
const KEYS = 100_000;

t.test('Exist of 100 000 keys through any node; UNAVAILABLE when no replica can answer', async (t) => {
  const replicas = ring(NODES, VDISKS, 2);
  const c = await TestCluster.start(t, { nodes: NODES, replicas, keySize: 8, opts: { quorum: 2 } }, []);
  const key = (i: number) => keyBytes(i, 8);

  // Each replica's partition, as a node would have written it (any "<start>_<suffix>"
  // directory is a partition; its blobs are named "bob_<suffix>").
  const TS = 1_700_000_000;
  const started = Date.now();
  for (let v = 0; v < VDISKS; v++) {
    for (const n of replicas[v]) {
      const dir = path.join(c.vdiskDir(n, v), `${partitionStart(TS, 86_400)}_seeded`);
      fs.mkdirSync(path.dirname(dir), { recursive: true });
      const e = await Engine.open(dir, { keySize: 8, blobFilePrefix: 'bob_seeded' });
      const writes: Array<Promise<void>> = [];
      for (let i = v; i < KEYS; i += VDISKS) writes.push(e.put(key(i), { timestamp: TS, tick: TS * 1e6 + i, node: 1 }, Buffer.from([i & 0xff])));
      await Promise.all(writes);
      await e.close();
    }
  }
  t.comment(`${KEYS} keys written into both replicas' directories in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  await Promise.all(NODES.map((n) => c.startNode(n)));
  await c.waitLinks();

  const all = Array.from({ length: KEYS }, (_, i) => key(i));
  const unwritten = Array.from({ length: 1000 }, (_, i) => key(KEYS + i));
  for (const n of NODES) {
    const exist = await c.grpc(n).exist([...all, ...unwritten]);
    const missing = exist.slice(0, KEYS).filter((e) => !e).length;
    t.equal(missing, 0, `through ${n}: all ${KEYS} written keys exist`);
    t.equal(exist.slice(KEYS).filter(Boolean).length, 0, `through ${n}: none of 1000 unwritten keys does`);
  }

  // A client with grpc's default limits, as bob's clients are built: force_node over 20 000 keys one node holds.
  const held = all.filter((_, i) => replicas[i % VDISKS].includes('n2')).slice(0, 20_000);
  const plain = new BobClient(c.address('n2'), 30_000, 'default');
  try {
    const exist = await plain.exist(held, { force_node: true, source: GetSource.NORMAL });
    t.equal(exist.length, held.length, 'an answer for every key');
    t.equal(exist.filter(Boolean).length, held.length, 'force_node Exist of 20 000 present keys: all present');
  } finally {
    plain.close();
  }

  // Both replicas of vdisk 0 (n0, n1) go down.
  await c.stop('n0');
  await c.stop('n1');
  await c.waitLinks();
  const onV0 = all.filter((_, i) => i % VDISKS === 0).slice(0, 100);
  const elsewhere = all.filter((_, i) => replicas[i % VDISKS].some((n) => n === 'n2' || n === 'n3') && i % VDISKS !== 0).slice(0, 100);
  for (const n of ['n2', 'n3']) {
    const err = await failure(c.grpc(n).exist([...elsewhere, ...onV0]));
    t.equal(err.code, Status.UNAVAILABLE, `Exist through ${n} with keys of vdisk 0: UNAVAILABLE (${err.details})`);
    const ok = await c.grpc(n).exist(elsewhere);
    t.ok(ok.every(Boolean), `Exist through ${n} of keys whose vdisk has a replica up: all present`);
    const get = await failure(c.grpc(n).get(onV0[0]));
    t.equal(get.code, Status.UNAVAILABLE, `Get through ${n} of a key of vdisk 0: UNAVAILABLE`);
    const head = await c.rest(n, 'HEAD', `/data/0x${onV0[0].toString('hex')}`);
    t.equal(head.status, 503, `HEAD through ${n}: 503`);
    const rest = await c.rest(n, 'GET', `/data/0x${onV0[0].toString('hex')}`);
    t.equal(rest.status, 503, `GET through ${n}: 503`);
    t.match(rest.json(), { ok: false, msg: /vdisk 0/ }, 'with a StatusExt body naming the vdisk');
  }
  t.ok(
    c.proc('n2').output.some((l) => l.includes('no replica of the vdisk could answer') && l.includes('"level":"warn"')),
    'the refusal is logged at warn',
  );
  const metrics = await c.rest('n2', 'GET', '/metrics');
  t.match(metrics.text, /oyster_unanswered_reads_total\{[^}]*operation="exist"[^}]*\} [1-9]/, 'and counted');
});
