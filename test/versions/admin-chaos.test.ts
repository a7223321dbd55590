// Routine operations at random under load: for 20 s, 8 writers put (some
// values of 256 KiB to 1.25 MiB, sent to the other replica in parts as they
// arrive) and delete their own keys through both nodes of a 2-node cluster (every vdisk
// has a replica on each node, quorum 2) while disks are stopped and
// started, vdisks remounted, old partitions detached and attached again and
// the alien directories detached. Afterwards (everything started and
// attached again, the alien copies handed over) every key holds its last
// acknowledged write — on each replica, read with force_node, and through
// each node — checked against a model of the acknowledged operations.
// OYSTER_TEST_SEED replays a run.
import t from 'tap';
import { BobClient, codeOf, GetSource, keyBytes, Status } from '../helpers/grpc-client';
import { startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { badLogLines, KeyModel, Rest, Rng, seedFromEnv, sleep } from './lib';

const NODES = ['n1', 'n2'];
const DISKS = ['a', 'b'];
const WRITERS = 8;
const KEYS_PER_WRITER = 12;
const RUN_MS = 20_000;

t.test('disk stop/start, remount, partition detach/attach and alien detach under 8 writers', async (t) => {
  const seed = seedFromEnv();
  t.comment(`seed ${seed}`);
  const rng = new Rng(seed);
  const dir = tempDir(t);
  const replicas = [
    ['n1/a', 'n2/a'],
    ['n1/b', 'n2/b'],
    ['n1/a', 'n2/b'],
    ['n1/b', 'n2/a'],
  ];
  const files = await writeCluster(
    dir,
    { nodes: NODES.map((name) => ({ name, disks: [...DISKS, 'c'] })), replicas },
    // Partitions of 2 s, so that there are old ones to detach.
    { quorum: 2, timestampPeriod: '2s', checkInterval: '1s', pearl: { alien_disk: 'c' } },
  );
  const procs = new Map(await Promise.all(NODES.map(async (n) => [n, await startNode(files, n)] as const)));
  const rest = new Rest();
  const grpc = new Map(NODES.map((n) => [n, new BobClient(files.addresses[n])]));
  t.teardown(async () => {
    rest.close();
    for (const c of grpc.values()) c.close();
    await Promise.all([...procs.values()].map((p) => (p.child.exitCode === null && p.child.signalCode === null ? p.stop() : undefined)));
  });
  const url = (n: string) => procs.get(n)!.url;
  const call = (n: string, method: string, path: string, body?: Buffer) => rest.request(url(n), method, path, body);

  // Wait until each node sees the other.
  const until = Date.now() + 15_000;
  while ((await call('n1', 'GET', '/nodes')).status !== 200 || !procs.get('n1')!.output.some((l) => l.includes('"peer":"n2"') && l.includes('"available":true'))) {
    if (Date.now() > until) throw new Error('n1 never saw n2');
    await sleep(100);
  }

  const models = new Map<number, KeyModel>();
  const stats = { acked: 0, failed: 0, stops: 0, starts: 0, remounts: 0, detaches: 0, attaches: 0, alienDetaches: 0 };
  let running = true;

  // ------------------------------------------------------------ the operator
  const stopped = new Map<string, number>(); // "node/disk" -> when to start it again
  const detached: Array<{ node: string; vdisk: number; ts: number; until: number }> = [];
  const startDisk = async (key: string) => {
    const [node, disk] = key.split('/');
    const r = await call(node, 'POST', `/disks/${disk}/start`);
    if (r.status === 200) {
      stopped.delete(key);
      stats.starts++;
    }
  };
  const attach = async (d: (typeof detached)[number]) => {
    const r = await call(d.node, 'PUT', `/vdisks/${d.vdisk}/partitions/by_timestamp/${d.ts}/attach`);
    // 409: attached already (a remount reopens every directory).
    if (r.status === 200 || r.status === 409) {
      detached.splice(detached.indexOf(d), 1);
      stats.attaches++;
    }
  };
  const operator = (async () => {
    while (running) {
      await sleep(100 + rng.int(250));
      const now = Date.now();
      for (const [key, when] of [...stopped]) if (when <= now) await startDisk(key);
      for (const d of [...detached]) if (d.until <= now) await attach(d);
      const node = rng.pick(NODES);
      const x = rng.next();
      if (x < 0.25) {
        const key = `${node}/${rng.pick(DISKS)}`;
        if (stopped.has(key)) continue;
        if ((await call(node, 'POST', `/disks/${key.split('/')[1]}/stop`)).status === 200) {
          stopped.set(key, now + 300 + rng.int(1500));
          stats.stops++;
        }
      } else if (x < 0.5) {
        if ((await call(node, 'POST', `/vdisks/${rng.int(replicas.length)}/remount`)).status === 200) stats.remounts++;
      } else if (x < 0.8) {
        const vdisk = rng.int(replicas.length);
        const r = await call(node, 'GET', `/vdisks/${vdisk}/partitions`);
        if (r.status !== 200) continue;
        const names = (JSON.parse(r.body.toString()) as { partitions: string[] }).partitions;
        // Never the newest: that one may be the current partition (409).
        const old = names.slice(1);
        if (old.length === 0) continue;
        const ts = Number(rng.pick(old).split('_')[0]);
        if ((await call(node, 'POST', `/vdisks/${vdisk}/partitions/by_timestamp/${ts}/detach`)).status === 200) {
          detached.push({ node, vdisk, ts, until: now + 300 + rng.int(2000) });
          stats.detaches++;
        }
      } else {
        if ((await call(node, 'POST', '/alien/detach')).status === 200) stats.alienDetaches++;
      }
    }
  })();

  // ------------------------------------------------------------ the writers
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      const r = new Rng(seed + 7919 * (w + 1));
      const keys = Array.from({ length: KEYS_PER_WRITER }, (_, i) => 1000 + i * WRITERS + w);
      for (const k of keys) models.set(k, new KeyModel());
      let seq = 0;
      const end = Date.now() + RUN_MS;
      while (Date.now() < end) {
        const key = r.pick(keys);
        const node = r.pick(NODES);
        const m = models.get(key)!;
        const tag = `w${w} k${key} #${seq++} via ${node}`;
        // Some values large enough to go to the replicas in parts as they arrive.
        const value = r.next() < 0.2 ? null : r.next() < 0.15 ? Buffer.alloc(256 * 1024 + r.int(1024 * 1024), tag) : Buffer.from(tag);
        const res = value === null ? await call(node, 'DELETE', `/data/${key}`) : await call(node, 'POST', `/data/${key}`, value);
        if (res.status === (value === null ? 200 : 201)) {
          m.ack(value);
          stats.acked++;
        } else {
          m.fail(value);
          stats.failed++;
        }
      }
    }),
  );
  running = false;
  await operator;
  t.comment(JSON.stringify(stats));
  t.ok(stats.acked > 500, `${stats.acked} writes acknowledged (${stats.failed} failed)`);
  t.ok(stats.stops > 3 && stats.remounts > 3 && stats.alienDetaches > 3, 'the operator stopped disks, remounted vdisks and detached aliens');

  // ------------------------------------------------------------ settle
  for (const key of [...stopped.keys()]) await startDisk(key);
  for (const d of [...detached]) await attach(d);
  t.same([...stopped.keys()], [], 'every disk started again');
  t.same(detached, [], 'every detached partition attached again');
  const handoffUntil = Date.now() + 60_000;
  for (;;) {
    const pending: string[] = [];
    for (const n of NODES) {
      const tree = JSON.parse((await call(n, 'GET', '/alien/dir')).body.toString()) as { children: Array<{ name: string; children: Array<{ name: string; children: unknown[] }> }> };
      for (const o of tree.children) for (const v of o.children) if (v.children.length > 0) pending.push(`${n}: ${o.name}/${v.name}`);
    }
    if (pending.length === 0) break;
    if (Date.now() > handoffUntil) throw new Error(`alien copies not handed over: ${pending.join(', ')}`);
    await sleep(250);
  }

  // ------------------------------------------------------------ check
  const wrong: string[] = [];
  for (const [key, m] of models) {
    for (const n of NODES) {
      let state: Buffer | null;
      try {
        state = (await grpc.get(n)!.get(keyBytes(key, 16), { force_node: true, source: GetSource.NORMAL })).data;
      } catch (err) {
        if (codeOf(err) !== Status.NOT_FOUND) throw err;
        state = null;
      }
      if (!m.allows(state)) wrong.push(`key ${key} on replica ${n}: ${state === null ? 'absent' : state.subarray(0, 60).toString()}; ${m.describe()}`);
      const g = await call(n, 'GET', `/data/${key}`);
      const read = g.status === 200 ? g.body : g.status === 404 ? null : undefined;
      if (read === undefined || !m.allows(read)) wrong.push(`key ${key} through ${n}: ${g.status} ${g.body.toString().slice(0, 60)}; ${m.describe()}`);
    }
  }
  t.same(wrong.slice(0, 20), [], `all ${models.size} keys end on their last acknowledged write on both replicas (${wrong.length} wrong)`);
  for (const [n, p] of procs) t.same(badLogLines(p.output).slice(0, 5), [], `no error in ${n}'s output`);
});
