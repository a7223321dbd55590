// npm run bench:http -- [--keys=100000] [--gets=100000] [--posts=100000] [--concurrency=64] [--rounds=4] [--client=undici|http]
//
// REST data API throughput and latency of a real oysterd (one node, one
// disk, spawned on a temporary configuration as the tests do) against the
// ceiling of its HTTP stack: a minimal Koa + @koa/router server with the
// same route shapes answering from an in-memory Map (bench/http-ceiling.ts),
// measured in the same run by the same client. Both servers get `--keys`
// values of 1 KiB first; then GETs of random loaded keys and POSTs (1 KiB
// overwrites of random keys) with `--concurrency` keep-alive connections.
// Rounds alternate between the servers; the best round of each counts.
// The client is undici's Pool when it can be loaded (it is cheaper per
// request than node:http, which matters on a small machine), else node:http.
import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { OysterProcess, startNode, writeCluster } from '../test/helpers/oysterd';
import { arg, benchDir, cpuSeconds, fmt, machine, Phase, restClient, Send, sequence, table, timedWindow } from './lib';

const KEYS = arg('keys', 100_000);
const GETS = arg('gets', 100_000);
const POSTS = arg('posts', 100_000);
const CONCURRENCY = arg('concurrency', 64);
const ROUNDS = arg('rounds', 4);
const CLIENT = process.argv.find((a) => a.startsWith('--client='))?.slice(9) ?? 'undici';
const VALUE = 1024;

interface ServerPhase extends Phase {
  /** CPU time of the server process (all its threads) per request, µs. */
  cpuUs: number;
}

/** `total` requests with CONCURRENCY in flight against the server `pid`. */
async function phase(pid: number, total: number, fn: (i: number) => Promise<void>): Promise<ServerPhase> {
  const cpu0 = cpuSeconds(pid);
  const p = await timedWindow(total, CONCURRENCY, fn);
  return { ...p, cpuUs: ((cpuSeconds(pid) - cpu0) / total) * 1e6 };
}

const values = Array.from({ length: 256 }, (_, i) => Buffer.alloc(VALUE, i));

async function load(pid: number, send: Send): Promise<ServerPhase> {
  return phase(pid, KEYS, async (i) => {
    const r = await send('POST', `/data/${i}`, values[i & 0xff]);
    if (r.status !== 201) throw new Error(`POST /data/${i}: ${r.status}`);
  });
}

async function gets(pid: number, send: Send, seed: number, n: number): Promise<ServerPhase> {
  const keys = sequence(n, KEYS, seed);
  return phase(pid, n, async (i) => {
    const r = await send('GET', `/data/${keys[i]}`);
    if (r.status !== 200 || r.bytes !== VALUE) throw new Error(`GET /data/${keys[i]}: ${r.status}, ${r.bytes} bytes`);
  });
}

async function posts(pid: number, send: Send, seed: number, n: number): Promise<ServerPhase> {
  const keys = sequence(n, KEYS, seed);
  return phase(pid, n, async (i) => {
    const r = await send('POST', `/data/${keys[i]}`, values[keys[i] & 0xff]);
    if (r.status !== 201) throw new Error(`POST /data/${keys[i]}: ${r.status}`);
  });
}

function startCeiling(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [path.join(__dirname, 'http-ceiling.js')], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`ceiling server exited ${code}`)));
    child.stdout!.once('data', (d: Buffer) => resolve({ child, url: `http://127.0.0.1:${Number(d.toString().trim())}` }));
  });
}

async function main(): Promise<void> {
  const dir = benchDir('http');
  let oyster: OysterProcess | null = null;
  let ceiling: ChildProcess | null = null;
  try {
    const files = await writeCluster(dir, { nodes: [{ name: 'bench' }], vdisks: 4 });
    oyster = await startNode(files, 'bench');
    const c = await startCeiling();
    ceiling = c.child;
    const targets = [
      { url: oyster.url, pid: oyster.child.pid! },
      { url: c.url, pid: c.child.pid! },
    ];
    const clients = targets.map((t) => ({ ...restClient(t.url, CONCURRENCY, CLIENT === 'undici'), pid: t.pid }));
    const clientName = clients[0].name;
    console.log(`# REST data API benchmark\n\n${machine()}`);
    console.log(
      `client: ${clientName} in one process, ${CONCURRENCY} keep-alive connections; ${fmt(KEYS)} keys of ${VALUE} B loaded, then ` +
        `${fmt(GETS)} GETs and ${fmt(POSTS)} POSTs per round, ${ROUNDS} round(s), best round counts; oysterd: 1 node, 1 disk, 4 vdisks, defaults\n`,
    );

    const loads: ServerPhase[] = [];
    for (const cl of clients) loads.push(await load(cl.pid, cl.send));
    // Warm-up: JIT and caches of both servers.
    for (const cl of clients) await gets(cl.pid, cl.send, 7, Math.min(20_000, GETS));

    const best = targets.map(() => ({ get: null as ServerPhase | null, post: null as ServerPhase | null }));
    const better = (a: ServerPhase | null, b: ServerPhase) => (a === null || b.ops / b.seconds > a.ops / a.seconds ? b : a);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, cl] of clients.entries()) best[i].get = better(best[i].get, await gets(cl.pid, cl.send, 1000 + round, GETS));
      for (const [i, cl] of clients.entries()) best[i].post = better(best[i].post, await posts(cl.pid, cl.send, 2000 + round, POSTS));
    }

    const rate = (p: Phase) => p.ops / p.seconds;
    const rows: Array<Record<string, string>> = [];
    for (const [what, pick] of [
      ['GET 1 KiB', (i: number) => best[i].get!],
      ['POST 1 KiB', (i: number) => best[i].post!],
      ['POST 1 KiB (initial load)', (i: number) => loads[i]],
    ] as Array<[string, (i: number) => ServerPhase]>) {
      const o = pick(0);
      const ce = pick(1);
      rows.push({
        operation: what,
        'oysterd ops/s': fmt(rate(o)),
        'oysterd p50 / p99 ms': `${fmt(o.p50, 2)} / ${fmt(o.p99, 2)}`,
        'oysterd CPU µs/op': fmt(o.cpuUs),
        'ceiling ops/s': fmt(rate(ce)),
        'ceiling p50 / p99 ms': `${fmt(ce.p50, 2)} / ${fmt(ce.p99, 2)}`,
        'ceiling CPU µs/op': fmt(ce.cpuUs),
        'oysterd / ceiling': `${fmt(rate(o) / rate(ce), 2)}×`,
      });
    }
    console.log(table(rows));
    console.log(`\ntargets: GET ≥ 0.8×, POST ≥ 0.7× of the ceiling (ops/s); CPU µs/op: server process, all threads, per request`);
    for (const cl of clients) await cl.close();
  } finally {
    ceiling?.kill('SIGTERM');
    if (oyster) await oyster.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
