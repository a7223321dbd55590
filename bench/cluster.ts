// npm run bench:cluster -- [--rounds=4] [--ops=8000] [--warm=12000] [--concurrency=64] [--value=1024] [--down]
//
// Data API throughput and CPU of a local 3-node cluster (3 vdisks × 2
// replicas, quorum 2: every PUT is acknowledged by two nodes) against a
// single node (3 vdisks, 1 replica, quorum 1), through REST (POST/GET
// /data/{key}) and through gRPC (BobApi Put/Get without force_node, i.e.
// coordinated by the receiving node). Real oysterd processes on loopback,
// spawned as the tests do; requests go round robin to the setup's entry
// nodes with `--concurrency` in flight, values of `--value` bytes (1 KiB;
// large values, e.g. --value=1048576 --ops=400 --warm=400, measure a value
// sent on in parts by a node that holds no replica of it).
//
// Every setup runs from the start to the end and is measured in interleaved
// rounds: each round measures every operation on every setup, `--ops`
// requests each, the order of the setups rotating from round to round, so
// that the machine's drift (other tenants, frequency) touches all alike.
// Before the rounds each setup serves `--warm` requests of each kind (V8
// optimises a path only after some thousands of calls; a node that ran for a
// minute is what is measured). Reported: the median over the rounds of
// throughput and of CPU time (utime + stime of all the setup's node
// processes) per request, and the median and range of the per-round ratios.
//
// The cost of one inter-node operation, both ends: 2 nodes, every vdisk on
// `far` only, every request sent to `near`, which forwards it (one
// inter-node Put or Get per request). Its CPU per request (both processes)
// less the single node's CPU per local request (same round) is what the
// inter-node operation added; it is compared with a local REST GET's CPU.
//
// With `--down`, the 3-node cluster also runs with one node stopped (n2,
// stopped once started; requests to n0 and n1): every write to a vdisk it
// holds a replica of reaches one replica and an alien copy (quorum 2, as in
// bob), and is compared with the same writes with every node up.
import { OysterProcess, startNode, writeCluster } from '../test/helpers/oysterd';
import { BobClient, keyBytes } from '../test/helpers/grpc-client';
import fs from 'node:fs';
import { arg, benchDir, cpuSeconds, fmt, machine, median, Phase, restClient, sequence, table, timedWindow } from './lib';

const ROUNDS = arg('rounds', 4);
const OPS = arg('ops', 8000);
const WARM = arg('warm', 12000);
const CONCURRENCY = arg('concurrency', 64);
const VALUE = arg('value', 1024);
const KEY_SIZE = 16;
const DOWN = process.argv.includes('--down');

// Large values: four distinct ones, not 256 (a quarter of a GiB at 1 MiB).
const distinct = Array.from({ length: VALUE > 65536 ? 4 : 256 }, (_, i) => Buffer.alloc(VALUE, i));
const values = Array.from({ length: 256 }, (_, i) => distinct[i % distinct.length]);

interface SetupSpec {
  label: string;
  nodes: string[];
  replicas: string[][];
  quorum: number;
  /** The nodes requests are sent to (all, unless given). */
  entry?: string[];
  /** Nodes stopped once the setup started. */
  down?: string[];
}

const OPERATIONS = ['restPut', 'restGet', 'grpcPut', 'grpcGet'] as const;
type Operation = (typeof OPERATIONS)[number];

/** A measured window with the CPU time of every node process of the setup (utime + stime) per request, µs. */
interface Measured extends Phase {
  cpuUs: number;
}

/** A running setup: its processes and clients, and what it can be asked to do. */
interface Setup {
  spec: SetupSpec;
  /** Runs `count` requests of `op`; `round` picks fresh keys for PUTs. */
  run(op: Operation, count: number, round: number): Promise<Measured>;
  stop(): Promise<void>;
}

