// npm run bench:cluster -- [--keys=20000] [--ops=20000] [--concurrency=64]
//
// Data API throughput and latency of a local 3-node cluster (3 vdisks × 2
// replicas, quorum 2: every PUT is acknowledged by two nodes) against a
// single node (3 vdisks, 1 replica, quorum 1) measured the same way in the
// same run, through REST (POST/GET /data/{key}) and through gRPC (BobApi
// Put/Get without force_node, i.e. coordinated by the receiving node). Real
// oysterd processes on loopback, spawned as the tests do; requests go round
// robin to every node of the setup with `--concurrency` in flight, 1 KiB
// values. Per setup and interface: `--keys` PUTs of new keys, then `--ops`
// GETs of random stored keys (after a short warm-up). Prints a markdown table
// with the CPU time (utime + stime) of all node processes per request.
//
// Then the cost of one inter-node operation, both ends: 2 nodes, every vdisk
// on `far` only, every request sent to `near`, which forwards it (one
// inter-node Put or Get per request). Its CPU per request (both processes)
// less the single node's CPU per local request is what the inter-node
// operation added; it is compared with a local REST GET's CPU.
import { OysterProcess, startNode, writeCluster } from '../test/helpers/oysterd';
import { BobClient, keyBytes } from '../test/helpers/grpc-client';
import fs from 'node:fs';
import { arg, benchDir, cpuSeconds, fmt, machine, Phase, restClient, sequence, table, timedWindow } from './lib';

const KEYS = arg('keys', 20_000);
const OPS = arg('ops', 20_000);
const CONCURRENCY = arg('concurrency', 64);
const VALUE = 1024;
const KEY_SIZE = 16;

const values = Array.from({ length: 256 }, (_, i) => Buffer.alloc(VALUE, i));

interface Setup {
  label: string;
  nodes: string[];
  replicas: string[][];
  quorum: number;
  /** The nodes requests are sent to (all, unless given). */
  entry?: string[];
}

/** A phase with the CPU time of every node process (utime + stime) per request, µs. */
interface Measured extends Phase {
  cpuUs: number;
}

interface Result {
  restPut: Measured;
  restGet: Measured;
  grpcPut: Measured;
  grpcGet: Measured;
}

