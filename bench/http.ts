// npm run bench:http -- [--keys=100000] [--gets=100000] [--posts=100000] [--concurrency=64] [--rounds=4] [--client=undici|http] [--wrk-seconds=5] [--read-cache-mib=256] [--max-dirty-mib=N] [--small-only | --large-only]
//
// REST data API throughput and latency of a real oysterd (one node, one
// disk, spawned on a temporary configuration as the tests do) against the
// ceiling of its HTTP stack: a minimal Koa + @koa/router server with the
// same route shapes giving the same answers (ETag and Last-Modified
// included) from an in-memory Map (bench/http-ceiling.ts), measured in the
// same run by the same client. Both servers get `--keys`
// values of 1 KiB first; then GETs of random loaded keys and POSTs (1 KiB
// overwrites of random keys) with `--concurrency` keep-alive connections.
// Rounds alternate between the servers; the best round of each counts.
// oysterd runs with read_cache_size `--read-cache-mib` (256 MiB: its read
// cache holds the loaded values, as the ceiling's Map does; 0 measures every
// read through the engine). `--max-dirty-mib` sets its
// max_dirty_bytes_before_sync (else the default): how much a value may run
// ahead of its syncs, which a large upload waits for (bench/http-large.ts).
// The client is undici's Pool when it can be loaded (it is cheaper per
// request than node:http, which matters on a small machine), else node:http.
//
// Then the same from outside Node: wrk (Debian's package; skipped with a
// note where it is missing), `--wrk-seconds` per round, 64 connections, one
// wrk thread, GETs of random loaded keys and POSTs of 1 KiB to random keys,
// rounds alternating between the servers — oysterd, the ceiling, and the
// bare ceiling (no validators: what the ceiling was before the API gave
// every value an ETag and a Last-Modified); each round's ratio counts, and
// the medians are printed with the server CPU per request (after one
// unmeasured round each).
//
// Then large values against nginx where it is installed (bench/http-large.ts).
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { OysterProcess, startNode, writeCluster } from '../test/helpers/oysterd';
import { largeValues } from './http-large';
import { arg, benchDir, cpuSeconds, fmt, machine, median, Phase, restClient, runWrk, Send, sequence, table, timedWindow, WrkRun } from './lib';

const KEYS = arg('keys', 100_000);
const GETS = arg('gets', 100_000);
const POSTS = arg('posts', 100_000);
const CONCURRENCY = arg('concurrency', 64);
const ROUNDS = arg('rounds', 4);
const CLIENT = process.argv.find((a) => a.startsWith('--client='))?.slice(9) ?? 'undici';
const WRK_SECONDS = arg('wrk-seconds', 5);
const READ_CACHE_MIB = arg('read-cache-mib', 256);
const MAX_DIRTY_MIB = arg('max-dirty-mib', 0);
const LARGE = { rounds: ROUNDS, wrkSeconds: WRK_SECONDS, connections: CONCURRENCY, maxDirty: MAX_DIRTY_MIB > 0 ? `${MAX_DIRTY_MIB} MiB` : 'the default' };
const VALUE = 1024;
// --small-only: leave out the large values against nginx.
const ONLY_SMALL = process.argv.includes('--small-only');
// --large-only: only the large values against nginx.
const ONLY_LARGE = process.argv.includes('--large-only');

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

/** One wrk run of WRK_SECONDS against `url` with `script`; the server's CPU per request. */
const wrk = (url: string, pid: number, script: string): WrkRun => runWrk({ url, pids: [pid], script, seconds: WRK_SECONDS, connections: CONCURRENCY });

