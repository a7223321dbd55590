// Compaction and replicas (issue 16): two nodes each hold a replica of the
// one vdisk. Every key is overwritten ten times, then half of them are
// deleted through n1 while n2 is down (SIGKILL), and the alien copies n1
// kept for n2 are thrown away, so that only anti-entropy can tell n2 of the
// deletes. n1 compacts before n2 returns: with the default tombstone_grace
// its tombstones stay, its disk holds at most 1.3x the live bytes, and once
// n2 is back and has compacted too, each node's own replica holds every live
// key's newest value and none of the deleted ones — also after both restart.
// The second case shows why the grace exists: without it n1 forgets the
// deletes before n2 has learnt them, and anti-entropy brings the values back.
// Every key's expected state comes from a model of the acknowledged
// operations (./lib.ts KeyModel). OYSTER_TEST_SEED replays a run.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import YAML from 'yaml';
import { GetSource, keyBytes, Status } from '../helpers/grpc-client';
import { TestCluster, waitFor } from '../cluster/lib';
import { KeyModel, Rest, Rng, seedFromEnv, stored } from './lib';

const NODES = ['n1', 'n2'];
const VALUE = 4096;
const KEY_SIZE = 8;
// A record's header (docs/FORMAT.md §4: 44 + K bytes); a tombstone is nothing else.
const TOMBSTONE_BYTES = 44 + KEY_SIZE;
const SEED = seedFromEnv();

/** Value `seq` of key: its first bytes say which, so a read tells what it got. */
function valueOf(key: number, seq: number): Buffer {
  const b = Buffer.alloc(VALUE, (key * 31 + seq) & 0xff);
  b.write(`${key}:${seq}:`, 0, 'latin1');
  return b;
}

function describe(state: Buffer | null | string): string {
  return state === null ? 'absent' : typeof state === 'string' ? state : JSON.stringify(state.toString('latin1', 0, 12));
}

/**
 * Nodes n1 and n2, vdisk 0 with a replica on each, quorum 1, blobs of 200
 * records, anti-entropy every 2 s; compaction only when asked (and by the
 * pass a node makes soon after it starts). `n1Compaction` is merged into
 * n1's compaction section only.
 */
async function cluster(t: Test, n1Compaction: Record<string, unknown> = {}): Promise<TestCluster> {
  const c = await TestCluster.start(
    t,
    {
      nodes: NODES,
      replicas: [NODES],
      keySize: KEY_SIZE,
      opts: {
        quorum: 1,
        maxDataInBlob: 200,
        checkInterval: '500ms',
        extra: { anti_entropy: { interval: '2s' }, compaction: { interval: '1h', rate: '1 GiB' } },
      },
    },
    [],
  );
  const file = c.files.nodeYaml.n1;
  const doc = YAML.parse(fs.readFileSync(file, 'utf8')) as { compaction: Record<string, unknown> };
  doc.compaction = { ...doc.compaction, ...n1Compaction };
  fs.writeFileSync(file, YAML.stringify(doc));
  await Promise.all(NODES.map((n) => c.startNode(n)));
  await c.waitLinks();
  return c;
}