async function measure(setup: Setup): Promise<Result> {
  const dir = benchDir('cluster');
  const procs: OysterProcess[] = [];
  try {
    const files = await writeCluster(
      dir,
      { nodes: setup.nodes.map((name) => ({ name })), replicas: setup.replicas.map((r) => r.map((n) => `${n}/disk1`)), keySize: KEY_SIZE },
      { quorum: setup.quorum },
    );
    procs.push(...(await Promise.all(setup.nodes.map((n) => startNode(files, n)))));
    // Let the link managers find each other before measuring.
    await new Promise((r) => setTimeout(r, setup.nodes.length > 1 ? 1500 : 200));
    const entry = setup.entry ?? setup.nodes;
    const entryProcs = procs.filter((_, i) => entry.includes(setup.nodes[i]));
    const rest = entryProcs.map((p) => restClient(p.url, Math.ceil(CONCURRENCY / entryProcs.length)));
    const grpc = entry.map((n) => new BobClient(files.addresses[n], 30_000));
    const via = <T>(list: T[], i: number) => list[i % list.length];
    const now = () => Math.floor(Date.now() / 1000);

    const restPutKey = async (k: number, i: number) => {
      const r = await via(rest, i).send('POST', `/data/${k}`, values[k & 0xff]);
      if (r.status !== 201) throw new Error(`POST /data/${k}: ${r.status}`);
    };
    const restGetKey = async (k: number, i: number) => {
      const r = await via(rest, i).send('GET', `/data/${k}`);
      if (r.status !== 200 || r.bytes !== VALUE) throw new Error(`GET /data/${k}: ${r.status}, ${r.bytes} bytes`);
    };
    // gRPC keys live above the REST ones.
    const grpcPutKey = (k: number, i: number) => via(grpc, i).put(keyBytes(KEYS + k, KEY_SIZE), values[k & 0xff], now());
    const grpcGetKey = async (k: number, i: number) => {
      const b = await via(grpc, i).get(keyBytes(KEYS + k, KEY_SIZE));
      if (b.data.length !== VALUE) throw new Error(`Get ${KEYS + k}: ${b.data.length} bytes`);
    };

    // Warm-up (JIT, connections), on keys that are not measured.
    const warm = Math.min(2000, KEYS);
    await timedWindow(warm, CONCURRENCY, (i) => restPutKey(10 * KEYS + i, i));
    await timedWindow(warm, CONCURRENCY, (i) => grpcPutKey(10 * KEYS + i, i));
    await timedWindow(warm, CONCURRENCY, (i) => restGetKey(10 * KEYS + (i % warm), i));

    const cpu = () => procs.reduce((a, p) => a + cpuSeconds(p.child.pid!), 0);
    const phase = async (total: number, fn: (i: number) => Promise<unknown>): Promise<Measured> => {
      const before = cpu();
      const p = await timedWindow(total, CONCURRENCY, fn);
      return { ...p, cpuUs: ((cpu() - before) / total) * 1e6 };
    };
    const restPut = await phase(KEYS, (i) => restPutKey(i, i));
    const reads = sequence(OPS, KEYS, 88172645);
    const restGet = await phase(OPS, (i) => restGetKey(reads[i], i));
    const grpcPut = await phase(KEYS, (i) => grpcPutKey(i, i));
    const grpcGet = await phase(OPS, (i) => grpcGetKey(reads[i], i));
    await Promise.all(rest.map((c) => c.close()));
    for (const g of grpc) g.close();
    return { restPut, restGet, grpcPut, grpcGet };
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const single: Setup = { label: '1 node', nodes: ['solo'], replicas: [['solo'], ['solo'], ['solo']], quorum: 1 };
  const cluster: Setup = {
    label: '3 nodes, quorum 2',
    nodes: ['n0', 'n1', 'n2'],
    replicas: [
      ['n0', 'n1'],
      ['n1', 'n2'],
      ['n2', 'n0'],
    ],
    quorum: 2,
  };
  console.log(`# Cluster benchmark\n\n${machine()}`);
  console.log(
    `${fmt(KEYS)} PUTs of new 1 KiB values, then ${fmt(OPS)} GETs of random stored keys, per interface; ` +
      `${CONCURRENCY} requests in flight, round robin over the setup's nodes; all processes on this machine.\n` +
      `1 node: 3 vdisks × 1 replica, quorum 1. 3 nodes: 3 vdisks × 2 replicas, quorum 2. Key size ${KEY_SIZE}.\n`,
  );
  const forwarded: Setup = { label: 'forwarded', nodes: ['near', 'far'], replicas: [['far'], ['far'], ['far']], quorum: 1, entry: ['near'] };
  const one = await measure(single);
  const three = await measure(cluster);
  const two = await measure(forwarded);
  const rate = (p: Phase) => p.ops / p.seconds;
  const rows = (
    [
      ['REST PUT (POST /data)', 'restPut'],
      ['REST GET', 'restGet'],
      ['gRPC Put', 'grpcPut'],
      ['gRPC Get', 'grpcGet'],
    ] as Array<[string, keyof Result]>
  ).map(([what, k]) => ({
    operation: what,
    '1 node ops/s': fmt(rate(one[k])),
    '1 node p50 / p99 ms': `${fmt(one[k].p50, 1)} / ${fmt(one[k].p99, 1)}`,
    '1 node CPU µs/op': fmt(one[k].cpuUs),
    '3 nodes ops/s': fmt(rate(three[k])),
    '3 nodes p50 / p99 ms': `${fmt(three[k].p50, 1)} / ${fmt(three[k].p99, 1)}`,
    '3 nodes CPU µs/op': fmt(three[k].cpuUs),
    '3 nodes / 1 node': `${fmt(rate(three[k]) / rate(one[k]), 2)}×`,
  }));
  console.log(table(rows));
  console.log(
    `\nOne inter-node operation, both ends: 2 nodes, every vdisk on \`far\` only, requests to \`near\` (each forwarded as one inter-node operation); ` +
      `its CPU per request (both processes) less the single node's per local request, against a local REST GET (${fmt(one.restGet.cpuUs)} µs):\n`,
  );
  const inter = (
    [
      ['REST PUT → inter-node Put', 'restPut'],
      ['REST GET → inter-node Get', 'restGet'],
      ['gRPC Put → inter-node Put', 'grpcPut'],
      ['gRPC Get → inter-node Get', 'grpcGet'],
    ] as Array<[string, keyof Result]>
  ).map(([what, k]) => ({
    request: what,
    'forwarded CPU µs/request': fmt(two[k].cpuUs),
    'local CPU µs/request': fmt(one[k].cpuUs),
    'inter-node operation µs': fmt(two[k].cpuUs - one[k].cpuUs),
    '÷ local REST GET': `${fmt((two[k].cpuUs - one[k].cpuUs) / one.restGet.cpuUs, 2)}×`,
    'forwarded ops/s': fmt(rate(two[k])),
  }));
  console.log(table(inter));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