async function start(spec: SetupSpec): Promise<Setup> {
  const dir = benchDir('cluster');
  const procs: OysterProcess[] = [];
  const files = await writeCluster(
    dir,
    { nodes: spec.nodes.map((name) => ({ name })), replicas: spec.replicas.map((r) => r.map((n) => `${n}/disk1`)), keySize: KEY_SIZE },
    { quorum: spec.quorum },
  );
  procs.push(...(await Promise.all(spec.nodes.map((n) => startNode(files, n)))));
  for (const [i, n] of spec.nodes.entries()) if (spec.down?.includes(n)) await procs[i].stop();
  const entry = spec.entry ?? spec.nodes;
  const entryProcs = procs.filter((_, i) => entry.includes(spec.nodes[i]));
  const rest = entryProcs.map((p) => restClient(p.url, Math.ceil(CONCURRENCY / entryProcs.length)));
  const grpc = entry.map((n) => new BobClient(files.addresses[n], 30_000));
  // Request i goes to entry node (i + ⌊i/n⌋) mod n rather than i mod n: key i
  // lies in vdisk i mod 3, and plain round robin would send every key to a
  // node holding its vdisk; this way each node takes keys of every vdisk.
  const via = <T>(list: T[], i: number) => list[(i + Math.floor(i / list.length)) % list.length];
  const now = () => Math.floor(Date.now() / 1000);
  // Keys: the warm-up's PUTs are [0, WARM) (what GETs read), round r's are
  // above; gRPC keys are offset from REST ones.
  const putKey = (round: number, i: number) => (round < 0 ? i : WARM + round * OPS + i);
  const GRPC = 1 << 26;
  const requests: Record<Operation, (i: number, round: number) => Promise<void>> = {
    restPut: async (i, round) => {
      const k = putKey(round, i);
      const r = await via(rest, i).send('POST', `/data/${k}`, values[k & 0xff]);
      if (r.status !== 201) throw new Error(`POST /data/${k}: ${r.status}`);
    },
    restGet: async (i) => {
      const k = reads[i % reads.length];
      const r = await via(rest, i).send('GET', `/data/${k}`);
      if (r.status !== 200 || r.bytes !== VALUE) throw new Error(`GET /data/${k}: ${r.status}, ${r.bytes} bytes`);
    },
    grpcPut: async (i, round) => {
      const k = putKey(round, i);
      await via(grpc, i).put(keyBytes(GRPC + k, KEY_SIZE), values[k & 0xff], now());
    },
    grpcGet: async (i) => {
      const k = reads[i % reads.length];
      const b = await via(grpc, i).get(keyBytes(GRPC + k, KEY_SIZE));
      if (b.data.length !== VALUE) throw new Error(`Get ${GRPC + k}: ${b.data.length} bytes`);
    },
  };
  const live = procs.filter((_, i) => !spec.down?.includes(spec.nodes[i]));
  const cpu = () => live.reduce((a, p) => a + cpuSeconds(p.child.pid!), 0);
  const setup: Setup = {
    spec,
    async run(op, count, round) {
      const before = cpu();
      const p = await timedWindow(count, CONCURRENCY, (i) => requests[op](i, round));
      return { ...p, cpuUs: ((cpu() - before) / count) * 1e6 };
    },
    async stop() {
      await Promise.all(rest.map((c) => c.close()));
      for (const g of grpc) g.close();
      await Promise.all(live.map((p) => p.stop()));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return setup;
}

const reads = sequence(OPS, WARM, 88172645);

async function main(): Promise<void> {
  const single: SetupSpec = { label: '1 node', nodes: ['solo'], replicas: [['solo'], ['solo'], ['solo']], quorum: 1 };
  const cluster: SetupSpec = {
    label: '3 nodes',
    nodes: ['n0', 'n1', 'n2'],
    replicas: [
      ['n0', 'n1'],
      ['n1', 'n2'],
      ['n2', 'n0'],
    ],
    quorum: 2,
  };
  const forwarded: SetupSpec = { label: 'forwarded', nodes: ['near', 'far'], replicas: [['far'], ['far'], ['far']], quorum: 1, entry: ['near'] };
  const down: SetupSpec = { ...cluster, label: 'n2 down', entry: ['n0', 'n1'], down: ['n2'] };
  console.log(`# Cluster benchmark\n\n${machine()}`);
  console.log(
    `${ROUNDS} interleaved rounds of ${fmt(OPS)} requests per operation and setup (PUTs of new values of ${fmt(VALUE)} bytes, GETs of random stored keys), ` +
      `after ${fmt(WARM)} warm-up requests of each kind; ${CONCURRENCY} requests in flight, round robin over the setup's entry nodes; ` +
      `all processes on this machine, all setups running throughout.\n` +
      `1 node: 3 vdisks × 1 replica, quorum 1. 3 nodes: 3 vdisks × 2 replicas, quorum 2. Key size ${KEY_SIZE}. Medians over the rounds; ratios are the median (and range) of the per-round ratios.\n`,
  );
  const specs = DOWN ? [single, cluster, forwarded, down] : [single, cluster, forwarded];
  const setups: Setup[] = [];
  try {
    for (const spec of specs) setups.push(await start(spec));
    // Let the link managers find each other.
    await new Promise((r) => setTimeout(r, 1500));
    for (const s of setups) for (const op of OPERATIONS) await s.run(op, WARM, -1);
    const results = new Map<string, Measured[]>();
    const key = (label: string, op: Operation) => `${label} ${op}`;
    for (let round = 0; round < ROUNDS; round++) {
      for (const op of OPERATIONS) {
        for (let j = 0; j < setups.length; j++) {
          const s = setups[(round + j) % setups.length];
          const m = await s.run(op, OPS, round);
          const k = key(s.spec.label, op);
          results.set(k, [...(results.get(k) ?? []), m]);
        }
      }
    }
    const of = (label: string, op: Operation) => results.get(key(label, op))!;
    const rate = (p: Phase) => p.ops / p.seconds;
    const ratios = (xs: number[]) => `${fmt(median(xs), 2)}× (${fmt(Math.min(...xs), 2)}–${fmt(Math.max(...xs), 2)})`;
    const perRound = (a: Measured[], b: Measured[], f: (x: Measured, y: Measured) => number) => a.map((x, i) => f(x, b[i]));
    const names: Record<Operation, string> = { restPut: 'REST PUT (POST /data)', restGet: 'REST GET', grpcPut: 'gRPC Put', grpcGet: 'gRPC Get' };
    const rows = OPERATIONS.map((op) => {
      const one = of(single.label, op);
      const three = of(cluster.label, op);
      return {
        operation: names[op],
        '1 node ops/s': fmt(median(one.map(rate))),
        '1 node CPU µs/op': fmt(median(one.map((m) => m.cpuUs))),
        '3 nodes ops/s': fmt(median(three.map(rate))),
        '3 nodes p50 / p99 ms': `${fmt(median(three.map((m) => m.p50)), 1)} / ${fmt(median(three.map((m) => m.p99)), 1)}`,
        '3 nodes CPU µs/op': fmt(median(three.map((m) => m.cpuUs))),
        'throughput 3 / 1': ratios(perRound(three, one, (x, y) => rate(x) / rate(y))),
        'CPU 3 / 1': ratios(perRound(three, one, (x, y) => x.cpuUs / y.cpuUs)),
      };
    });
    console.log(table(rows));
    const localGet = median(of(single.label, 'restGet').map((m) => m.cpuUs));
    console.log(
      `\nOne inter-node operation, both ends: 2 nodes, every vdisk on \`far\` only, requests to \`near\` (each forwarded as one inter-node operation); ` +
        `its CPU per request (both processes) less the single node's per local request in the same round, against a local REST GET (${fmt(localGet)} µs):\n`,
    );
    const inter = (
      [
        ['REST PUT → inter-node Put', 'restPut'],
        ['REST GET → inter-node Get', 'restGet'],
        ['gRPC Put → inter-node Put', 'grpcPut'],
        ['gRPC Get → inter-node Get', 'grpcGet'],
      ] as Array<[string, Operation]>
    ).map(([what, op]) => {
      const two = of(forwarded.label, op);
      const one = of(single.label, op);
      const gets = of(single.label, 'restGet');
      const added = perRound(two, one, (x, y) => x.cpuUs - y.cpuUs);
      return {
        request: what,
        'forwarded CPU µs/request': fmt(median(two.map((m) => m.cpuUs))),
        'local CPU µs/request': fmt(median(one.map((m) => m.cpuUs))),
        'inter-node operation µs': fmt(median(added)),
        '÷ local REST GET': ratios(added.map((a, i) => a / gets[i].cpuUs)),
        'forwarded ops/s': fmt(median(two.map(rate))),
      };
    });
    console.log(table(inter));
    if (DOWN) {
      console.log('\nThe 3 nodes with n2 stopped (requests to n0 and n1; a write to a vdisk n2 holds a replica of reaches one replica and an alien copy), against all 3 up:\n');
      console.log(
        table(
          OPERATIONS.map((op) => {
            const up = of(cluster.label, op);
            const without = of(down.label, op);
            return {
              operation: names[op],
              'n2 down ops/s': fmt(median(without.map(rate))),
              'n2 down p50 / p99 ms': `${fmt(median(without.map((m) => m.p50)), 1)} / ${fmt(median(without.map((m) => m.p99)), 1)}`,
              'n2 down CPU µs/op': fmt(median(without.map((m) => m.cpuUs))),
              'all up ops/s': fmt(median(up.map(rate))),
              'all up CPU µs/op': fmt(median(up.map((m) => m.cpuUs))),
              'throughput down / up': ratios(perRound(without, up, (x, y) => rate(x) / rate(y))),
            };
          }),
        ),
      );
    }
  } finally {
    await Promise.all(setups.map((s) => s.stop()));
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
