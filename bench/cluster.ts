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
// GETs of random stored keys (after a short warm-up). Prints a markdown table.
import { OysterProcess, startNode, writeCluster } from '../test/helpers/oysterd';
import { BobClient } from '../test/helpers/grpc-client';
import { arg, benchDir, fmt, machine, table } from './lib';
import fs from 'node:fs';
import http from 'node:http';

const KEYS = arg('keys', 20_000);
const OPS = arg('ops', 20_000);
const CONCURRENCY = arg('concurrency', 64);
const VALUE = 1024;
const KEY_SIZE = 16;

interface Phase {
  ops: number;
  seconds: number;
  p50: number;
  p99: number;
}

/** `total` operations with CONCURRENCY in flight; latencies in ms. */
async function phase(total: number, fn: (i: number) => Promise<void>): Promise<Phase> {
  const lat = new Float64Array(total);
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, total) }, async () => {
      while (next < total) {
        const i = next++;
        const t0 = process.hrtime.bigint();
        await fn(i);
        lat[i] = Number(process.hrtime.bigint() - t0) / 1e6;
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  lat.sort();
  return { ops: total, seconds, p50: lat[Math.floor(total * 0.5)], p99: lat[Math.floor(total * 0.99)] };
}

/** A fixed pseudo-random sequence in [0, n). */
function sequence(count: number, n: number, seed: number): Uint32Array {
  const out = new Uint32Array(count);
  let x = seed;
  for (let i = 0; i < count; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = (x >>> 0) % n;
  }
  return out;
}

const values = Array.from({ length: 256 }, (_, i) => Buffer.alloc(VALUE, i));

function keyBytes(n: number): Buffer {
  const k = Buffer.alloc(KEY_SIZE);
  k.writeUInt32LE(n >>> 0, 0);
  return k;
}

type Send = (method: 'GET' | 'POST', path: string, body?: Buffer) => Promise<{ status: number; bytes: number }>;

interface UndiciPool {
  request(o: { path: string; method: string; body?: Buffer }): Promise<{ statusCode: number; body: { arrayBuffer(): Promise<ArrayBuffer> } }>;
  close(): Promise<void>;
}

/** A keep-alive REST client: undici's Pool when it can be loaded (cheaper per request), else node:http. */
function restClient(url: string, connections: number): { send: Send; close: () => Promise<void> } {
  try {
    // Not a dependency of Oyster: used when present (tap brings it), as bench/http.ts does.
    const { Pool } = require('undici') as { Pool: new (origin: string, o: { connections: number; pipelining: number }) => UndiciPool };
    const pool = new Pool(url, { connections, pipelining: 1 });
    return {
      send: async (method, p, body) => {
        const res = await pool.request({ path: p, method, body });
        return { status: res.statusCode, bytes: (await res.body.arrayBuffer()).byteLength };
      },
      close: () => pool.close(),
    };
  } catch {
    const u = new URL(url);
    const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
    return {
      send: (method, p, body) =>
        new Promise((resolve, reject) => {
          const req = http.request({ agent, host: u.hostname, port: u.port, method, path: p, headers: body ? { 'Content-Length': body.length } : {} }, (res) => {
            let bytes = 0;
            res.on('data', (c: Buffer) => (bytes += c.length));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
            res.on('error', reject);
          });
          req.on('error', reject);
          req.end(body);
        }),
      close: async () => agent.destroy(),
    };
  }
}

interface Setup {
  label: string;
  nodes: string[];
  replicas: string[][];
  quorum: number;
}

interface Result {
  restPut: Phase;
  restGet: Phase;
  grpcPut: Phase;
  grpcGet: Phase;
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
    const rest = procs.map((p) => restClient(p.url, Math.ceil(CONCURRENCY / procs.length)));
    const grpc = setup.nodes.map((n) => new BobClient(files.addresses[n], 30_000));
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
    const grpcPutKey = (k: number, i: number) => via(grpc, i).put(keyBytes(KEYS + k), values[k & 0xff], now());
    const grpcGetKey = async (k: number, i: number) => {
      const b = await via(grpc, i).get(keyBytes(KEYS + k));
      if (b.data.length !== VALUE) throw new Error(`Get ${KEYS + k}: ${b.data.length} bytes`);
    };

    // Warm-up (JIT, connections), on keys that are not measured.
    const warm = Math.min(2000, KEYS);
    await phase(warm, (i) => restPutKey(10 * KEYS + i, i));
    await phase(warm, (i) => grpcPutKey(10 * KEYS + i, i));
    await phase(warm, (i) => restGetKey(10 * KEYS + (i % warm), i));

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
  const one = await measure(single);
  const three = await measure(cluster);
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
    '3 nodes ops/s': fmt(rate(three[k])),
    '3 nodes p50 / p99 ms': `${fmt(three[k].p50, 1)} / ${fmt(three[k].p99, 1)}`,
    '3 nodes / 1 node': `${fmt(rate(three[k]) / rate(one[k]), 2)}×`,
  }));
  console.log(table(rows));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