/** GET and POST with wrk, rounds alternating between oysterd and the ceiling. */
function wrkRounds(dir: string, targets: Array<{ url: string; pid: number }>): void {
  if (spawnSync('wrk', ['--version']).error) {
    console.log('\nwrk: not installed (Debian: apt-get install wrk); the measurement from outside Node is skipped');
    return;
  }
  const scripts = {
    GET: path.join(dir, 'get.lua'),
    POST: path.join(dir, 'post.lua'),
  };
  fs.writeFileSync(scripts.GET, `request = function() return wrk.format("GET", "/data/" .. math.random(0, ${KEYS - 1})) end\n`);
  fs.writeFileSync(
    scripts.POST,
    `local body = string.rep("w", ${VALUE})\n` +
      `request = function() return wrk.format("POST", "/data/" .. math.random(0, ${KEYS - 1}), {["Content-Type"] = "application/octet-stream"}, body) end\n`,
  );
  const rows: Array<Record<string, string>> = [];
  for (const what of ['GET', 'POST'] as const) {
    // One round each unmeasured: the servers' JIT and caches warm up as a
    // long-running node's are (oysterd keeps the records it reads).
    for (const t of targets) wrk(t.url, t.pid, scripts[what]);
    const runs = targets.map(() => [] as WrkRun[]);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, t] of targets.entries()) runs[i].push(wrk(t.url, t.pid, scripts[what]));
    }
    const ratios = runs[0].map((o, r) => o.rps / runs[1][r].rps);
    const cpuRatios = runs[0].map((o, r) => o.cpuUs / runs[1][r].cpuUs);
    const bareRatios = runs[0].map((o, r) => o.rps / runs[2][r].rps);
    const bareCpuRatios = runs[0].map((o, r) => o.cpuUs / runs[2][r].cpuUs);
    const o = { rps: median(runs[0].map((x) => x.rps)), cpu: median(runs[0].map((x) => x.cpuUs)), p99: median(runs[0].map((x) => x.p99Ms)) };
    const c = { rps: median(runs[1].map((x) => x.rps)), cpu: median(runs[1].map((x) => x.cpuUs)), p99: median(runs[1].map((x) => x.p99Ms)) };
    rows.push({
      operation: `${what} 1 KiB (wrk)`,
      'oysterd ops/s': fmt(o.rps),
      'oysterd CPU µs/op': fmt(o.cpu),
      'oysterd p99 ms': fmt(o.p99, 2),
      'ceiling ops/s': fmt(c.rps),
      'ceiling CPU µs/op': fmt(c.cpu),
      'ceiling p99 ms': fmt(c.p99, 2),
      'oysterd / ceiling ops/s, per round': ratios.map((x) => `${fmt(x, 2)}×`).join(' '),
      'median': `${fmt(median(ratios), 2)}×`,
      'CPU/op oysterd / ceiling, per round': cpuRatios.map((x) => `${fmt(x, 2)}×`).join(' '),
      'CPU median': `${fmt(median(cpuRatios), 2)}×`,
      'vs bare ceiling: ops/s, CPU (medians)': `${fmt(median(bareRatios), 2)}×, ${fmt(median(bareCpuRatios), 2)}×`,
    });
  }
  console.log(`\nwrk ${spawnSync('wrk', ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0].split(' ').slice(0, 2).join(' ')}: 1 thread, ${CONCURRENCY} connections, ${WRK_SECONDS} s per round, ${ROUNDS} rounds alternating (medians)\n`);
  console.log(table(rows));
  console.log('\ntargets (wrk): GET at least 0.9× the ceiling\'s throughput at most 1.3× its CPU per request');
}

function startCeiling(...args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [path.join(__dirname, 'http-ceiling.js'), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`ceiling server exited ${code}`)));
    child.stdout!.once('data', (d: Buffer) => resolve({ child, url: `http://127.0.0.1:${Number(d.toString().trim())}` }));
  });
}

async function main(): Promise<void> {
  const dir = benchDir('http');
  let oyster: OysterProcess | null = null;
  let ceiling: ChildProcess | null = null;
  let bare: ChildProcess | null = null;
  try {
    const files = await writeCluster(
      dir,
      { nodes: [{ name: 'bench' }], vdisks: 4 },
      {
        extra: { read_cache_size: `${READ_CACHE_MIB} MiB` },
        ...(MAX_DIRTY_MIB > 0 ? { pearl: { max_dirty_bytes_before_sync: `${MAX_DIRTY_MIB} MiB` } } : {}),
      },
    );
    oyster = await startNode(files, 'bench');
    const c = await startCeiling();
    ceiling = c.child;
    const targets = [
      { url: oyster.url, pid: oyster.child.pid! },
      { url: c.url, pid: c.child.pid! },
    ];
    console.log(`# REST data API benchmark\n\n${machine()}`);
    if (ONLY_LARGE) {
      await largeValues(dir, targets[0], LARGE);
      return;
    }
    const clients = targets.map((t) => ({ ...restClient(t.url, CONCURRENCY, CLIENT === 'undici'), pid: t.pid }));
    const clientName = clients[0].name;
    console.log(
      `client: ${clientName} in one process, ${CONCURRENCY} keep-alive connections; ${fmt(KEYS)} keys of ${VALUE} B loaded, then ` +
        `${fmt(GETS)} GETs and ${fmt(POSTS)} POSTs per round, ${ROUNDS} round(s), best round counts; oysterd: 1 node, 1 disk, 4 vdisks, read_cache_size ${READ_CACHE_MIB} MiB, else defaults\n`,
    );

    const loads: ServerPhase[] = [];
    for (const cl of clients) loads.push(await load(cl.pid, cl.send));
    // The bare ceiling takes part in the wrk rounds only.
    const b = await startCeiling('--bare');
    bare = b.child;
    const bareClient = restClient(b.url, CONCURRENCY, CLIENT === 'undici');
    await load(b.child.pid!, bareClient.send);
    await bareClient.close();
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
    wrkRounds(dir, [...targets, { url: b.url, pid: b.child.pid! }]);
    if (!ONLY_SMALL) await largeValues(dir, targets[0], LARGE);
  } finally {
    ceiling?.kill('SIGTERM');
    bare?.kill('SIGTERM');
    if (oyster) await oyster.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