/** Runs ops through `via`, those of one key one after the other in the given order (so that acknowledgements follow versions). */
async function writeAll(rest: Rest, c: TestCluster, via: string, model: KeyModel[], ops: Array<{ key: number; value: Buffer | null }>): Promise<number> {
  const byKey = new Map<number, Array<Buffer | null>>();
  for (const { key, value } of ops) byKey.set(key, [...(byKey.get(key) ?? []), value]);
  const keys = [...byKey.keys()];
  let next = 0;
  let failed = 0;
  const worker = async () => {
    while (next < keys.length) {
      const key = keys[next++];
      for (const value of byKey.get(key)!) {
        const r = await rest.request(c.url(via), value ? 'POST' : 'DELETE', `/data/${key}`, value ?? undefined);
        if (r.status === (value ? 201 : 200)) model[key].ack(value);
        else {
          model[key].fail(value);
          failed++;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return failed;
}

/** What the node's own replica holds (force_node, normal source: no other replica, no alien copy): the value, null when absent. */
async function local(c: TestCluster, node: string, key: number): Promise<Buffer | null | string> {
  try {
    return (await c.grpc(node).get(keyBytes(key, KEY_SIZE), { force_node: true, source: GetSource.NORMAL })).data;
  } catch (err) {
    const code = (err as { code?: number }).code;
    return code === Status.NOT_FOUND ? null : `error ${code}`;
  }
}

/** The keys whose state in the node's own replica the model does not allow. */
async function wrongOn(c: TestCluster, node: string, model: KeyModel[]): Promise<string[]> {
  const wrong: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < model.length) {
      const key = next++;
      const state = await local(c, node, key);
      if (typeof state === 'string' || !model[key].allows(state)) wrong.push(`${node} key ${key}: ${describe(state)}, ${model[key].describe()}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return wrong;
}

async function checkEach(t: Test, c: TestCluster, model: KeyModel[], what: string): Promise<void> {
  for (const n of NODES) {
    const wrong = await wrongOn(c, n, model);
    t.same(wrong.slice(0, 5), [], `${what}: ${n}'s own replica holds every live key's newest value and no deleted key (${wrong.length} wrong of ${model.length})`);
  }
}

/**
 * Compacts vdisk 0 on a node (waits until done). Returns what its disk's
 * compactor did since the node started: blobs compacted and bytes reclaimed
 * (the pass a node makes on its own soon after it starts included).
 */
async function compact(t: Test, c: TestCluster, node: string): Promise<{ blobsCompacted: number; bytesReclaimed: number }> {
  const r = await c.rest(node, 'POST', '/vdisks/0/compact');
  t.equal(r.status, 200, `POST /vdisks/0/compact on ${node}: ${r.text.slice(0, 200)}`);
  return r.json<{ disks: Array<{ blobsCompacted: number; bytesReclaimed: number }> }>().disks[0];
}

/** Tombstones the node's compactions dropped since it started, from its log. */
function tombstonesDropped(c: TestCluster, node: string): number {
  let n = 0;
  for (const line of c.proc(node).output) {
    if (line.includes('compacted blob')) n += (JSON.parse(line) as { tombstones_dropped?: number }).tombstones_dropped ?? 0;
  }
  return n;
}

/** Throws away the alien copies n1 keeps for n2: only anti-entropy can bring n2 what it missed. */
async function dropAliens(t: Test, c: TestCluster): Promise<void> {
  t.equal((await c.rest('n1', 'POST', '/alien/detach')).status, 200, 'alien partitions detached on n1');
  t.ok(fs.existsSync(path.join(c.alienRoot('n1'), 'n2')), 'n1 kept alien copies for n2');
  fs.rmSync(path.join(c.alienRoot('n1'), 'n2'), { recursive: true, force: true });
}

t.test('overwritten ten times, half deleted while a replica is down: compaction keeps the tombstones, reclaims the rest, and nothing deleted returns', async (t) => {
  t.comment(`seed ${SEED}`);
  const rng = new Rng(SEED);
  const started = Date.now();
  const c = await cluster(t);
  const rest = new Rest();
  t.teardown(() => rest.close());
  const KEYS = 400;
  const model = Array.from({ length: KEYS }, () => new KeyModel());

  // Ten versions of every key, through one coordinator and the other.
  let failed = 0;
  for (let round = 1; round <= 10; round++) {
    failed += await writeAll(rest, c, NODES[round % 2], model, Array.from({ length: KEYS }, (_, key) => ({ key, value: valueOf(key, round) })));
  }
  t.equal(failed, 0, `${KEYS} keys written 10 times with both nodes up`);
  // Quorum 1 acknowledges before the other replica has written: wait for it, so that the kill loses nothing in flight.
  await waitFor('n2 to hold every write', async () => (await wrongOn(c, 'n2', model)).length === 0, 20_000, 200);

  await c.kill('n2');
  await c.waitLinks();
  // Half the keys deleted, a quarter of the live ones written once more, through n1 alone.
  const order = Array.from({ length: KEYS }, (_, k) => k);
  for (let i = order.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  const deleted = new Set(order.slice(0, KEYS / 2));
  const live = order.slice(KEYS / 2);
  failed = await writeAll(rest, c, 'n1', model, [...deleted].map((key) => ({ key, value: null })));
  failed += await writeAll(rest, c, 'n1', model, live.slice(0, KEYS / 8).map((key) => ({ key, value: valueOf(key, 11) })));
  t.equal(failed, 0, `${deleted.size} deletes and ${KEYS / 8} writes acknowledged at quorum 1 while n2 was down`);
  await dropAliens(t, c);

  // What n1 must keep: the live values and, within the grace period, a
  // tombstone per deleted key — a record header, as small a record as
  // there is. The 0.3 on top is for the records' headers and index files,
  // and what the blob being written holds (it is not compacted).
  const liveBytes = live.length * VALUE + deleted.size * TOMBSTONE_BYTES;
  const n1 = await compact(t, c, 'n1');
  const afterN1 = stored(c.diskPath('n1'));
  // The pass a node makes soon after it starts may have compacted some blobs already: counted in.
  t.ok(afterN1.bytes + n1.bytesReclaimed > 8 * liveBytes, `n1 before compaction: ${afterN1.bytes + n1.bytesReclaimed} bytes on disk for ${liveBytes} live bytes`);
  t.ok(n1.blobsCompacted > 0, `n1: ${n1.blobsCompacted} blobs compacted`);
  t.equal(tombstonesDropped(c, 'n1'), 0, 'n1 dropped no tombstone: they are within tombstone_grace (10 days by default)');
  t.ok(afterN1.bytes <= 1.3 * liveBytes, `n1 after compaction: ${afterN1.bytes} bytes on disk, ${(afterN1.bytes / liveBytes).toFixed(2)}x the live bytes`);
  t.same(afterN1.leftovers, [], 'no compaction file left on n1');
  t.same((await wrongOn(c, 'n1', model)).slice(0, 5), [], "n1's replica as acknowledged after its compaction");

  // n2 returns holding every deleted key's value: only anti-entropy from n1's tombstones can tell it.
  const returned = Date.now();
  await c.startNode('n2');
  await c.waitLinks();
  await waitFor('n2 to catch up by anti-entropy', async () => (await wrongOn(c, 'n2', model)).length === 0, 30_000, 500).catch(() => undefined);
  const behind = await wrongOn(c, 'n2', model);
  t.same(behind.slice(0, 5), [], `n2 caught up ${((Date.now() - returned) / 1000).toFixed(1)} s after it returned (${behind.length} keys wrong)`);

  const beforeN2 = stored(c.diskPath('n2')).bytes;
  const n2 = await compact(t, c, 'n2');
  t.ok(n2.blobsCompacted > 0, `n2: ${n2.blobsCompacted} blobs compacted since it returned`);
  t.equal(tombstonesDropped(c, 'n2'), 0, 'n2 dropped no tombstone either');
  const afterN2 = stored(c.diskPath('n2'));
  t.ok(afterN2.bytes <= 1.3 * liveBytes, `n2 after compaction: ${beforeN2} -> ${afterN2.bytes} bytes on disk, ${(afterN2.bytes / liveBytes).toFixed(2)}x the live bytes`);
  t.same(afterN2.leftovers, [], 'no compaction file left on n2');
  await checkEach(t, c, model, 'after both compacted');

  // Both restart; after a pass of anti-entropy in each direction nothing has changed.
  for (const n of NODES) t.equal(await c.stop(n), 0, `${n} stopped`);
  for (const n of NODES) await c.startNode(n);
  await c.waitLinks();
  await checkEach(t, c, model, 'after a restart');
  const passes = async () => Promise.all(NODES.map(async (n) => Number(/^oyster_anti_entropy_last_pass_timestamp_seconds(?:\{[^}]*\})? (\S+)$/m.exec((await c.rest(n, 'GET', '/metrics')).text)?.[1] ?? 0)));
  const restarted = Date.now() / 1000;
  await waitFor('a pass of anti-entropy on each node', async () => (await passes()).every((s) => s > restarted), 15_000, 500);
  await checkEach(t, c, model, 'after a restart and a pass of anti-entropy');
  for (const n of NODES) {
    t.same(stored(c.diskPath(n)).leftovers, [], `no compaction file on ${n}`);
    const deletedThrough = (await Promise.all([...deleted].map((k) => rest.request(c.url(n), 'GET', `/data/${k}`)))).filter((r) => r.status !== 404);
    t.equal(deletedThrough.length, 0, `GET through ${n}: every deleted key 404`);
  }
  t.comment(`${((Date.now() - started) / 1000).toFixed(1)} s`);
});

t.test('why tombstone_grace exists: with a grace of 0, n1 forgets deletes that n2 missed, and anti-entropy brings the values back', async (t) => {
  t.comment(`seed ${SEED}`);
  const rng = new Rng(SEED + 1);
  const c = await cluster(t, { tombstone_grace: '0s' });
  const rest = new Rest();
  t.teardown(() => rest.close());
  const KEYS = 200;
  const model = Array.from({ length: KEYS }, () => new KeyModel());
  let failed = 0;
  for (let round = 1; round <= 3; round++) {
    failed += await writeAll(rest, c, 'n1', model, Array.from({ length: KEYS }, (_, key) => ({ key, value: valueOf(key, round) })));
  }
  t.equal(failed, 0, 'written with both nodes up');
  await waitFor('n2 to hold every write', async () => (await wrongOn(c, 'n2', model)).length === 0, 20_000, 200);

  await c.kill('n2');
  await c.waitLinks();
  // A quarter deleted (so that n1 keeps more than half of n2's keys and
  // anti-entropy compares keys rather than copying n2's files whole), then
  // every live key written twice more: the blob of the tombstones is closed,
  // so compaction may take it.
  const deleted = new Set<number>();
  while (deleted.size < KEYS / 4) deleted.add(rng.int(KEYS));
  const live = Array.from({ length: KEYS }, (_, k) => k).filter((k) => !deleted.has(k));
  failed = await writeAll(rest, c, 'n1', model, [...deleted].map((key) => ({ key, value: null })));
  for (const round of [4, 5]) failed += await writeAll(rest, c, 'n1', model, live.map((key) => ({ key, value: valueOf(key, round) })));
  t.equal(failed, 0, 'deletes and writes acknowledged while n2 was down');
  await dropAliens(t, c);

  // A tombstone goes once nothing older of its key is left in the vdisk:
  // the blobs of the older values, having more to reclaim, are compacted
  // before the one of the tombstones; should any be left, the next
  // compaction takes them.
  for (let i = 0; i < 3 && tombstonesDropped(c, 'n1') < deleted.size; i++) await compact(t, c, 'n1');
  t.equal(tombstonesDropped(c, 'n1'), deleted.size, `n1 dropped all ${deleted.size} tombstones (grace 0)`);
  const stillDeleted = await Promise.all([...deleted].map((k) => local(c, 'n1', k)));
  t.ok(stillDeleted.every((s) => s === null), 'the deleted keys read as absent on n1 until n2 returns');

  await c.startNode('n2');
  await c.waitLinks();
  // n2 still holds the third value of every deleted key; with no tombstone
  // left on n1 to hide it, n1 takes it as a key it lacks.
  const back = async () => (await Promise.all([...deleted].map(async (k) => (await local(c, 'n1', k)) !== null))).filter(Boolean).length;
  await waitFor('the deleted values to come back to n1', async () => (await back()) === deleted.size, 30_000, 500).catch(() => undefined);
  const resurrected: string[] = [];
  for (const k of deleted) {
    for (const n of NODES) {
      const state = await local(c, n, k);
      if (!(state instanceof Buffer) || !state.equals(valueOf(k, 3))) resurrected.push(`${n} key ${k}: ${describe(state)}`);
    }
  }
  t.same(resurrected.slice(0, 5), [], `the hazard tombstone_grace guards against: all ${deleted.size} deleted keys hold their old value again on both nodes`);
  const through = await rest.request(c.url('n1'), 'GET', `/data/${[...deleted][0]}`);
  t.equal(through.status, 200, 'and a client reads a deleted key again');
  // The other keys are as acknowledged.
  for (const k of deleted) model[k].ack(valueOf(k, 3));
  await checkEach(t, c, model, 'live keys, and the deleted ones as resurrected');
});
